"""A run directory is never lost or silently wrong: resume only onto the run's own states, best/last/state
committed as one step (a kill between any two writes resumes bit for bit), no silent replacement, safe files."""

import json
import os
import shutil
import stat
import warnings

import pytest
import yaml
from helpers import write_pendulum_csv
from test_reliability import config_dict, write_pendulum

import lagnet.run.files as run_files
from lagnet.cli import main
from lagnet.compilation_cache import unsafe_cache_dir, use_compilation_cache
from lagnet.config import validate
from lagnet.run import atomic_write, load_run
from lagnet.run.files import json_ready
from lagnet.run.training import train_run

EPOCHS = 3


class Killed(BaseException):
    """A kill -9 stand-in: not an Exception, so nothing on its way up handles it."""


def config(data, **training):
    # A learning rate at which the last of the three epochs improves on the others.
    training = {
        "epochs": EPOCHS,
        "batch_size": 16,
        "keep_checkpoints": 1,
        "learning_rate": 3.0e-3,
        **training,
    }
    return validate(config_dict(data, **training))


def files(run):
    return {
        name: (run / "checkpoints" / name).read_bytes()
        for name in sorted(os.listdir(run / "checkpoints"))
        if not name.startswith(".")
    }


def orphans(run):
    return [n for d in (run, run / "checkpoints") for n in os.listdir(d) if n.startswith(".tmp-")]


def epochs_of(run):
    return [json.loads(x)["epoch"] for x in (run / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_pendulum(tmp_path_factory.mktemp("data") / "p.csv", steps=200)


@pytest.fixture(scope="module")
def counted(data, tmp_path_factory):
    """An uninterrupted run whose last epoch improves (so it writes best.eqx), and its number of atomic writes."""
    run = tmp_path_factory.mktemp("ref") / "run"
    with pytest.MonkeyPatch.context() as mp:
        count = kill_at(mp, 0)
        train_run(config(data), str(run), progress=False)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["best_epoch"] == EPOCHS - 1
    return run, count[0]


@pytest.fixture
def reference(counted):
    return counted[0]


def kill_at(monkeypatch, k):
    """Make the k-th atomic write of the run (1-based) die half way: its temporary file stays, as after kill -9."""
    real, count = run_files.atomic_write, [0]

    def write(path, content):
        count[0] += 1
        if count[0] == k:
            with open(os.path.join(os.path.dirname(path), ".tmp-killed"), "wb") as f:
                f.write(b"half")
            raise Killed(path)
        real(path, content)

    monkeypatch.setattr(run_files, "atomic_write", write)
    return count


@pytest.mark.attack("run folder", "loss")
def test_kill_between_any_two_writes_of_a_checkpoint_step_resumes_bit_for_bit(
    data, counted, tmp_path, monkeypatch
):
    reference, total = counted
    # The writes of the last epoch's checkpoint step (training state, manifest, last.eqx, best.eqx), and
    # summary.json after it: a kill before each.
    for k in range(total - 4, total + 1):
        run = tmp_path / f"cut{k}"
        kill_at(monkeypatch, k)
        with pytest.raises(Killed):
            train_run(config(data), str(run), progress=False)
        monkeypatch.undo()
        assert orphans(run) == [".tmp-killed"]
        train_run(config(data), str(run), progress=False, resume=True)
        assert files(run) == files(reference), f"killed before write {k}"
        assert orphans(run) == []
        summary, ref = (json.loads((r / "summary.json").read_text()) for r in (run, reference))
        assert summary["best_epoch"] == ref["best_epoch"] and summary["epochs_run"] == EPOCHS
        assert epochs_of(run) == list(range(-1, EPOCHS))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            load_run(str(run))


def test_a_run_stopped_within_an_epoch_resumes_bit_for_bit(data, reference, tmp_path):
    """`training.max_steps` stops a run one step into its second epoch (its state saved there, the epoch's
    record marked partial); `--resume` with the budget lifted ends where the run never stopped did."""
    steps = json.loads((reference / "summary.json").read_text())["steps_run"]
    run = tmp_path / "run"
    train_run(config(data, max_steps=steps // EPOCHS + 1), str(run), progress=False)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["stop_reason"] == "max_steps" and summary["steps_run"] == steps // EPOCHS + 1
    assert json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])["partial"]
    train_run(config(data), str(run), progress=False, resume=True)
    last = "last.eqx"
    assert files(run)[last] == files(reference)[last]
    assert epochs_of(run) == epochs_of(reference)


def test_a_state_saved_without_its_step_within_the_epoch_still_resumes(data, reference, tmp_path):
    """Training states written before they recorded the step within an epoch (their last leaf, `step`,
    missing) resume as the end of their epoch: bit for bit as before."""
    import numpy as np

    run = tmp_path / "run"
    train_run(config(data, epochs=EPOCHS - 1), str(run), progress=False)
    (state_file,) = [n for n in files(run) if n.startswith("state-")]
    path = run / "checkpoints" / state_file
    with open(path, "rb") as f:  # one .npy record per leaf: cut off the last
        starts = []
        while True:
            at = f.tell()
            try:
                np.load(f, allow_pickle=False)
            except (EOFError, ValueError):
                break
            starts.append(at)
    path.write_bytes(path.read_bytes()[: starts[-1]])
    train_run(config(data), str(run), progress=False, resume=True)
    assert files(run)["last.eqx"] == files(reference)["last.eqx"]


@pytest.mark.attack("run folder", "silent")
def test_stale_best_model_is_flagged_until_resume_rewrites_it(data, reference, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(reference, run)
    best = run / "checkpoints" / "best.eqx"
    other = bytearray(best.read_bytes())
    other[-1] ^= 1  # another model of the same shapes: it loads, but is not the committed one
    best.write_bytes(bytes(other))
    with pytest.raises(
        ValueError, match=r"best.eqx is not the model of the run's final training state"
    ):
        load_run(str(run))
    os.unlink(run / "summary.json")  # as if killed before the end: a warning, the model still loads
    with pytest.warns(
        UserWarning, match=r"best.eqx lags behind the run's newest training state \(epoch 2\)"
    ):
        load_run(str(run))
    train_run(config(data), str(run), progress=False, resume=True)
    assert files(run) == files(reference)


@pytest.mark.attack("run folder", "loss")
@pytest.mark.parametrize(
    "change, message",
    [
        ({"seed": 7}, r"seed: 3 in the run, 7 now"),
        (
            {"training": {"learning_rate": 0.1}},
            r"training.learning_rate: 0.003 in the run, 0.1 now",
        ),
        ({"system": {"params": {"mass": 2.0}}}, r"system.params.mass: .* in the run, 2.0 now"),
        (
            {"integrator": {"name": "leapfrog"}},
            r"integrator.name: 'rk4' in the run, 'leapfrog' now",
        ),
    ],
)
def test_resume_refuses_the_states_of_another_run(data, reference, tmp_path, change, message):
    """Changes that keep the weights' shapes: the checkpoints' own identity, not config.yaml, decides."""
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    for name in ("run.json", "metrics.jsonl"):
        (run / name).write_bytes((reference / name).read_bytes())
    for name, content in files(reference).items():
        (run / "checkpoints" / name).write_bytes(content)
    new = config(data).replace(**change)
    # A killed retrain wrote its config.yaml over the run's: the check must not read it.
    (run / "config.yaml").write_text(yaml.safe_dump(json_ready(new.to_dict())))
    with pytest.raises(ValueError, match=r"cannot resume .* with a different config: " + message):
        train_run(new, str(run), progress=False, resume=True)
    assert files(run) == files(reference)


@pytest.mark.attack("run folder", "loss")
def test_resume_refuses_other_data_in_the_same_file(tmp_path):
    data = write_pendulum(tmp_path / "p.csv", steps=200)
    train_run(config(data, epochs=1), str(tmp_path / "run"), progress=False)
    write_pendulum_csv(data, steps=200, hold=20, scale=1.0, substeps=1, seed=1)  # other recordings
    with pytest.raises(
        ValueError, match=r"different config: data_sha256.train: \['\w{16}'\] in the run"
    ):
        train_run(config(data), str(tmp_path / "run"), progress=False, resume=True)


@pytest.mark.attack("run folder", "loss")
def test_retrain_never_replaces_a_run_silently_nor_destroys_it_when_failing(
    data, reference, tmp_path
):
    run = tmp_path / "run"
    shutil.copytree(reference, run)
    (run / "evaluation").mkdir()
    (run / "evaluation" / "metrics.json").write_text("{}")
    before = {n: (run / n).read_bytes() for n in ("config.yaml", "run.json", "summary.json")}
    with pytest.raises(ValueError, match=r"already holds a run .* pass --overwrite to replace it"):
        train_run(config(data, learning_rate=0.1), str(run), progress=False)
    # A retrain that fails on its data (here a missing file) leaves the run as it was, even with overwrite.
    missing = config(str(tmp_path / "nowhere.csv"))
    with pytest.raises(FileNotFoundError):
        train_run(missing, str(run), progress=False, overwrite=True)
    assert {n: (run / n).read_bytes() for n in before} == before
    assert files(run) == files(reference) and (run / "evaluation" / "metrics.json").exists()
    load_run(str(run))
    # With overwrite, the old run's files go, evaluation/ included.
    train_run(config(data, learning_rate=0.01), str(run), progress=False, overwrite=True)
    assert not (run / "evaluation").exists() and files(run) != files(reference)
    (run / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"holds files that lagnet did not write \(notes.txt\)"):
        train_run(config(data), str(run), progress=False, overwrite=True)


@pytest.mark.attack("run folder", "loss")
def test_resume_survives_a_torn_metrics_line_and_cleans_orphans(
    data, reference, tmp_path, monkeypatch
):
    run = tmp_path / "run"
    kill_at(monkeypatch, 3 + 4 * 2 + 1)  # before the third epoch's training state
    with pytest.raises(Killed):
        train_run(config(data), str(run), progress=False)
    monkeypatch.undo()
    with open(run / "metrics.jsonl", "a") as f:
        f.write('{"epoch": 2, "train_lo')
    (run / ".tmp-orphanconfig.yaml").write_text("half")
    with pytest.warns(UserWarning, match=r"metrics.jsonl: dropped 1 unreadable line"):
        train_run(config(data), str(run), progress=False, resume=True)
    assert epochs_of(run) == list(range(-1, EPOCHS)) and files(run) == files(reference)
    assert orphans(run) == []


@pytest.mark.attack("run folder", "loss")
def test_a_damaged_manifest_is_an_error_not_a_fresh_start(data, reference, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(reference, run)
    (run / "checkpoints" / "manifest.json").write_text('{"states": [{"fi')
    with pytest.raises(
        ValueError,
        match=r"manifest.json is damaged .*state files: state-000002.eqx\); retrain with --overwrite",
    ):
        train_run(config(data), str(run), progress=False, resume=True)
    with pytest.warns(UserWarning, match=r"manifest.json is damaged"):
        load_run(str(run))


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_atomic_writes_respect_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        atomic_write(str(tmp_path / "new"), lambda f: f.write(b"x"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o666 & ~umask
    (tmp_path / "kept").write_text("x")
    os.chmod(tmp_path / "kept", 0o640)
    atomic_write(str(tmp_path / "kept"), lambda f: f.write(b"y"))
    assert stat.S_IMODE(os.stat(tmp_path / "kept").st_mode) == 0o640


@pytest.mark.attack("CLI", "loss")
def test_cli_run_directory_rules(data, tmp_path, monkeypatch, capsys):
    """A config's name may not place the run outside runs/; an existing run needs --overwrite."""
    monkeypatch.chdir(tmp_path)
    for name in ("../escape", "/tmp/abs", ".."):
        cfg = tmp_path / "c.yaml"
        cfg.write_text(yaml.safe_dump({**config_dict(data, epochs=1), "name": name}))
        assert main(["train", str(cfg), "--quiet"]) == 2
        assert "cannot name a run directory under runs/" in capsys.readouterr().err
    assert not (tmp_path.parent / "escape").exists() and not os.path.exists("/tmp/abs")
    cfg.write_text(yaml.safe_dump(config_dict(data, epochs=1)))
    assert main(["train", str(cfg), "--quiet"]) == 0
    assert main(["train", str(cfg), "--quiet"]) == 2
    assert "runs/reliability already holds a run" in capsys.readouterr().err
    assert main(["train", str(cfg), "--quiet", "--overwrite"]) == 0


@pytest.mark.attack("CLI", "loss")
def test_data_generate_does_not_overwrite_without_asking(tmp_path, capsys):
    assert main(["data", "generate", "pendulum_potential", "--out", str(tmp_path)]) == 0
    shipped = (tmp_path / "pendulum_potential_train.npz").read_bytes()
    args = ["data", "generate", "pendulum_potential", "--out", str(tmp_path), "--seed", "5"]
    assert main(args) == 2
    assert "already exist(s): pass --overwrite" in capsys.readouterr().err
    assert (tmp_path / "pendulum_potential_train.npz").read_bytes() == shipped
    assert main([*args, "--overwrite"]) == 0
    assert (tmp_path / "pendulum_potential_train.npz").read_bytes() != shipped
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".tmp-")]


def test_compilation_cache_refuses_a_folder_others_can_write(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.warns(
        UserWarning, match=r"compilation cache not used: .* writable by group or others"
    ):
        assert use_compilation_cache(str(shared)) is None
    private = tmp_path / "new" / "xla"
    assert unsafe_cache_dir(str(private)) is None
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o700
    if os.getuid() == 0:
        os.chown(private, 12345, -1)
        assert "owned by another user" in unsafe_cache_dir(str(private))
    (tmp_path / "file").write_text("x")
    assert unsafe_cache_dir(str(tmp_path / "file")) is not None


def test_a_resume_may_change_what_does_not_change_training(tmp_path):
    """The evaluation and control sections never change the checkpoints: a resume accepts new values there, also
    from a run whose recorded identity still held them."""
    data = write_pendulum(tmp_path / "p.csv", steps=200)
    run = tmp_path / "run"
    train_run(config(data, epochs=1), str(run), progress=False)
    manifest = run / "checkpoints" / "manifest.json"
    recorded = json.loads(manifest.read_text())
    assert "control" not in recorded["identity"] and "evaluation" not in recorded["identity"]
    # As a run written before the identity left them out recorded it, its states tagged by that identity.
    from lagnet.run.checkpoints import fingerprint

    recorded["identity"] |= {"control": {"starts": 6}, "evaluation": {"windows": 3}}
    for state in recorded["states"]:
        state["run"] = fingerprint(recorded["identity"])
    manifest.write_text(json.dumps(recorded))
    first = (run / "metrics.jsonl").read_text().splitlines()
    later = config(data, epochs=2).replace(control={"paced": True}, evaluation={"windows": 7})
    assert train_run(later, str(run), progress=False, resume=True).epochs == 2
    # Resumed from its state: the first epoch's record kept, one epoch added.
    epochs = (run / "metrics.jsonl").read_text().splitlines()
    assert epochs[: len(first)] == first and len(epochs) == len(first) + 1
