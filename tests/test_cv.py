"""`lagnet cv`: leave-one-run-out folds, their ratios to the physics as given, and the choice."""

import json
import os

import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from helpers import PENDULUM_MAPPING, model_section, write_pendulum_csv

from lagnet.config import load_config
from lagnet.cross_validation import fold_files, parse_folds
from lagnet.data.horizons import cut_windows, parse_horizon
from lagnet.evaluate.metrics import horizon_errors, window_errors
from lagnet.models import physics_prior
from lagnet.run import load_recordings, load_run


def _config(tmp, name, files, type="pinode", **model):
    path = tmp / f"{name}.yaml"
    config = {
        "name": name,
        "dtype": "float64",
        "system": {"name": "pendulum"},
        "model": model_section(type, network={"width": 4, "depth": 1}, **model),
        "data": {"train": files, "mapping": dict(PENDULUM_MAPPING)},
        "training": {"epochs": 5, "batch_size": 32, "horizon": 2, "learning_rate": 3e-3},
        "evaluation": {"windows": 20, "horizon": 5},
    }
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_fold_files_and_fold_selection(tmp_path):
    files = [str(tmp_path / f"r{i}.csv") for i in range(1, 4)]
    config = load_config(_config(tmp_path, "c", files))
    # Fold i validates on the next recording in order (wrapping), never on the held-out one.
    assert fold_files(config, 0) == ([files[2]], [files[1]])
    assert fold_files(config, 2) == ([files[1]], [files[0]])
    two = load_config(_config(tmp_path, "d", files[:2]))
    assert fold_files(two, 1) == ([files[0]], [])  # the config's own split of the one other run
    assert parse_folds("F1,3,r2.csv", files, "c.yaml") == [0, 2, 1]
    assert parse_folds(None, files, "c.yaml") == [0, 1, 2]
    with pytest.raises(ValueError, match=r"--folds: 'F9' is no fold of c.yaml \(F1..F3"):
        parse_folds("F9", files, "c.yaml")


def test_cv_trains_each_fold_and_chooses(tmp_path, capsys):
    from lagnet.cli import main

    files = [
        write_pendulum_csv(
            tmp_path / f"p{i}.csv", steps=120, hold=20, scale=1.0, seed=i, theta0=0.5 + 0.3 * i
        )
        for i in range(1, 4)
    ]
    pinode = _config(tmp_path, "pinode", files, type="pinode", zero_init=False)
    pure = _config(tmp_path, "pure", files, type="pure_ode", friction={"viscous": ["theta"]})
    out = tmp_path / "cv"
    args = ["cv", pinode, pure, "--folds", "F1,F3", "--epochs", "1", "--out", str(out), "--quiet"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    with open(out / "cv.json") as f:
        cv = json.load(f)
    # The least-squares refit of the first config's physics is trained per fold as the fair reference.
    assert cv["horizon"] == "5 steps" and [c["name"] for c in cv["configs"]] == [
        "pinode",
        "pure",
        "least-squares refit",
    ]
    assert cv["command"] == f"lagnet cv {pinode} {pure} --folds F1,F3 --epochs 1 --out {out}"
    assert cv["date"] and cv["machine"]
    refit = cv["configs"][2]
    assert refit["is_reference"] and refit["type"] == "pure_ode"
    refit_run = load_run(str(out / refit["folder"] / "fold-1"))
    assert refit_run.config.model.identification.method == "least_squares"
    for c in cv["configs"][:2]:
        for f, r in zip(c["folds"], refit["folds"], strict=True):
            for k in ("model", "physics"):
                for n in ("theta", "theta_dot"):
                    assert c["vs_reference"]["folds"][str(f["fold"])][k][n] == pytest.approx(
                        f["errors"][k][n] / r["errors"]["model"][n], rel=1e-12
                    )
    for c in cv["configs"]:
        assert [f["fold"] for f in c["folds"]] == [1, 3]
        f1, f3 = c["folds"]
        assert (f1["held_out"], f1["train"], f1["validation"]) == (files[0], [files[2]], [files[1]])
        assert (f3["held_out"], f3["train"], f3["validation"]) == (files[2], [files[1]], [files[0]])
        assert os.path.exists(out / c["folder"] / "fold-1" / "checkpoints" / "best.eqx")
        assert not os.path.exists(out / c["folder"] / "fold-2")
        for f in c["folds"]:
            given = f["errors"]["given physics"]
            for k in ("model", "physics"):
                for n in ("theta", "theta_dot"):
                    assert f["ratios"][k][n] == pytest.approx(
                        f["errors"][k][n] / given[n], rel=1e-12
                    )
                assert f["mean_ratio"][k] == pytest.approx(np.mean(list(f["ratios"][k].values())))
        for k in ("model", "physics"):
            assert c["summary"][k]["mean"] == pytest.approx(
                np.mean([f["mean_ratio"][k] for f in c["folds"]])
            )
            assert c["summary"][k]["worst"] == max(
                r for f in c["folds"] for r in f["ratios"][k].values()
            )
    pin, pure_c, _ = cv["configs"]
    # One reference per held-out file: both configs are scored on the same windows against the same errors.
    for a, b in zip(pin["folds"], pure_c["folds"], strict=True):
        assert a["errors"]["given physics"] == b["errors"]["given physics"]
    # A pure ODE has no network: its model is its identified physics (a tie the simpler side wins).
    assert pure_c["folds"][0]["ratios"]["model"] == pure_c["folds"][0]["ratios"]["physics"]
    # The held-out errors of a fold's identified physics, recomputed from its run on the same windows.
    run = load_run(str(out / "pinode" / "fold-3"))
    test = load_recordings(run.config, run.model.system, [files[2]])
    cut = cut_windows(test, [parse_horizon(5)], count=20, seed=run.config.seed, dtype=jnp.float64)
    errs = window_errors(physics_prior(run.model), run.integrator, cut.windows, (True,))
    end = horizon_errors(errs, cut.ends[0])[1].mean(0)
    assert pin["folds"][1]["errors"]["physics"]["theta"] == pytest.approx(end[0], rel=1e-9)
    # The choice: the lowest worst ratio over folds and coordinates, then the lowest mean; among equals,
    # physics before network and fewer trained parameters.
    ranked = sorted(
        (
            c["summary"][k]["worst"],
            c["summary"][k]["mean"],
            k != "physics",
            c["trained_parameters"][k],
            c["name"],
            k,
        )
        for c in cv["configs"]
        for k in c["summary"]
    )
    assert (cv["choice"]["config"], cv["choice"]["prediction"]) == (ranked[0][4], ranked[0][5])
    assert not (cv["choice"]["config"] == "pure" and cv["choice"]["prediction"] == "model")
    assert "| 1 (p1.csv) | theta |" in printed and "| 3 (p3.csv) | theta_dot |" in printed
    assert "| mean over folds of the fold's mean |" in printed and "| worst |" in printed
    assert f"Choice: {cv['choice']['config']}, its " in printed
    assert (
        "/ those of the least-squares refit" in printed and "| mean over folds | theta |" in printed
    )
    assert f"wrote {out}/cv.json" in printed


def test_cv_scores_configs_of_other_input_histories_on_the_same_windows(tmp_path, capsys):
    from lagnet.cli import main

    files = [
        write_pendulum_csv(tmp_path / f"h{i}.csv", steps=80, hold=20, seed=i, theta0=0.4 * i)
        for i in (1, 2, 3)
    ]
    friction = {"viscous": ["theta"]}
    plain = _config(tmp_path, "plain", files, type="pure_ode", friction=friction)
    # The same physics reading a history of 3 past inputs: it uses only the newest, so it scores the same.
    history = _config(
        tmp_path, "history", files, type="pure_ode", friction=friction, input_history=3
    )
    out = tmp_path / "cv"
    args = ["cv", plain, history, "--folds", "F2", "--epochs", "1", "--out", str(out), "--quiet"]
    assert main(args) == 0
    capsys.readouterr()
    with open(out / "cv.json") as f:
        first, second, _ = json.load(f)["configs"]
    for k in ("model", "physics"):
        for n in ("theta", "theta_dot"):
            assert second["folds"][0]["errors"][k][n] == pytest.approx(
                first["folds"][0]["errors"][k][n], rel=1e-9
            )


def test_cv_needs_two_recordings(tmp_path, capsys):
    from lagnet.cli import main

    one = write_pendulum_csv(tmp_path / "p.csv", steps=60, hold=20)
    config = _config(tmp_path, "one", [one])
    assert main(["cv", config, "--out", str(tmp_path / "cv")]) == 2
    assert (
        "data.train names 1 recording(s); leave-one-run-out cross-validation needs at least 2"
        in (capsys.readouterr().err)
    )


# ------------------------------------------------------------------------- nothing written outside --out


def _named_config(tmp, stem, name, files, **training):
    path = tmp / f"{stem}.yaml"
    config = yaml.safe_load(open(_config(tmp, stem, files)))
    config["name"] = name
    config["training"].update(training)
    path.write_text(yaml.safe_dump(config))
    return str(path)


def _snapshot(folder) -> dict:
    """Every file under `folder` with its bytes and modification time: what "not touched" compares."""
    out = {}
    for root, dirs, names in os.walk(folder):
        for n in dirs + names:
            p = os.path.join(root, n)
            st = os.lstat(p)
            content = open(p, "rb").read() if os.path.isfile(p) else None
            out[os.path.relpath(p, folder)] = (st.st_mtime_ns, content)
    return out


@pytest.fixture
def recordings(tmp_path):
    return [
        write_pendulum_csv(tmp_path / f"p{i}.csv", steps=80, hold=20, seed=i, theta0=0.4 + 0.3 * i)
        for i in (1, 2)
    ]


@pytest.mark.attack("run folder", "loss")
def test_cv_folds_stay_under_out_whatever_the_config_names(tmp_path, recordings, capsys):
    from lagnet.cli import main
    from lagnet.cross_validation import folder_name

    # A finished run outside --out, which a name may try to reach.
    victim = tmp_path / "elsewhere" / "victim"
    victim.mkdir(parents=True)
    (victim / "config.yaml").write_text("name: victim\n")
    (victim / "summary.json").write_text("{}")
    names = [str(victim), "../x", "..", "CON", "a/../../b", "fold-1"]
    configs = [_named_config(tmp_path, f"c{k}", n, recordings) for k, n in enumerate(names)]
    before = _snapshot(tmp_path / "elsewhere")
    out = tmp_path / "out" / "cv"
    args = ["cv", *configs, "--folds", "F1", "--epochs", "1", "--out", str(out), "--quiet"]
    args += ["--reference", "none"]
    assert main(args) == 0, capsys.readouterr().err
    assert _snapshot(tmp_path / "elsewhere") == before
    assert sorted(os.listdir(tmp_path / "out")) == [
        "cv"
    ]  # nothing beside --out, nothing made above it
    with open(out / "cv.json") as f:
        cv = json.load(f)
    folders = [c["folder"] for c in cv["configs"]]
    assert folders[1:] == ["x", "config", "_CON", "a_b", "fold-1"]
    assert folders[0] == folder_name(str(victim)) and folders[0].endswith("elsewhere_victim")
    for c in cv["configs"]:
        run = out / c["folder"] / "fold-1"
        assert os.path.realpath(run).startswith(os.path.realpath(out) + os.sep)
        assert (run / "checkpoints" / "best.eqx").exists() and c["folds"][0]["run"] == str(run)
    for name in names:
        safe = folder_name(name)
        assert "/" not in safe and safe not in ("", ".", "..") and not safe.startswith(".")


@pytest.mark.attack("run folder", "loss")
@pytest.mark.parametrize(
    "name, folder",
    [
        ("/abs/path/run", "abs_path_run"),
        ("../x", "x"),
        ("..", "config"),
        ("", "config"),
        ("con.txt", "_con.txt"),
        ("LPT1", "_LPT1"),
        ("a b\\c", "a_b_c"),
        ("é" * 100, "config"),
        ("x" * 100, "x" * 64),
    ],
)
def test_folder_names_are_plain(name, folder):
    from lagnet.cross_validation import folder_name

    assert folder_name(name) == folder


@pytest.mark.attack("run folder", "loss")
def test_cv_refuses_a_symlink_out_of_out_and_replaces_no_run_without_overwrite(
    tmp_path, recordings, capsys
):
    from lagnet.cli import main

    outside = tmp_path / "outside"
    (outside / "fold-1").mkdir(parents=True)
    (outside / "fold-1" / "config.yaml").write_text("name: mine\n")
    before = _snapshot(outside)
    out = tmp_path / "cv"
    out.mkdir()
    os.symlink(outside, out / "linked")
    linked = _named_config(tmp_path, "linked", "linked", recordings)
    args = ["--folds", "F1", "--epochs", "1", "--out", str(out), "--quiet"]
    assert main(["cv", linked, *args]) == 2
    assert "outside --out" in capsys.readouterr().err
    assert _snapshot(outside) == before

    # An existing fold folder is resumed when it holds this fold, refused when it holds another run.
    config = _named_config(tmp_path, "c", "c", recordings)
    assert main(["cv", config, *args]) == 0
    fold = out / "c" / "fold-1"
    trained = _snapshot(fold)
    assert main(["cv", config, *args]) == 0  # the same fold: reused (resumed, nothing retrained)
    resumed = _snapshot(fold)
    checkpoints = {k: v[1] for k, v in trained.items() if k.startswith("checkpoints")}
    assert {k: v[1] for k, v in resumed.items() if k.startswith("checkpoints")} == checkpoints
    # Another config of the same name (another learning rate): its fold folder holds another run.
    other = _named_config(tmp_path, "c2", "c", recordings, learning_rate=1e-2)
    capsys.readouterr()
    assert main(["cv", other, *args]) == 2
    err = capsys.readouterr().err
    assert f"{fold} holds" in err and "not this fold of 'c'" in err and "--overwrite" in err
    assert _snapshot(fold) == resumed
    assert main(["cv", other, *args, "--overwrite"]) == 0
    assert yaml.safe_load(open(fold / "config.yaml"))["training"]["learning_rate"] == 1e-2


def test_short_names_keep_what_tells_recordings_apart():
    from lagnet.cross_validation import short_names

    long = [f"/d/sys_id_20220815_trajectory_{i:02d}.csv.gz" for i in (0, 2, 11)]
    assert list(short_names(long).values()) == ["00", "02", "11"]
    assert list(short_names(["/d/p1.csv", "/e/p2.csv"]).values()) == ["p1.csv", "p2.csv"]
    # One name inside another: stripping would leave an empty name, so the file names stay whole.
    same = ["/d/recording_of_the_day.csv", "/d/recording_of_the_day_2.csv"]
    assert list(short_names(same).values()) == [
        "recording_of_the_day.csv",
        "recording_of_the_day_2.csv",
    ]


@pytest.mark.attack("CLI", "unclear")
def test_cv_takes_set_names_validation_and_claims_no_identification_for_a_known_model(
    tmp_path, capsys
):
    from lagnet.cli import main

    files = [
        write_pendulum_csv(
            tmp_path / f"pendulum_bench_day_one_run_{i}.csv",
            steps=80,
            hold=20,
            seed=i,
            theta0=0.5 * i,
        )
        for i in (1, 2, 3)
    ]
    known = _config(tmp_path, "known", files, type="known")
    out = tmp_path / "cv"
    args = ["cv", known, "--folds", "F1", "--set", "training.learning_rate=0.01", "--out", str(out)]
    assert main(args) == 0
    captured = capsys.readouterr()
    # The known model's own table claims no identification (the refit's table, its reference, is a fit).
    own_table = captured.out.split("least-squares refit (")[0]
    assert (
        "held out pendulum_bench_day_one_run_1.csv, validated on pendulum_bench_day_one_run_2.csv"
        in (captured.err)
    )
    assert "| 1 (1) | theta |" in own_table  # the recording's name without what all share
    assert "| trained model | physics |" in own_table and "identified physics" not in own_table
    with open(out / "cv.json") as f:
        cv = json.load(f)
    assert "--set training.learning_rate=0.01" in cv["command"]
    run = out / "known" / "fold-1"
    assert yaml.safe_load(open(run / "config.yaml"))["training"]["learning_rate"] == 0.01
    with open(run / "summary.json") as f:
        assert json.load(f)["validation_recordings"] == [files[1]]


def test_cv_varies_one_config_and_writes_the_choice_to_train(tmp_path, capsys):
    from lagnet.cli import main
    from lagnet.config import ConfigError
    from lagnet.cross_validation import vary_entries

    files = [
        write_pendulum_csv(tmp_path / f"v{i}.csv", steps=80, hold=20, seed=i, theta0=0.4 * i)
        for i in (1, 2, 3)
    ]
    rig = _config(
        tmp_path,
        "rig",
        files,
        type="pure_ode",
        friction={"viscous": ["theta"]},
        learn_parameters=["g"],
    )
    out = tmp_path / "cv"
    args = ["cv", rig, "--vary", "model.type=known,pure_ode", "--folds", "F2", "--epochs", "1"]
    assert main([*args, "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    with open(out / "cv.json") as f:
        cv = json.load(f)
    names = [c["name"] for c in cv["configs"]]
    assert names == ["rig-known", "rig-pure_ode", "least-squares refit"]
    assert cv["configs"][0]["type"] == "known" and cv["configs"][1]["type"] == "pure_ode"
    assert "--vary model.type=known,pure_ode" in cv["command"]
    # The reference is the refit of the variant that identifies parameters (not of the known one, listed first).
    refit = load_run(str(out / cv["configs"][2]["folder"] / "fold-2"))
    assert refit.config.model.learn_parameters
    # chosen.yaml is the chosen candidate's config, trainable as it is, and says what was chosen.
    chosen_path = out / "chosen.yaml"
    text = chosen_path.read_text()
    assert text.startswith(f"# lagnet cv chose {cv['choice']['config']}")
    chosen = load_config(chosen_path)
    entry = next(c for c in cv["configs"] if c["name"] == cv["choice"]["config"])
    assert chosen.model.type == entry["type"]  # no network here: the choice's own type
    assert list(chosen.data.train) == files
    assert f"lagnet train {chosen_path}" in printed
    with pytest.raises(ConfigError, match="--vary 'model.type': expected KEY.PATH=VALUE1,VALUE2"):
        vary_entries([rig], ["model.type"])


def test_cv_scores_windows_at_a_stride_and_takes_variants_of_a_config(tmp_path, recordings):
    """`stride`: every held-out window from a fixed grid of starts (what a test script scores), not random
    ones; a (file, overrides) pair: a variant of the file, trained and recorded under its own name."""
    from lagnet.cli import build_parser
    from lagnet.commands.cv import _command
    from lagnet.cross_validation import cross_validate

    config = _config(tmp_path, "c", recordings)
    variant = (config, ["name=c_fast", "training.learning_rate=0.01"])
    out = tmp_path / "cv"
    report = cross_validate(
        [config, variant], str(out), folds="F1", epochs=1, stride="7", reference_config="none"
    )
    assert [c["name"] for c in report["configs"]] == ["c", "c_fast"]
    assert "overrides" not in report["configs"][0]
    assert report["configs"][1]["overrides"] == variant[1]
    assert report["configs"][1]["config"] == config
    fast = load_run(str(out / "c_fast" / "fold-1"))
    assert fast.config.training.learning_rate == 0.01 and fast.config.name == "c_fast"
    assert report["windows"] == "every 7 steps of the held-out recording"
    test = load_recordings(fast.config, fast.model.system, [recordings[0]])
    cut = cut_windows(test, [parse_horizon(5)], stride=parse_horizon(7), dtype=jnp.float64)
    # Starts 0, 7, 14, … of the 80-row recording that leave 5 steps: 11 windows, both configs on them.
    assert len(cut.sources) == 11
    assert [c["folds"][0]["windows"] for c in report["configs"]] == [11, 11]
    args = build_parser().parse_args(["cv", config, "--stride", "0.2s", "--out", "o"])
    assert _command(args) == f"lagnet cv {config} --stride 0.2s --out o"
