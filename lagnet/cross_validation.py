"""Leave-one-run-out cross-validation of configs, and the choice among them (what `lagnet cv` runs).

For a config whose `data.train` names the recordings F1..Fk, fold i trains on the others and is scored on Fi, which
neither training, early stopping nor checkpoint selection sees. Scores are end-of-window errors per state variable,
divided by those of the physics as given (the first config's model before training, its network removed), so that
coordinates of different units average fairly and 1 means "no better than the prior the user wrote down"; and,
beside them, by those of a reference config trained on the same fold (by default the least-squares refit of the
first config's physics), so that every ratio can be read against a baseline that saw the same data.
"""

import itertools
import os
import platform
import re
import sys
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

# Two candidates whose scores differ by less than this (relative) tie; the simpler is chosen.
TIE = 1e-9


REFIT = "least-squares refit"


def least_squares_refit(config):
    """The classical reference for `config`'s physics: the same system, friction and learned parameters, no
    network, fitted by the equation-error least squares on the training and validation recordings, nothing
    trained; None for a config without physics or one whose model reads past inputs."""
    if config.model.type in ("blackbox", "potential") or config.model.setting("input_history"):
        return None
    return config.replace(
        {
            "name": f"{config.name}_{REFIT.replace(' ', '_').replace('-', '_')}",
            "model": {
                "type": "pure_ode",
                "identification": {"method": "least_squares", "data": "all", "accept": "loss"},
            },
            "training": {"epochs": 0},
        }
    )


def parse_folds(text: str | None, files: list[str], where: str) -> list[int]:
    """Fold indices (0-based) from 'F1,F3', '1,3' or file names; all folds when `text` is None."""
    if text is None:
        return list(range(len(files)))
    names = [os.path.basename(f) for f in files]
    out = []
    for item in (t.strip() for t in text.split(",") if t.strip()):
        digits = item[1:] if item[:1] in "Ff" and item[1:].isdigit() else item
        if digits.isdigit() and 1 <= int(digits) <= len(files):
            index = int(digits) - 1
        elif item in names or item in files:
            index = names.index(item) if item in names else files.index(item)
        else:
            raise ValueError(
                f"--folds: {item!r} is no fold of {where} (F1..F{len(files)}, or one of {names})"
            )
        if index not in out:
            out.append(index)
    if not out:
        raise ValueError("--folds names no fold")
    return out


def fold_files(config, i: int) -> tuple[list[str], list[str]]:
    """Fold i's training and validation files: the config's `data.validation` when given; otherwise the next
    recording after Fi (in order, wrapping) is held out whole for validation, and with only one other recording
    the config's own split of it (`data.validation_fraction`)."""
    files = list(config.data.train)
    others = files[:i] + files[i + 1 :]
    if config.data.validation:
        return others, list(config.data.validation)
    if len(others) == 1:
        return others, []
    validation = files[(i + 1) % len(files)]
    return [f for f in others if f != validation], [validation]


def _trained_size(model) -> int:
    params = eqx.filter(model, model.trainable())
    return int(sum(x.size for x in jax.tree_util.tree_leaves(params)))


def _ratios(errors: dict, reference: dict) -> dict:
    with np.errstate(divide="ignore", invalid="ignore"):
        return {n: float(np.float64(errors[n]) / reference[n]) for n in errors}


def _mean(values) -> float:
    v = np.asarray(list(values), float)
    return float(v.mean()) if np.all(np.isfinite(v)) else float("inf")


def _worst(values) -> float:
    v = np.asarray(list(values), float)
    return float(v.max()) if np.all(np.isfinite(v)) else float("inf")


class _Reference:
    """Per held-out file: the test windows and the error of the physics as given on them, computed once, from
    the first config that holds out that file (so every config is scored on the same windows and scale).
    Windows start every `stride` (a `Horizon`: rows or seconds) of the file, or without one at
    `evaluation.windows` random starts (seeded by the config's seed). A config with another
    `model.input_history` gets the same windows (chosen by time alone) with its inputs extended by its own
    history."""

    def __init__(self, horizon, stride=None):
        self.horizon = horizon
        self.stride = stride
        self.by_file: dict[str, tuple] = {}
        self.cuts: dict[tuple[str, int], object] = {}

    def get(self, config, fold_config, held_out: str):
        from .data.horizons import cut_windows
        from .evaluate.run import baseline, end_errors
        from .run.build import build_integrator, build_model, build_system
        from .run.load import as_dtype
        from .run.recordings import load_recordings, sample_statistics
        from .run.training import load_training_data

        if held_out not in self.by_file:
            dtype = jnp.dtype(fold_config.dtype)
            system = build_system(fold_config)
            train, _ = load_training_data(fold_config, system)
            stats = sample_statistics(train, window=fold_config.data.derivative_window)
            # The model before training, as `lagnet train` builds it (friction fitted to this fold's data).
            given = build_model(fold_config, system, stats, key=jax.random.key(fold_config.seed))
            label, physics = baseline(
                as_dtype(given, dtype), fold_config.model.setting("input_history")
            )
            test = load_recordings(fold_config, system, [held_out])
            choice = (
                {"stride": self.stride}
                if self.stride is not None
                else {"count": config.evaluation.windows, "seed": config.seed}
            ) | {"dtype": dtype}
            cut = cut_windows(test, [self.horizon], **choice)
            errors = end_errors({"given": physics}, build_integrator(fold_config), cut)["given"]
            described = f"{label} of {config.name}, before training"
            self.by_file[held_out] = (cut, errors, described, choice)
            self.cuts[(held_out, fold_config.model.setting("input_history"))] = cut
        first, errors, described, choice = self.by_file[held_out]
        key = (held_out, fold_config.model.setting("input_history"))
        if key not in self.cuts:
            test = load_recordings(fold_config, build_system(fold_config), [held_out])
            cut = cut_windows(test, [self.horizon], **choice)
            if cut.sources != first.sources:
                raise ValueError(
                    f"{held_out}: the windows of {config.name!r}, with model.input_history "
                    f"{fold_config.model.setting('input_history')}, are not those of the first config that holds it out"
                )
            self.cuts[key] = cut
        return self.cuts[key], errors, described


# Names Windows keeps for devices, in any case and with any extension: never a folder of a fold.
_RESERVED = {"con", "prn", "aux", "nul"} | {f"{d}{i}" for d in ("com", "lpt") for i in range(10)}


def folder_name(name: str) -> str:
    """A config's name as the folder lagnet chooses for its folds: letters, digits, `_`, `-` and single dots only
    (every other run of characters, and `..`, one `_`), no leading or trailing dot, its last 64 characters, never
    a device name; so neither an absolute path, `..` nor a separator in a name can lead outside `--out`."""
    safe = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_.-]|\.{2,}", "_", name))
    safe = safe.strip("._-")[-64:].strip("._-") or "config"
    if safe.split(".")[0].lower() in _RESERVED:
        safe = "_" + safe
    return safe


def _folders(names: list[str]) -> list[str]:
    """Each config's folder under --out, distinct (`-2`, `-3`, … where two names make the same folder)."""
    out: list[str] = []
    for name in names:
        base = folder = folder_name(name)
        k = 1
        while folder.lower() in (f.lower() for f in out):
            k += 1
            folder = f"{base}-{k}"
        out.append(folder)
    return out


def fold_dir(out: str, folder: str, i: int) -> str:
    """OUT/FOLDER/fold-i, refused if it resolves outside OUT (a symlink in the way)."""
    path = os.path.join(out, folder, f"fold-{i + 1}")
    real_out, real = os.path.realpath(out), os.path.realpath(path)
    if os.path.commonpath([real_out, real]) != real_out:
        raise ValueError(
            f"{path} resolves to {real}, outside --out {out} (a symbolic link): lagnet cv writes only "
            "under --out; remove the link or give another --out"
        )
    return path


def _fold_target(run_dir: str, fold_config, overwrite: bool) -> dict:
    """How to train into a fold folder: afresh (new, or --overwrite), or resumed when it holds this very fold
    (the same config, data and system source: `run_identity`); any other content is refused."""
    from .run.folder import run_identity
    from .run.load import CONFIG_FILE, read_config

    try:
        entries = os.listdir(run_dir)
    except (FileNotFoundError, NotADirectoryError):
        entries = []
    if not entries:
        return {}
    if CONFIG_FILE in entries:
        try:
            same = run_identity(read_config(run_dir)) == run_identity(fold_config)
        except (ValueError, OSError):
            same = False
        if same:
            return {"resume": True}
    if overwrite:
        return {"overwrite": True}
    raise ValueError(
        f"{run_dir} holds {', '.join(sorted(entries))}, not this fold of {fold_config.name!r} (another config, "
        "data or system): pass --overwrite to replace it, or give another --out"
    )


def _names(paths, configs) -> list[str]:
    """The configs' names, or their file names where two names are alike (their folders then differ by a
    suffix where the file names are alike too, `_folders`)."""
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        names = [os.path.splitext(os.path.basename(p))[0] for p in paths]
    for path, config in zip(paths, configs, strict=True):
        if len(config.data.train) < 2:
            raise ValueError(
                f"{path}: data.train names {len(config.data.train)} recording(s); leave-one-run-out "
                "cross-validation needs at least 2"
            )
        if config.dtype == "float64":
            jax.config.update("jax_enable_x64", True)
    return names


def _fold_config(config, i: int, epochs):
    """Fold i's config: trained on the others, validated as `fold_files` says, tested on recording i."""
    train, validation = fold_files(config, i)
    changes = {"data": {"train": train, "validation": validation, "test": [config.data.train[i]]}}
    if epochs is not None:
        changes["training"] = {"epochs": epochs}
    return config.replace(changes)


def _fold(
    config, name, i, run_dir, target, epochs, reference, progress
) -> tuple[dict, dict | None, str]:
    """Train fold `i` of `config` (recording i held out) into `run_dir` (`target`: resume or overwrite, from
    `_fold_target`) and score it: its entry, the trained models (None when it diverged) and the reference's
    description."""
    from .evaluate.run import end_errors
    from .models import physics_prior
    from .run import load_run
    from .run.training import train_run
    from .train.fit import TrainingDiverged

    files = list(config.data.train)
    fold_config = _fold_config(config, i, epochs)
    train, validation = list(fold_config.data.train), list(fold_config.data.validation)
    if progress:
        validated = (
            ", ".join(os.path.basename(v) for v in validation)
            if validation
            else f"a split of {', '.join(os.path.basename(t) for t in train)}"
        )
        print(
            f"cv {name} fold {i + 1}/{len(files)}: held out {os.path.basename(files[i])}, "
            f"validated on {validated}",
            file=sys.stderr,
            flush=True,
        )
    cut, given, described = reference.get(config, fold_config, files[i])
    failed, models = None, None
    try:
        train_run(fold_config, run_dir, progress=progress, **target)
    except TrainingDiverged as e:
        # One fold that diverges scores as failed (an infinite mean); the other folds still count.
        failed = str(e)
    if failed is None:
        trained = load_run(run_dir)
        models = {"model": trained.model}
        physics = physics_prior(trained.model)
        if physics is not None:
            models["physics"] = physics
        errors = end_errors(models, trained.integrator, cut)
    else:
        nan = dict.fromkeys(given, float("nan"))
        errors = {"model": nan, "physics": nan}
    ratios = {k: _ratios(v, given) for k, v in errors.items()}
    entry = {
        "fold": i + 1,
        "held_out": files[i],
        "train": train,
        "validation": validation,
        "run": run_dir,
        "windows": len(cut.sources),
        "errors": {"given physics": given, **errors},
        "ratios": ratios,
        "mean_ratio": {k: _mean(r.values()) for k, r in ratios.items()},
        "failed": failed,
    }
    return entry, models, described


def _summarise(entry: dict) -> None:
    """The config's mean and worst ratio over its folds, per prediction."""
    if "trained_parameters" not in entry:
        entry["trained_parameters"] = dict.fromkeys(entry["folds"][0]["ratios"], 0)
    candidates = [
        k for k in entry["folds"][0]["ratios"] if all(k in f["ratios"] for f in entry["folds"])
    ]
    entry["summary"] = {
        k: {
            "mean": _mean(f["mean_ratio"][k] for f in entry["folds"]),
            "worst": _worst(r for f in entry["folds"] for r in f["ratios"][k].values()),
        }
        for k in candidates
    }


def _rank(results: list[dict]) -> tuple[list[dict], dict]:
    """Every config's predictions by their worst ratio over folds and coordinates (then the mean), and the
    choice among those tied with the best: a recipe that is much better on average but worse somewhere is not
    chosen over one that is never worse."""
    ranking = sorted(
        (
            {
                "config": e["name"],
                "prediction": k,
                "mean": s["mean"],
                "worst": s["worst"],
                "trained_parameters": e["trained_parameters"][k],
            }
            for e in results
            for k, s in e["summary"].items()
        ),
        key=lambda c: (
            c["worst"],
            c["mean"],
            c["prediction"] != "physics",
            c["trained_parameters"],
        ),
    )
    best = ranking[0]
    # Ties (within rounding) go to the simpler: physics before a network, then fewer trained parameters.
    tied = [
        c
        for c in ranking
        if c["worst"] <= best["worst"] * (1 + TIE) + 1e-300
        and c["mean"] <= best["mean"] * (1 + TIE) + 1e-300
    ]
    choice = min(tied, key=lambda c: (c["prediction"] != "physics", c["trained_parameters"]))
    return ranking, choice


def vary_entries(paths, vary, overrides=()) -> list:
    """Each config file once per combination of the values in `vary` ("key.path=a,b,c" items, their product), as
    (file, overrides) entries (`_variants`) named after the file's config and the values (`my_rig-known`), so
    that one file is cross-validated against its own variants."""
    from .config import load_config
    from .config.errors import ConfigError

    axes = []
    for item in vary:
        key, sep, values = item.partition("=")
        choices = [v.strip() for v in values.split(",") if v.strip()]
        if not sep or not key.strip() or not choices:
            raise ConfigError(
                f"--vary {item!r}: expected KEY.PATH=VALUE1,VALUE2,..., e.g. model.type=known,pinode"
            )
        axes.append([(key.strip(), v) for v in choices])
    entries = []
    for path in paths:
        base = load_config(path, list(overrides)).name
        for combination in itertools.product(*axes):
            sets = [f"{k}={v}" for k, v in combination]
            entries.append(
                (path, [*sets, "name=" + "-".join([base, *(v for _, v in combination)])])
            )
    return entries


def _variants(paths, overrides) -> tuple[list[str], list[list[str]], list]:
    """Each entry's config file, its own overrides and its config: an entry is a config file, or a pair (file,
    overrides): that file with its own `key.path=value` overrides applied after the common `overrides` (a
    variant of a recipe; `name=...` among them names it)."""
    from .config import load_config

    pairs = [(p, []) if isinstance(p, str | os.PathLike) else (p[0], list(p[1])) for p in paths]
    files = [os.fspath(p) for p, _ in pairs]
    own = [o for _, o in pairs]
    configs = [load_config(f, [*overrides, *o]) for f, o in zip(files, own, strict=True)]
    return files, own, configs


def _plan(out: str, path: str, folder: str, config, folds, epochs, overwrite: bool) -> list[tuple]:
    """(fold index, fold folder, how to train into it) for each of the config's folds `folds` selects. Every
    fold folder is checked here, before the first fold trains: a refusal loses no work."""
    return [
        (i, run_dir, _fold_target(run_dir, _fold_config(config, i, epochs), overwrite))
        for i in parse_folds(folds, list(config.data.train), path)
        for run_dir in [fold_dir(out, folder, i)]
    ]


def _config_entry(entry: dict, folder: str, config, plan, epochs, reference, progress) -> dict:
    """`entry` (the config's name, file and overrides) with its type, folder, every fold of `plan` trained and
    scored (`_fold`) and their summary."""
    entry |= {"type": config.model.type, "folder": folder, "folds": []}
    for i, run_dir, target in plan:
        fold, models, described = _fold(
            config, entry["name"], i, run_dir, target, epochs, reference, progress
        )
        entry["folds"].append(fold)
        entry["reference"] = described
        if models is not None:
            entry["trained_parameters"] = {k: _trained_size(m) for k, m in models.items()}
    _summarise(entry)
    return entry


def cross_validate(
    paths,
    out: str,
    *,
    folds: str | None = None,
    epochs=None,
    horizon=None,
    stride=None,
    progress=False,
    command: str | None = None,
    overwrite: bool = False,
    overrides=(),
    reference_config: str | None = None,
    vary=(),
) -> dict:
    """Train and score every fold of every config (see the module's docstring); returns cv.json's content.

    `paths`: config files, or (file, overrides) pairs, variants of a file (`_variants`). `horizon`: seconds
    ('0.5s') or steps (default: the first config's `evaluation.horizon`); `stride`: windows starting every that
    many rows ('10') or seconds of each held-out recording, instead of `evaluation.windows` random ones; `vary`
    ("model.type=known,pinode", ...): each file once per combination (`vary_entries`). Fold folders are
    OUT/<folder>/fold-i (`folder_name`); one that holds this fold already is resumed, one that holds anything else
    is refused unless `overwrite`. OUT/chosen.yaml is the chosen candidate's config, to train on all its recordings."""
    from .data.horizons import parse_horizon
    from .run import save_json

    files, own, configs = _variants(
        vary_entries(paths, vary, overrides) if vary else paths, overrides
    )
    paths, configs, refit = _with_reference(files, configs, reference_config, overrides)
    own += [[]] * (len(paths) - len(own))
    names = _names(paths, configs)
    if refit and reference_config is None:
        names[-1] = REFIT
    folders = _folders(names)
    h = parse_horizon(
        horizon if horizon is not None else configs[0].evaluation.horizon, "--horizon"
    )
    every = None if stride is None else parse_horizon(stride, "--stride")
    reference = _Reference(h, every)
    plans = [
        _plan(out, path, folder, config, folds, epochs, overwrite)
        for path, folder, config in zip(paths, folders, configs, strict=True)
    ]
    results = [
        _config_entry(
            {"name": name, "config": path, **({"overrides": sets} if sets else {})},
            folder,
            config,
            plan,
            epochs,
            reference,
            progress,
        )
        for path, name, folder, config, plan, sets in zip(
            paths, names, folders, configs, plans, own, strict=True
        )
    ]
    if refit:
        results[-1]["is_reference"] = True
        _against_reference(results)
    ranking, choice = _rank(results)
    report = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
        "command": command,
        "horizon": h.label,
        "windows": _windows_label(every),
        "reference": "mean |error| at the horizon of the physics as given (the first config's model before "
        "training, its network removed) on the same windows of the held-out recording",
        "configs": results,
        "ranking": ranking,
        "choice": choice,
    }
    os.makedirs(out, exist_ok=True)
    save_json(os.path.join(out, "cv.json"), report)
    _write_choice(os.path.join(out, "chosen.yaml"), results, configs, choice)
    return report


def _windows_label(every) -> str:
    """Which windows of the held-out recording were scored, for the record."""
    if every is not None:
        return f"every {every.label} of the held-out recording"
    return "evaluation.windows at random (the config's seed) on the held-out recording"


def _write_choice(path: str, results: list[dict], configs: list, choice: dict) -> None:
    """The chosen candidate's config, to train on all its recordings: where the choice is a network model's
    identified physics, the same config as a pure ODE (its physics refined through the solver, no network)."""
    import yaml

    from .config.schema import drop_other_types

    config = configs[next(i for i, r in enumerate(results) if r["name"] == choice["config"])]
    tree = config.to_dict()
    what = "the trained model"
    if choice["prediction"] == "physics" and tree["model"]["type"] not in ("known", "pure_ode"):
        tree["model"]["type"] = "pure_ode"
        drop_other_types(tree["model"], "pure_ode")
        what = "its identified physics, so this is its config as a pure ODE (no network)"
    head = (
        f"# lagnet cv chose {choice['config']}, {what}: mean ratio {_cell(choice['mean'])}, worst "
        f"{_cell(choice['worst'])}. Train it on all its recordings with `lagnet train {path}`.\n"
    )
    with open(path, "w", encoding="utf-8") as f:
        f.write(head + yaml.safe_dump(tree, sort_keys=False))


def _with_reference(paths: list, configs: list, given: str | None, overrides):
    """The paths and configs with the reference config last, and whether there is one: `--reference` loaded
    (none for 'none'), or the least-squares refit of the first config with physics."""
    from .config import load_config

    if given == "none":
        return paths, configs, False
    if given is not None:
        return paths + [given], configs + [load_config(given, list(overrides))], True
    # The refit of a config that identifies physics (it names the parameters to fit) before a known model's.
    ordered = sorted(zip(paths, configs, strict=True), key=lambda pc: pc[1].model.type == "known")
    for path, config in ordered:
        refit = least_squares_refit(config)
        if refit is not None:
            return paths + [f"{REFIT} of {path}"], configs + [refit], True
    return paths, configs, False


def _against_reference(results: list[dict]) -> None:
    """Each config's fold ratios to the reference config's trained model on the same fold and windows (the
    last entry of `results`), with their mean over folds and worst: `vs_reference` in cv.json."""
    reference = {f["fold"]: f["errors"]["model"] for f in results[-1]["folds"]}
    for e in results[:-1]:
        per_fold = {
            f["fold"]: {k: _ratios(f["errors"][k], reference[f["fold"]]) for k in f["ratios"]}
            for f in e["folds"]
            if f["fold"] in reference
        }
        if not per_fold:
            continue
        first = next(iter(per_fold.values()))
        variables = list(first[next(iter(first))])
        e["vs_reference"] = {
            "folds": per_fold,
            "summary": {
                k: {
                    "mean": _mean(_mean(r[k].values()) for r in per_fold.values()),
                    "worst": _worst(v for r in per_fold.values() for v in r[k].values()),
                    "mean_per_variable": {
                        n: _mean(r[k][n] for r in per_fold.values()) for n in variables
                    },
                }
                for k in first
            },
        }


def _cell(x: float) -> str:
    return f"{x:.3g}" if np.isfinite(x) else "failed"


# File names this long or shorter are shown whole.
SHORT = 16


def short_names(paths) -> dict[str, str]:
    """Each path's file name without the prefix and suffix that all of them share (sys_id_..._trajectory_00
    .csv.gz, ..._01.csv.gz → 00, 01), for compact tables; the file names themselves where they are short
    (`SHORT`), or where that leaves one empty or two alike."""
    names = {p: os.path.basename(p) for p in paths}
    unique = sorted(set(names.values()))
    if len(unique) < 2 or max(map(len, unique)) <= SHORT:
        return names
    prefix = os.path.commonprefix(unique)
    suffix = os.path.commonprefix([n[::-1] for n in unique])[::-1]
    cut = {n: n[len(prefix) : len(n) - len(suffix)] for n in unique}
    if any(not c for c in cut.values()) or len(set(cut.values())) < len(unique):
        return names
    return {p: cut[n] for p, n in names.items()}


def _heads(entry: dict) -> dict[str, str]:
    # A known model trains no physics of its own: its physics is the one given, not identified.
    physics = "physics" if entry.get("type") == "known" else "identified physics"
    return {"model": "trained model", "physics": physics}


def _fold_rows(title: str, entry: dict, preds: list, ratios_of, short: dict) -> list[str]:
    """A config's table head and one row per fold and state variable of `ratios_of(fold)` (skipped: None)."""
    heads = _heads(entry)
    lines = [
        "",
        title,
        "",
        "| fold (held out) | variable | " + " | ".join(heads[k] for k in preds) + " |",
        "|---|---|" + "---|" * len(preds),
    ]
    for f in entry["folds"]:
        ratios = ratios_of(f)
        if ratios is None:
            continue
        for n in ratios[preds[0]]:
            cells = " | ".join(_cell(ratios[k][n]) for k in preds)
            lines.append(f"| {f['fold']} ({short[f['held_out']]}) | {n} | {cells} |")
    return lines


def format_cv(report: dict) -> str:
    """The table per fold × state variable of the ratios, each config's mean and worst, and the choice."""
    references = sorted({e["reference"] for e in report["configs"]})
    lines = [
        f"Mean |error| at {report['horizon']} on the held-out recording / that of the physics as given "
        f"({'; '.join(references)}), per state variable (< 1: better than the given physics):",
    ]
    short = short_names(
        [p for e in report["configs"] for f in e["folds"] for p in [f["held_out"], *f["train"]]]
    )
    for e in report["configs"]:
        preds = list(e["summary"])
        lines += _fold_rows(f"{e['name']} ({e['config']}):", e, preds, lambda f: f["ratios"], short)
        lines.append(
            "| mean over folds of the fold's mean | | "
            + " | ".join(_cell(e["summary"][k]["mean"]) for k in preds)
            + " |"
        )
        lines.append(
            "| worst | | " + " | ".join(_cell(e["summary"][k]["worst"]) for k in preds) + " |"
        )
        lines += [f"fold {f['fold']} failed: {f['failed']}" for f in e["folds"] if f.get("failed")]
    lines += _format_vs_reference(report, short)
    c = report["choice"]
    chosen = next((e for e in report["configs"] if e["name"] == c["config"]), {})
    what = f"its {_heads(chosen)[c['prediction']]}"
    lines += [
        "",
        f"Choice: {c['config']}, {what} (mean ratio {_cell(c['mean'])}, worst {_cell(c['worst'])}, "
        f"{c['trained_parameters']} trained parameters).",
    ]
    return "\n".join(lines)


def _format_vs_reference(report: dict, short: dict) -> list[str]:
    """Per config, its ratios to the reference trained on the same fold (< 1: better than the refit)."""
    ref = next((e for e in report["configs"] if e.get("is_reference")), None)
    if ref is None:
        return []
    lines = [
        "",
        f"The same errors / those of the {ref['name']} ({ref['config']}), trained on each fold's recordings "
        "(< 1: better than a reference that saw the same data):",
    ]
    for e in report["configs"]:
        vs = e.get("vs_reference")
        if not vs:
            continue
        preds = list(vs["summary"])
        # Fold numbers are keys: ints in memory, strings once read back from cv.json.
        lines += _fold_rows(
            f"{e['name']}:",
            e,
            preds,
            lambda f, vs=vs: vs["folds"].get(f["fold"], vs["folds"].get(str(f["fold"]))),
            short,
        )
        for n in vs["summary"][preds[0]]["mean_per_variable"]:
            cells = " | ".join(_cell(vs["summary"][k]["mean_per_variable"][n]) for k in preds)
            lines.append(f"| mean over folds | {n} | {cells} |")
        lines.append(
            "| worst | | " + " | ".join(_cell(vs["summary"][k]["worst"]) for k in preds) + " |"
        )
    return lines
