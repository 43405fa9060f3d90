"""YAML run configs: one schema with documented defaults, validated before any work is done.

Every key has a default (see `DEFAULTS` and `describe()`); a config file only states what differs. Errors name
the key path, the value, what was expected, and the file.
"""

import copy
import dataclasses
import difflib
import os
from collections.abc import Callable, Mapping
from typing import Any

import yaml


@dataclasses.dataclass(frozen=True)
class Field:
    """One config value: its default, the types it accepts, an optional check, and what it means."""

    default: Any
    types: tuple[type, ...]
    doc: str
    check: Callable[[Any], str | None] | None = None  # returns an error message, or None
    nullable: bool = False


def positive(x):
    return None if x > 0 else "must be > 0"


def non_negative(x):
    return None if x >= 0 else "must be >= 0"


def fraction(x):
    return None if 0 <= x < 1 else "must be in [0, 1)"


def one_of(*choices):
    def check(x):
        return None if x in choices else f"must be one of {list(choices)}"

    check.choices = choices
    return check


def list_of(kind):
    def check(x):
        bad = [v for v in x if not isinstance(v, kind) or isinstance(v, bool) and kind is not bool]
        return None if not bad else f"must be a list of {kind.__name__}, got entries {bad}"

    return check


NUM = (int, float)
SYSTEMS = (
    "pendulum",
    "cartpole",
    "double_pendulum",
    "acrobot",
    "pendubot",
    "duffing",
    "mass_spring_chain",
)
MODELS = ("pinode", "pure_ode", "blackbox", "potential", "known")
INTEGRATORS = (
    "rk4",
    "leapfrog",
    "symplectic_euler",
    "forward_euler",
    "backward_euler",
    "newmark",
    "variational",
)

SCHEMA: dict[str, Any] = {
    "name": Field("run", (str,), "a name for the run (used for the run directory)"),
    "seed": Field(
        0, (int,), "seed for parameter init, data order and everything random", non_negative
    ),
    "dtype": Field(
        "float32",
        (str,),
        "float32 or float64 for training and evaluation",
        one_of("float32", "float64"),
    ),
    "devices": Field(
        "auto",
        (str, int),
        "data-parallel training over this many devices (every process's in a multi-process run), "
        "or auto (all, or the most that divide the batch size)",
        lambda x: (
            None if x == "auto" or (isinstance(x, int) and x >= 1) else "must be auto or >= 1"
        ),
    ),
    "system": {
        "name": Field("cartpole", (str,), "the known mechanics", one_of(*SYSTEMS)),
        "params": Field({}, (dict,), "overrides of the system's parameters, e.g. {length: 0.2}"),
    },
    "model": {
        "type": Field(
            "pinode", (str,), "pinode | pure_ode | blackbox | potential | known", one_of(*MODELS)
        ),
        "width": Field(50, (int,), "hidden units per layer", positive),
        "depth": Field(2, (int,), "number of hidden layers", non_negative),
        "activation": Field(
            "relu", (str,), "hidden activation (relu, tanh, softplus, gelu, silu, elu)"
        ),
        "final_activation": Field("tanh", (str,), "output activation (the paper: tanh)"),
        "output_scale": Field(
            "auto",
            (int, float, list, str),
            "the network's output is multiplied by this: a number, one per output, or auto (3 × the spread "
            "of what the network must learn in the training data: the residual force, or q̈ for a black box)",
            lambda x: (
                None
                if x == "auto" or isinstance(x, list) or (not isinstance(x, str) and x > 0)
                else "must be > 0, a list, or auto"
            ),
        ),
        "zero_init": Field(
            True, (bool,), "start the network's output at zero (the model starts as its physics)"
        ),
        "force_on": Field(
            None,
            (list,),
            "coordinates (names) the residual force acts on; null: all",
            nullable=True,
        ),
        "hide_position": Field(
            [],
            (list,),
            "coordinates whose position the network does not see (only their velocity), e.g. [x] for a "
            "cart whose forces cannot depend on where it is",
            list_of(str),
        ),
        "input_history": Field(
            0, (int,), "past inputs the network also sees (actuator lag)", non_negative
        ),
        "friction": {
            "coulomb": Field(
                [], (list,), "coordinate names with Coulomb friction c·tanh(q̇/ε)", list_of(str)
            ),
            "viscous": Field(
                [], (list,), "coordinate names with viscous friction b·q̇", list_of(str)
            ),
            "epsilon": Field(0.01, NUM, "smoothing velocity ε of the Coulomb term", positive),
            "fit": Field(
                "lstsq",
                (str,),
                "lstsq: least squares on the training data; none: start at zero",
                one_of("lstsq", "none"),
            ),
            "trainable": Field(
                True, (bool,), "refine the friction coefficients by gradient descent"
            ),
        },
        "learn_parameters": Field(
            [], (list,), "system parameters to learn (kept positive)", list_of(str)
        ),
        "learn_mass": Field(False, (bool,), "potential model: learn a constant SPD mass matrix"),
        "dissipation": Field(
            False, (bool,), "potential model: add a passive learned Rayleigh dissipation"
        ),
    },
    "integrator": {
        "name": Field(
            "rk4",
            (str,),
            "the fixed-step method the model is trained and rolled out with",
            one_of(*INTEGRATORS),
        ),
        "beta": Field(0.25, NUM, "Newmark β", non_negative),
        "gamma": Field(0.5, NUM, "Newmark γ", non_negative),
        "dt": Field(
            None,
            NUM,
            "fixed step in s; null: the measured step of each sample",
            positive,
            nullable=True,
        ),
    },
    "data": {
        "train": Field([], (list, str), "training file(s), relative to the config file"),
        "test": Field([], (list, str), "test file(s) for evaluation"),
        "mapping": Field(
            {}, (dict,), "columns → time, positions, velocities, inputs (see lagnet.data)"
        ),
        "validation_fraction": Field(
            0.15, NUM, "last fraction of each training recording held out", fraction
        ),
        "max_duration": Field(
            None,
            NUM,
            "use only the first this many seconds of training data",
            positive,
            nullable=True,
        ),
    },
    "training": {
        "epochs": Field(50, (int,), "passes over the training windows", non_negative),
        "batch_size": Field(128, (int,), "windows per gradient step", positive),
        "horizon": Field(
            1, (int,), "rollout steps per training window (1: the paper's one-step loss)", positive
        ),
        "curriculum": Field(
            [], (list,), "[[epoch, horizon], ...]: grow the horizon during training"
        ),
        "optimizer": Field("adam", (str,), "adam | adamw", one_of("adam", "adamw")),
        "learning_rate": Field(1e-3, NUM, "peak learning rate", positive),
        "schedule": Field(
            "constant",
            (str,),
            "constant | cosine | warmup_cosine",
            one_of("constant", "cosine", "warmup_cosine"),
        ),
        "warmup_epochs": Field(
            1, (int,), "epochs of linear warm-up for warmup_cosine", non_negative
        ),
        "weight_decay": Field(0.0, NUM, "decoupled weight decay (adamw)", non_negative),
        "clip_norm": Field(
            None, NUM, "clip gradients to this global norm; null: off", positive, nullable=True
        ),
        "weights_q": Field(None, (list,), "λ₁ per coordinate; null: all 1", nullable=True),
        "weights_qd": Field(None, (list,), "λ₂ per coordinate; null: all 1", nullable=True),
        "normalise": Field(
            True, (bool,), "divide each coordinate's squared error by its variance in the data"
        ),
        "patience": Field(
            10, (int,), "early stopping: epochs without validation improvement", positive
        ),
        "validation_horizon": Field(
            None,
            (int,),
            "rollout steps of the validation loss; null: the largest training horizon",
            positive,
            nullable=True,
        ),
        "keep_checkpoints": Field(
            3, (int,), "training states of the last N epochs kept for resuming", positive
        ),
        "max_skipped_steps": Field(
            100,
            (int,),
            "stop when more steps than this had a non-finite loss/gradient",
            non_negative,
        ),
    },
    "evaluation": {
        "windows": Field(1000, (int,), "number of test windows (the paper: 1000)", positive),
        "horizon": Field(30, (int,), "steps per test window (the paper: 30 = 0.6 s)", positive),
        "long_horizon": Field(
            100, (int,), "steps of the overlaid long rollout (the paper: 100 = 2 s)", positive
        ),
    },
}


class ConfigError(ValueError):
    """A config that cannot be run: names the key path and what was expected."""


def _defaults(schema) -> dict:
    return {
        k: (_defaults(v) if isinstance(v, dict) else copy.deepcopy(v.default))
        for k, v in schema.items()
    }


DEFAULTS = _defaults(SCHEMA)


def _validate(user: Mapping, schema: dict, path: str, where: str) -> dict:
    if not isinstance(user, Mapping):
        raise ConfigError(f"{where}{path or 'config'} must be a mapping, got {type(user).__name__}")
    out = _defaults(schema)
    for key, value in user.items():
        key_path = f"{path}.{key}" if path else str(key)
        if key not in schema:
            close = difflib.get_close_matches(str(key), list(schema), n=1)
            hint = f"; did you mean {(path + '.' if path else '') + close[0]!r}?" if close else ""
            raise ConfigError(
                f"{where}unknown key {key_path!r}{hint} (expected one of {sorted(schema)})"
            )
        spec = schema[key]
        if isinstance(spec, dict):
            out[key] = _validate(value if value is not None else {}, spec, key_path, where)
            continue
        if value is None:
            if not spec.nullable:
                raise ConfigError(
                    f"{where}{key_path} must not be null (expected {_expected(spec)})"
                )
            out[key] = None
            continue
        ok = isinstance(value, spec.types) and not (
            isinstance(value, bool) and bool not in spec.types
        )
        if not ok:
            raise ConfigError(
                f"{where}{key_path} must be {_expected(spec)}, got {value!r} ({type(value).__name__})"
            )
        if spec.check is not None:
            msg = spec.check(value)
            if msg:
                raise ConfigError(f"{where}{key_path} {msg}, got {value!r}")
        out[key] = float(value) if spec.types == NUM else value
    return out


def _expected(spec: Field) -> str:
    names = {
        int: "an integer",
        float: "a number",
        str: "a string",
        bool: "true/false",
        list: "a list",
        dict: "a mapping",
    }
    kinds = " or ".join(dict.fromkeys(names[t] for t in spec.types))
    return kinds + (" or null" if spec.nullable else "")


def validate(user: Mapping | None, *, source: str | None = None) -> dict:
    """A complete config (defaults filled in) from a user dict, or `ConfigError` naming the key path."""
    where = f"{source}: " if source else ""
    config = _validate(user or {}, SCHEMA, "", where)
    _check_consistency(config, where)
    return config


def _check_consistency(config: dict, where: str) -> None:
    for i, entry in enumerate(config["training"]["curriculum"]):
        if (
            not isinstance(entry, list | tuple)
            or len(entry) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in entry)
            or entry[1] < 1
        ):
            raise ConfigError(
                f"{where}training.curriculum[{i}] must be [epoch, horizon] with epoch >= 0 "
                f"and horizon >= 1, got {entry!r}"
            )
    if isinstance(config["data"]["train"], str):
        config["data"]["train"] = [config["data"]["train"]]
    if isinstance(config["data"]["test"], str):
        config["data"]["test"] = [config["data"]["test"]]


def load_config(path: str | os.PathLike, overrides: list[str] = ()) -> dict:
    """Read a YAML config (`yaml.safe_load`), apply `key.path=value` overrides, validate.

    Data paths are resolved relative to the config file's folder.
    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            user = yaml.safe_load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f"config file not found: {path}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        raise ConfigError(f"{path}: YAML syntax error{line}: {problem}") from None
    user = user or {}
    for item in overrides:
        apply_override(user, item, source=path)
    config = validate(user, source=path)
    base = os.path.dirname(os.path.abspath(path))
    for split in ("train", "test"):
        config["data"][split] = [
            p if os.path.isabs(p) else os.path.normpath(os.path.join(base, p))
            for p in config["data"][split]
        ]
    return config


def apply_override(user: dict, item: str, *, source: str = "--set") -> None:
    """`training.epochs=10` → user["training"]["epochs"] = 10 (the value parsed as YAML)."""
    if "=" not in item:
        raise ConfigError(f"--set expects key.path=value, got {item!r}")
    key, raw = item.split("=", 1)
    value = yaml.safe_load(raw)
    node = user
    parts = key.strip().split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"--set {key}: {part!r} is not a section")
    node[parts[-1]] = value


def describe(schema=SCHEMA, prefix="") -> str:
    """Every key with its default and meaning (what `lagnet train --help-config` prints)."""
    lines = []
    for k, v in schema.items():
        path = f"{prefix}{k}"
        if isinstance(v, dict):
            lines.append(f"{path}:")
            lines.append(describe(v, path + "."))
        else:
            lines.append(f"  {path} = {v.default!r}  — {v.doc}")
    return "\n".join(lines)


def dump(config: dict) -> str:
    return yaml.safe_dump(config, sort_keys=False)
