"""The run config as frozen dataclasses: every key, its default, the types it accepts, a check and its meaning.

A YAML file states only what differs from the defaults; `validate` turns a user mapping into a `Config`, with
errors that name the key path, the value, what was expected and the file (and a did-you-mean for typos).
"""

import copy
import dataclasses
import difflib
import math
from collections.abc import Callable, Mapping
from typing import Any

import yaml

from ..data.horizons import parse_horizon
from ..data.mapping import ColumnMapping
from .errors import ConfigError
from .registry import INTEGRATORS, SYSTEMS
from .sources import SOURCED

NUM = (int, float)


def option(
    default: Any,
    types: tuple[type, ...],
    doc: str,
    check: Callable[[Any], str | None] | None = None,
    *,
    nullable: bool = False,
):
    """A config field: `check(value)` returns an error message or None; `types` are the YAML types accepted."""
    meta = {"types": types, "doc": doc, "check": check, "nullable": nullable}
    return dataclasses.field(default_factory=lambda: copy.deepcopy(default), metadata=meta)


def positive(x):
    return None if x > 0 else "must be > 0"


def non_negative(x):
    return None if x >= 0 else "must be >= 0"


def fraction(x):
    return None if 0 <= x < 1 else "must be in [0, 1)"


def one_of(choices: Callable[[], Any] | tuple):
    """A check against a fixed tuple, or against a registry read at validation time (registered names count)."""

    def check(x):
        names = tuple(choices() if callable(choices) else choices)
        return None if x in names else f"must be one of {list(names)}"

    return check


def list_of(kind):
    def check(x):
        bad = [v for v in x if not isinstance(v, kind) or isinstance(v, bool) and kind is not bool]
        return None if not bad else f"must be a list of {kind.__name__}, got entries {bad}"

    return check


def _hide_position(x):
    if isinstance(x, str):
        return None if x == "cyclic" else "must be a list of coordinate names or 'cyclic'"
    return list_of(str)(x)


def _horizon(x):
    try:
        parse_horizon(x)
    except ValueError as e:
        return str(e).split(": ", 1)[-1]
    return None


def _devices(x):
    return None if x == "auto" or (isinstance(x, int) and x >= 1) else "must be auto or >= 1"


def _output_scale(x):
    if isinstance(x, list):
        bad = [v for v in x if not _is_real(v) or not v > 0]
        return f"must be numbers > 0, got entries {bad}" if bad else None
    if x == "auto" or (not isinstance(x, str) and x > 0):
        return None
    return "must be > 0, a list, or auto"


def _input_limit(x):
    values = x if isinstance(x, list) else [x]
    bad = [v for v in values if not _is_real(v) or not v > 0]
    return (
        f"must be a number > 0 or a list of them (one per input), got {bad}"
        if bad or not values
        else None
    )


def _is_real(x) -> bool:
    """A finite int or float (not a bool: YAML's true is no number)."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return False
    return isinstance(x, int) or math.isfinite(x)


class _Section:
    """Shared by every config section: its values as a plain nested dict (what config.yaml holds)."""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _friction_term(x):
    if isinstance(x, list):
        return list_of(str)(x)
    bad = {
        k: v
        for k, v in x.items()
        if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, NUM) or not v >= 0
    }
    if bad:
        return f"must map coordinate names to coefficients >= 0 (friction dissipates), got {bad}"
    return None


def _learn_parameters(x):
    if isinstance(x, list):
        return list_of(str)(x)
    for name, bound in x.items():
        if bound is None:
            continue
        if not isinstance(bound, dict) or set(bound) - {"lower", "upper", "scale"}:
            return (
                f"{name}: expected null or a mapping with keys lower, upper, scale, got {bound!r}"
            )
        bad = [v for v in bound.values() if v is not None and not isinstance(v, NUM)]
        if bad or isinstance(bound.get("scale"), bool):
            return f"{name}: lower, upper and scale must be numbers or null, got {bound!r}"
    return None


@dataclasses.dataclass(frozen=True)
class SystemConfig(_Section):
    name: str = option(
        "cartpole",
        (str,),
        "the known mechanics: a registered system, or python | lagrangian | urdf | mjcf with `source`",
        one_of(lambda: {**SYSTEMS, **SOURCED}),
    )
    params: dict = option(
        {},
        (dict,),
        "the system's parameters, e.g. {length: 0.2} (python: keyword arguments of the function; "
        "lagrangian: the `params` dict its functions receive; urdf/mjcf: armature, inertia_offset, ...)",
    )
    source: str | None = option(
        None,
        (str,),
        "python: file.py:function or package.module:function returning the system (this RUNS that code); "
        "lagrangian: a .py file defining kinetic(q, qd, params), potential(q, params) and optionally "
        "input_matrix(q, params) (also run); urdf / mjcf: the robot description. Files are relative to "
        "the config and copied into the run",
        nullable=True,
    )
    coordinates: list | None = option(
        None, (list,), "lagrangian: the coordinate names (their number is n)", nullable=True
    )
    angles: list | None = option(
        None,
        (list,),
        "lagrangian: the coordinates that are angles (wrapped, embedded as sin/cos); null: none",
        nullable=True,
    )
    inputs: list | None = option(
        None,
        (list,),
        "lagrangian: the input names (default one per coordinate with B = I, or u1..um from input_matrix)",
        nullable=True,
    )


@dataclasses.dataclass(frozen=True)
class FrictionConfig(_Section):
    viscous: list | dict = option(
        [],
        (list, dict),
        "viscous friction b·q̇: coordinate names (b fitted, see `fit`) or {name: b} (given, e.g. identified)",
        _friction_term,
    )
    coulomb: list | dict = option(
        [],
        (list, dict),
        "Coulomb friction c·σ(q̇): coordinate names (fitted) or {name: c} (given)",
        _friction_term,
    )
    stribeck: list | dict = option(
        [],
        (list, dict),
        "shape stribeck: the static excess s·exp(−(q̇/v_s)²)·σ(q̇), names (fitted) or {name: s} (given)",
        _friction_term,
    )
    shape: str = option(
        "tanh",
        (str,),
        "σ(q̇): tanh = tanh(q̇/ε); atan = atan(q̇/ε), saturating at π/2 (a lab's c·atan(100 q̇) is ε 0.01 "
        "with c unchanged); stribeck = tanh(q̇/ε) plus the Stribeck term",
        one_of(("tanh", "atan", "stribeck")),
    )
    epsilon: float = option(0.01, NUM, "smoothing velocity ε of σ(q̇)", positive)
    stribeck_velocity: float = option(0.1, NUM, "Stribeck velocity v_s", positive)
    fit: str = option(
        "lstsq",
        (str,),
        "for terms given by name: lstsq = non-negative least squares on the training data; none = start "
        "at zero",
        one_of(("lstsq", "none")),
    )
    trainable: bool = option(
        True, (bool,), "refine the friction coefficients by gradient descent (kept >= 0)"
    )


def _validation_horizon(x):
    if x in ("evaluation", "training") or (
        isinstance(x, int) and not isinstance(x, bool) and x >= 1
    ):
        return None
    return "must be evaluation, training or an integer >= 1"


def _identification_horizon(x):
    if x == "training" or (isinstance(x, int) and not isinstance(x, bool) and x >= 1):
        return None
    return "must be training or an integer >= 1"


@dataclasses.dataclass(frozen=True)
class IdentificationConfig(_Section):
    method: str = option(
        "solver",
        (str,),
        "pinode, pure_ode: solver = before any network, fit the physical parameters and friction "
        "coefficients through the solver (bounded Gauss–Newton on the training windows' rollouts, started "
        "from the equation error); least_squares = the classical equation-error fit labs use (the "
        "inverse-dynamics residual M q̈ + C q̇ + G − B u − Q_f at each sample, q̈ filtered over "
        "data.derivative_window; no rollouts); none = start training from the config's values and the "
        "least-squares friction fit",
        one_of(("solver", "least_squares", "none")),
    )
    refine: bool = option(
        True,
        (bool,),
        "after identification, training keeps adjusting the physics together with the network (from the "
        "identified values, within the bounds); false: the physics stays exactly as identified and the network "
        "learns only what it cannot explain (benchmarks/distribution_shift.py measures both)",
    )
    horizon: int | str = option(
        "training",
        (int, str),
        "steps per window the identification's rollouts run: training = the training's longest horizon; a "
        "number >= 1. On closed-loop data of an unstable rig, long windows let the feedback's own corrections "
        "pass for damping (docs/guides/training.md); a short horizon identifies friction from the equation "
        "error instead",
        _identification_horizon,
    )
    weighting: str = option(
        "windows",
        (str,),
        "windows = every window's errors count alike; recordings = each training recording's errors relative to "
        "the starting physics' error on it (per state variable), so that a recording where every model errs a "
        "lot, e.g. a chaotic one, does not decide the fit alone (recordings still count by their windows)",
        one_of(("windows", "recordings")),
    )
    prior_weight: float = option(
        0.0,
        NUM,
        "λ of a prior around the given values: the fit adds λ Σ ((θ − θ0)/θ0)² over the parameters that do not "
        "start at 0 (a MAP fit, relative width λ^-1/2), so it moves a lab's identified values only as far as the "
        "data insists; 0 = off",
        non_negative,
    )
    data: str = option(
        "training",
        (str,),
        "the recordings the physics is fitted on: training = the training recordings; all = the training and "
        "the validation recordings (the few physical parameters gain the held-out runs' information, and a "
        "network is then kept only where it beats a physics that has seen the validation data too)",
        one_of(("training", "all")),
    )
    first_stage: str = option(
        "collocation",
        (str,),
        "method: solver only, where the rollout fit starts: collocation = from the fit of each window's first-step "
        "acceleration; least_squares = from the equation-error least-squares fit (method: least_squares) on "
        "the recordings' filtered accelerations",
        one_of(("collocation", "least_squares")),
    )
    anchor: str = option(
        "given",
        (str,),
        "what the rollout fit is held to and judged against: given = the config's values (the prior's centre, "
        "and the physics kept when the fit is rejected); first_stage = the equation-error fit of first_stage: "
        "least_squares, so that the result is never worse on validation than the classical fit it started from",
        one_of(("given", "first_stage")),
    )
    equation_error_weight: float = option(
        0.0,
        NUM,
        "method: solver only, w >= 0: the equation error (method least_squares's residual on the recordings' "
        "filtered accelerations) joins the rollout fit, scaled so that at the start it counts w times the "
        "rollout loss; the fit then matches the rollouts while it is held towards the torques the samples "
        "measure; 0 = rollouts alone",
        non_negative,
    )
    accept: str = option(
        "every_coordinate",
        (str,),
        "when the identified physics replaces the given one: every_coordinate = only if it is no worse at the "
        "validation windows' end on any coordinate (and, always, finite, no worse on the data it was fitted to "
        "and physical: M(q) positive definite); loss = on those last conditions alone",
        one_of(("every_coordinate", "loss")),
    )
    baseline: str = option(
        "given",
        (str,),
        "what the identified physics must be no worse than on every validation coordinate to be kept (accept: "
        "every_coordinate): given = the start; least_squares = also the equation-error fit (method: "
        "least_squares on the same recordings) wherever that fit is itself no worse than the start on every "
        "coordinate, and it is then kept in place of a rejected fit: the result is never worse on validation "
        "than a classical fit that beats the given values",
        one_of(("given", "least_squares")),
    )
    max_windows: int = option(
        1024, (int,), "training windows (evenly spread) the identification fits", positive
    )
    max_iterations: int = option(
        100, (int,), "solver function evaluations per identification stage", positive
    )


def _model_type(default: str):
    return option(
        default,
        (str,),
        "pinode | pure_ode | blackbox | potential | known: which other model keys apply depends on it",
        one_of(lambda: MODEL_SECTIONS),
    )


@dataclasses.dataclass(frozen=True)
class ModelConfig(_Section):
    """The shared base of the `model` sections, a tagged union on `model.type`: one frozen section per type
    (`MODEL_SECTIONS`), holding only the keys that type reads. The YAML stays flat (`model: {type: pinode,
    width: 32}`); a key of another type is a `ConfigError` naming the types that read it."""

    type: str = _model_type("pinode")

    def __post_init__(self):
        if MODEL_SECTIONS.get(self.type) is not type(self):
            raise ConfigError(
                f"model.type {self.type!r} is not the type of {type(self).__name__} "
                f"(build a model section with `validate` or from MODEL_SECTIONS)"
            )

    @classmethod
    def reads(cls, key: str) -> bool:
        """Whether this section has `key` (the model type reads it)."""
        return key in {f.name for f in dataclasses.fields(cls)}

    def setting(self, key: str):
        """`key`'s value for any model type: the section's own where its type reads the key, else what a model
        without it amounts to (`ABSENT`: no past inputs, no physics to identify, ...). Reading such a key as an
        attribute of a type that does not read it is an error, never a quiet default."""
        return getattr(self, key) if self.reads(key) else ABSENT[key]

    def __getattr__(self, name: str):
        # Called only for a name that is no field: a key of another model type, or a typo.
        if name.startswith("__") or name not in model_fields():
            raise AttributeError(name)
        raise AttributeError(
            f"model.type {self.type} does not read model.{name}"
            + (f": use .setting({name!r}) for what its absence means" if name in ABSENT else "")
        )


# What a model section without these keys amounts to, for the code that reads any model's section
# (`ModelConfig.setting`).
ABSENT = {
    "input_history": 0,  # sees no past inputs
    "input_limit": None,  # reads its inputs unsaturated
    "zero_init": False,  # has no network starting at zero: does not start as its physics
    "start_from": None,  # starts from no other run's physics
    "identification": IdentificationConfig(method="none"),  # has no physics to identify
    "residual_penalty": 0.0,  # has no residual to keep small
}


# Every key a model section may have, defined once: its default, YAML types, meaning and check (`option`'s
# arguments), or the section class of a nested section. A section below lists the keys its type reads, in full.
MODEL_KEYS: dict[str, dict | type[_Section]] = {
    "width": dict(default=50, types=(int,), doc="hidden units per layer", check=positive),
    "depth": dict(default=2, types=(int,), doc="number of hidden layers", check=non_negative),
    "activation": dict(
        default="relu",
        types=(str,),
        doc="hidden activation (relu, tanh, softplus, gelu, silu, elu)",
    ),
    "final_activation": dict(
        default="tanh", types=(str,), doc="output activation (the paper: tanh)"
    ),
    "hide_position": dict(
        default=[],
        types=(list, str),
        doc="coordinates whose position the network does not see (only their velocity): a list of names, or "
        "cyclic: the system's cyclic coordinates, those its known physics does not depend on (the cart-pole's "
        "x). Not the default: the rig may depend on them where the known physics does not (end stops)",
        check=_hide_position,
    ),
    "output_scale": dict(
        default="auto",
        types=(int, float, list, str),
        doc="the network's output is multiplied by this: a number, one per output, or auto (3 × the spread "
        "of what the network must learn in the training data: the residual force, or q̈ for a black box)",
        check=_output_scale,
    ),
    "input_history": dict(
        default=0,
        types=(int,),
        doc="past inputs the network also sees (actuator lag)",
        check=non_negative,
    ),
    "input_limit": dict(
        default=None,
        types=(int, float, list),
        doc="the actuator's saturation: the model reads each input (and each past input) clipped to ±this, as "
        "the drive delivers it; a number for all inputs or one per input; null: unlimited. Set it when the "
        "data records commands beyond what the actuator delivers",
        check=_input_limit,
        nullable=True,
    ),
    "friction": FrictionConfig,
    "learn_parameters": dict(
        default=[],
        types=(list, dict),
        doc="system parameters to learn: names, or {name: {lower, upper, scale}} (default lower 0: kept "
        "non-negative; may start at 0)",
        check=_learn_parameters,
    ),
    "start_from": dict(
        default=None,
        types=(str,),
        doc="a trained run (folder, relative to the config) whose physics a PINODE starts from: the values of "
        "the parameters it learned and its friction coefficients (a two-stage fit: identify the physics with a "
        "pure ODE run, then learn the residual); null: the config's values",
        nullable=True,
    ),
    "identification": IdentificationConfig,
    "actuator_lag": dict(
        default=None,
        types=NUM,
        doc="the drive's first-order lag τ (s) between the command and the applied input, a physical parameter "
        "identified and refined like any other (from this start); null: none, unless actuator_delay is given. "
        "Needs model.input_history k with k Δt >= the lag (about 3τ + the dead time recommended)",
        check=non_negative,
        nullable=True,
    ),
    "actuator_delay": dict(
        default=None,
        types=NUM,
        doc="the drive's dead time d (s) before a command acts, identified like actuator_lag; null: none, "
        "unless actuator_lag is given. Needs model.input_history k with (k − 1) Δt >= d",
        check=non_negative,
        nullable=True,
    ),
}


def _key(name: str, **changes):
    """The field of model key `name` (`MODEL_KEYS`), with `changes` to its `option` arguments (a type's own doc)."""
    spec = MODEL_KEYS[name]
    if isinstance(spec, type):
        return dataclasses.field(default_factory=spec)
    return option(**{**spec, **changes})


@dataclasses.dataclass(frozen=True)
class PinodeModelConfig(ModelConfig):
    """`model.type: pinode`: the known physics, friction and a residual network (the paper's model)."""

    type: str = _model_type("pinode")
    width: int = _key("width")
    depth: int = _key("depth")
    activation: str = _key("activation")
    final_activation: str = _key("final_activation")
    hide_position: list | str = _key("hide_position")
    output_scale: int | float | list | str = _key("output_scale")
    input_history: int = _key("input_history")
    input_limit: int | float | list | None = _key("input_limit")
    friction: FrictionConfig = _key("friction")
    learn_parameters: list | dict = _key("learn_parameters")
    start_from: str | None = _key("start_from")
    identification: IdentificationConfig = _key("identification")
    actuator_lag: float | None = _key("actuator_lag")
    actuator_delay: float | None = _key("actuator_delay")

    zero_init: bool = option(
        True, (bool,), "start the network's output at zero (the model starts as its physics)"
    )
    force_on: list | None = option(
        None, (list,), "coordinates (names) the residual force acts on; null: all", nullable=True
    )
    gate: str = option(
        "box",
        (str,),
        "box = the residual fades to zero off the box of the training states (the physics alone where there "
        "was no data: `TrainingRegion`); none = the network acts everywhere",
        one_of(("box", "none")),
    )
    zero_at_rest: bool = option(
        False,
        (bool,),
        "the residual is Q_θ(q, q̇, u) − Q_θ(q, 0, 0), zero at rest without input, so the known "
        "physics' equilibria (the upright a controller trims at) stay equilibria of the model",
    )
    gate_margin: float = option(
        0.1,
        NUM,
        "gate box: how far (× the box's width per coordinate) the residual fades",
        positive,
    )
    lipschitz: float | None = option(
        None,
        NUM,
        "spectral normalisation: the network's Lipschitz constant (normalised inputs to output before the output "
        "scale) is at most this, each layer's weights scaled to spectral norm <= lipschitz^(1/layers) (bounds it "
        "for relu, tanh, softplus and elu); null = off",
        positive,
        nullable=True,
    )
    ensemble: int | None = option(
        None,
        (int,),
        "an ensemble of this many residual networks (>= 2), trained together; the residual is their mean shrunk "
        "where they disagree, mean * (mean^2 + tol^2) / (mean^2 + tol^2 + variance); null = one network",
        lambda x: None if x >= 2 else "must be >= 2 (or null for one network)",
        nullable=True,
    )
    ensemble_tolerance: float = option(
        0.1,
        NUM,
        "ensemble: the members' disagreement (std, in the network's output units) left unshrunk",
        positive,
    )
    residual_penalty: float = option(
        0.0,
        NUM,
        "λ of the training loss's term λ · mean ‖g · Q_θ‖² over the training windows' measured states (the "
        "residual in units of its output scale): a minimal-norm residual, so the physics explains all it can "
        "(as APHYNITY); 0 = off",
        non_negative,
    )


@dataclasses.dataclass(frozen=True)
class PureOdeModelConfig(ModelConfig):
    """`model.type: pure_ode`: the known physics with fitted parameters and friction, no network."""

    type: str = _model_type("pure_ode")
    input_limit: int | float | list | None = _key("input_limit")
    friction: FrictionConfig = _key("friction")
    learn_parameters: list | dict = _key("learn_parameters")
    start_from: str | None = _key("start_from")
    identification: IdentificationConfig = _key("identification")
    actuator_lag: float | None = _key("actuator_lag")
    actuator_delay: float | None = _key("actuator_delay")
    input_history: int = _key(
        "input_history", doc="past inputs the model also takes (actuator lag)"
    )


@dataclasses.dataclass(frozen=True)
class BlackBoxModelConfig(ModelConfig):
    """`model.type: blackbox`: a neural ODE q̈ = s ⊙ f_θ(q, q̇, u), no physics."""

    type: str = _model_type("blackbox")
    width: int = _key("width")
    depth: int = _key("depth")
    activation: str = _key("activation")
    final_activation: str = _key("final_activation")
    hide_position: list | str = _key("hide_position")
    output_scale: int | float | list | str = _key("output_scale")
    input_history: int = _key("input_history")
    input_limit: int | float | list | None = _key("input_limit")


@dataclasses.dataclass(frozen=True)
class PotentialModelConfig(ModelConfig):
    """`model.type: potential`: a learned potential V_θ(q) with the known kinetic energy."""

    type: str = _model_type("potential")
    width: int = _key("width")
    depth: int = _key("depth")
    activation: str = _key("activation")
    final_activation: str = _key("final_activation")
    hide_position: list | str = _key("hide_position")
    learn_mass: bool = option(False, (bool,), "learn a constant SPD mass matrix")
    dissipation: bool = option(False, (bool,), "add a passive learned Rayleigh dissipation")


@dataclasses.dataclass(frozen=True)
class KnownModelConfig(ModelConfig):
    """`model.type: known`: the known system with any given friction; nothing is trained."""

    type: str = _model_type("known")
    input_limit: int | float | list | None = _key("input_limit")
    friction: FrictionConfig = _key("friction")


MODEL_SECTIONS: dict[str, type[ModelConfig]] = {
    "pinode": PinodeModelConfig,
    "pure_ode": PureOdeModelConfig,
    "blackbox": BlackBoxModelConfig,
    "potential": PotentialModelConfig,
    "known": KnownModelConfig,
}


@dataclasses.dataclass(frozen=True)
class IntegratorConfig(_Section):
    name: str = option(
        "rk4",
        (str,),
        "the fixed-step method the model is trained and rolled out with",
        one_of(lambda: INTEGRATORS),
    )
    beta: float = option(0.25, NUM, "Newmark β", non_negative)
    gamma: float = option(0.5, NUM, "Newmark γ", non_negative)
    dt: float | None = option(
        None,
        NUM,
        "the data's sample step in s, checked against the measured time stamps (which are always the "
        "ones stepped); null: the measured step",
        positive,
        nullable=True,
    )


@dataclasses.dataclass(frozen=True)
class DataConfig(_Section):
    train: list | str = option([], (list, str), "training file(s), relative to the config file")
    test: list | str = option([], (list, str), "test file(s) for evaluation")
    validation: list | str = option(
        [],
        (list, str),
        "validation file(s): whole held-out recordings for the validation loss (early stopping, the best "
        "model); empty: with 3 or more training recordings (runs, episodes), about validation_fraction of "
        "them held out whole; with fewer, the last validation_fraction of each",
    )
    mapping: dict = option(
        {}, (dict,), "columns → time, positions, velocities, inputs (see lagnet.data)"
    )
    validation_fraction: float = option(
        0.15,
        NUM,
        "share of the training data held out for validation: whole recordings when there are 3 or more, "
        "else the last fraction of each",
        fraction,
    )
    validation_blocks: int = option(
        1,
        (int,),
        "with fewer than 3 training recordings: 1 = the last validation_fraction of each is validation; b > 1 = "
        "each is cut into 2b equal blocks dealt at random (seeded) to training and validation in proportion, so "
        "validation spans the recording's range of conditions instead of its tail",
        positive,
    )
    max_duration: float | None = option(
        None, NUM, "use only the first this many seconds of training data", positive, nullable=True
    )
    derivative_window: float = option(
        0.03,
        NUM,
        "s: q̈ for the friction fit and the automatic output scale is a local quadratic fit of q̇ over at "
        "most this long (noisy, fast-sampled velocities want more, e.g. 0.1 at 500 Hz)",
        positive,
    )


# The rules that can pick a run's best epoch, each with what its score is: the one list of `training.select_by`'s
# choices (and `lagnet.fit`'s), which `lagnet.train.fit` scores and every message names.
SELECT_BY = {
    "guarded_relative_error": "final error relative to the physics (mean over coordinates, no coordinate worse)",
    "relative_error": "final error relative to the physics (mean over coordinates)",
    "worst_relative_error": "final error relative to the physics (worst coordinate)",
    "final_error": "final error (mean over coordinates)",
    "loss": "validation loss",
}


@dataclasses.dataclass(frozen=True)
class TrainingConfig(_Section):
    epochs: int = option(50, (int,), "passes over the training windows", non_negative)
    batch_size: int = option(128, (int,), "windows per gradient step", positive)
    horizon: int = option(
        10,
        (int,),
        "rollout steps per training window: the loss of a multi-step rollout, which beat the paper's "
        "one-step loss (1) on every rig measured (docs/results/cartpole.md); about 0.1 s of the rig's motion is "
        "a good start",
        positive,
    )
    curriculum: list = option(
        [], (list,), "[[epoch, horizon], ...]: grow the horizon during training"
    )
    optimizer: str = option("adam", (str,), "adam | adamw", one_of(("adam", "adamw")))
    learning_rate: float = option(1e-3, NUM, "peak learning rate", positive)
    schedule: str = option(
        "constant",
        (str,),
        "constant | cosine | warmup_cosine",
        one_of(("constant", "cosine", "warmup_cosine")),
    )
    warmup_epochs: int = option(
        1, (int,), "epochs of linear warm-up for warmup_cosine", non_negative
    )
    weight_decay: float = option(0.0, NUM, "decoupled weight decay (adamw)", non_negative)
    clip_norm: float | None = option(
        None, NUM, "clip gradients to this global norm; null: off", positive, nullable=True
    )
    weights_q: list | None = option(None, (list,), "λ₁ per coordinate; null: all 1", nullable=True)
    weights_qd: list | None = option(None, (list,), "λ₂ per coordinate; null: all 1", nullable=True)
    normalise: bool = option(
        True, (bool,), "divide each coordinate's squared error by its variance in the data"
    )
    patience: int = option(
        10, (int,), "early stopping: epochs without validation improvement", positive
    )
    validation_horizon: int | str | None = option(
        "evaluation",
        (int, str),
        "rollout steps of the validation windows, whose end-of-window error selects the checkpoint: evaluation = "
        "the user's horizon, evaluation.horizon (the longest training horizon where no validation recording "
        "holds a window that long); training (or null) = the longest training horizon; or a number of steps",
        _validation_horizon,
        nullable=True,
    )
    max_steps: int | None = option(
        None,
        (int,),
        "a budget in optimiser steps: stop at that step (within an epoch if need be); null: epochs only",
        positive,
        nullable=True,
    )
    max_seconds: float | None = option(
        None,
        NUM,
        "a budget in seconds of training (this process): stop at the first step after it; null: off",
        positive,
        nullable=True,
    )
    select_by: str = option(
        "guarded_relative_error",
        (str,),
        "what picks best.eqx and what patience waits on: relative_error (the validation windows' end-of-window "
        "|error| per coordinate divided by the untrained model's, averaged: for a PINODE the ratio to its "
        "identified physics, so a run that never beats the physics ships it) | final_error (that error in the "
        "data's units, averaged over coordinates) | worst_relative_error (the largest of those ratios: an epoch "
        "beats the physics only if every coordinate improves) | guarded_relative_error (the mean ratio, over "
        "the epochs no worse than the physics on any coordinate: no coordinate is traded for another) | loss "
        "(the validation loss); without validation recordings the default and auto select by the training "
        "loss",
        one_of(("auto", *SELECT_BY)),
    )
    keep_checkpoints: int = option(
        3, (int,), "training states of the last N epochs kept for resuming", positive
    )
    max_skipped_steps: int = option(
        100,
        (int,),
        "stop when more steps than this had a non-finite loss/gradient",
        non_negative,
    )

    def horizon_at(self, epoch: int) -> int:
        """The training horizon at `epoch`: `horizon`, then each curriculum stage from its start epoch on."""
        horizon = self.horizon
        for start, h in sorted(self.curriculum):
            if epoch >= start:
                horizon = h
        return horizon

    @property
    def longest_horizon(self) -> int:
        return max([self.horizon] + [h for _, h in self.curriculum])


def _amplitude_bins(x):
    if isinstance(x, int):
        return None if x >= 1 else "must be >= 1 (bins per state variable) or a mapping of edges"
    for name, edges in x.items():
        if (
            not isinstance(name, str)
            or not isinstance(edges, list)
            or len(edges) < 2
            or not all(_is_real(e) and e >= 0 for e in edges)
            or any(b <= a for a, b in zip(edges[:-1], edges[1:], strict=True))
        ):
            return (
                f"entry {name!r} must be a list of at least two increasing edges >= 0 "
                f"(a state variable's name: [edge, edge, ...])"
            )
    return None


def _regions(x):
    for name, bounds in x.items():
        if not isinstance(name, str) or not isinstance(bounds, dict) or not bounds:
            return (
                f"entry {name!r} must map a region name to {{variable: [centre, radius]}} "
                "with at least one variable"
            )
        for var, cr in bounds.items():
            if (
                not isinstance(var, str)
                or not isinstance(cr, list)
                or len(cr) != 2
                or not all(_is_real(v) for v in cr)
                or not cr[1] > 0
            ):
                return f"entry {name}.{var} = {cr!r} must be [centre, radius] (two numbers, radius > 0)"
    return None


@dataclasses.dataclass(frozen=True)
class EvaluationConfig(_Section):
    windows: int = option(1000, (int,), "number of test windows (the paper: 1000)", positive)
    horizon: int | str = option(
        30,
        (int, str),
        "prediction horizon: steps (the paper: 30 = 0.6 s) or seconds ('0.5s'); `lagnet evaluate --horizon` "
        "overrides it, several at once",
        _horizon,
    )
    long_horizon: int | str = option(
        100,
        (int, str),
        "length of the overlaid long rollout: steps (the paper: 100 = 2 s) or seconds ('2s')",
        _horizon,
    )
    amplitude_bins: int | dict = option(
        3,
        (int, dict),
        "errors split by the windows' initial |q| (angles: wrapped distance from 0) and |q̇|: a number of "
        "equal-count bins per state variable, or {variable: [edge, edge, ...]} (increasing, >= 0)",
        _amplitude_bins,
    )
    regions: dict = option(
        {},
        (dict,),
        "named regions of the state space whose windows are scored apart: {name: {variable: [centre, "
        "radius]}}, e.g. {near_upright: {phi: [3.14159, 0.3]}} (angles measured modulo 2π)",
        _regions,
    )


# The fields of a task given in the config (`lagnet.control.Task`'s), and the ones it must have.
TASK_FIELDS = (
    "name",
    "goal",
    "q",
    "r",
    "u_max",
    "tolerance",
    "hold",
    "seconds",
    "start",
    "start_spread",
    "state_low",
    "state_high",
    "knocks",
    "u_goal",
)
TASK_REQUIRED = ("name", "goal", "q", "r", "u_max", "tolerance", "hold", "seconds", "start")


def _task_list(x):
    for i, entry in enumerate(x):
        if isinstance(entry, str):
            continue
        if not isinstance(entry, dict):
            return f"[{i}]: expected a task's name or a mapping of its fields, got {entry!r}"
        unknown = sorted(set(entry) - set(TASK_FIELDS))
        if unknown:
            return (
                f"[{i}]: unknown field(s) {unknown}; a task's fields are {', '.join(TASK_FIELDS)}"
            )
        missing = [k for k in TASK_REQUIRED if k not in entry]
        if missing:
            return f"[{i}]: missing field(s) {missing} (required: {', '.join(TASK_REQUIRED)})"
    return None


@dataclasses.dataclass(frozen=True)
class ControlConfig(_Section):
    tasks: list = option(
        [],
        (list,),
        "the tasks `lagnet evaluate RUN --control` runs (default, empty: those made for the system): names of "
        "lagnet's tasks (pendulum-swingup, cartpole-swingup, pendubot-swingup, acrobot-swingup, arm-reach) or "
        "tasks of your own, each a mapping of `lagnet.control.Task`'s fields (name, goal, q, r, u_max, "
        "tolerance, hold, seconds, start; optional start_spread, state_low, state_high, knocks [[t, dx], ...], "
        "u_goal), posed on the run's system; `--task` overrides",
        _task_list,
    )
    plant: str | None = option(
        None,
        (str,),
        "the plant the controller runs on: rig, known or model (default: rig where the system has one); "
        "`--plant` overrides",
        one_of(("rig", "known", "model")),
        nullable=True,
    )
    starts: int = option(6, (int,), "closed-loop runs per task, from the task's starts", positive)
    options: dict = option(
        {},
        (dict,),
        "the controller's options, over each task's chosen ones: for a swing-up the iLQR's (`ILQRController`: "
        "horizon_s, iterations, first_iterations, substeps, catch, running, terminal, energy, wall, spread, history), "
        "for any other task (a reach) the LQR's `integral` (integral action, `IntegralLQRController`)",
    )
    paced: bool = option(
        False,
        (bool,),
        "hold the plant to the wall clock, one control period of real time per step, as a rig's driver does: "
        "the report counts the periods whose deadline the controller missed",
    )


@dataclasses.dataclass(frozen=True)
class Config(_Section):
    """A whole run: what to learn (system, model), how to step it (integrator), from what data, how to
    train and how to evaluate. Build one with `validate(mapping)` or `load_config(path)`."""

    name: str = option("run", (str,), "a name for the run (used for the run directory)")
    seed: int = option(
        0, (int,), "seed for parameter init, data order and everything random", non_negative
    )
    dtype: str = option(
        "float32",
        (str,),
        "float32 or float64 for training and evaluation (float64 needs jax_enable_x64, which the CLI sets)",
        one_of(("float32", "float64")),
    )
    devices: str | int = option(
        "auto",
        (str, int),
        "data-parallel training over this many devices (every process's in a multi-process run), "
        "or auto (all, or the most that divide the batch size)",
        _devices,
    )
    system: SystemConfig = dataclasses.field(default_factory=SystemConfig)
    model: ModelConfig = dataclasses.field(default_factory=PinodeModelConfig)
    integrator: IntegratorConfig = dataclasses.field(default_factory=IntegratorConfig)
    data: DataConfig = dataclasses.field(default_factory=DataConfig)
    training: TrainingConfig = dataclasses.field(default_factory=TrainingConfig)
    evaluation: EvaluationConfig = dataclasses.field(default_factory=EvaluationConfig)
    control: ControlConfig = dataclasses.field(default_factory=ControlConfig)

    def replace(self, changes: Mapping | None = None, /, **sections) -> "Config":
        """A new config with nested `changes` merged in and validated again, e.g.
        `config.replace(training={"epochs": 3})`."""
        changes = {**(changes or {}), **sections}
        base = self.to_dict()
        if isinstance(changes.get("model"), Mapping) and "type" in changes["model"]:
            # Another model type keeps only the keys it also reads.
            drop_other_types(base["model"], changes["model"]["type"])
        return validate(_merge(base, changes))


def _merge(base: dict, changes: Mapping) -> dict:
    out = dict(base)
    for k, v in changes.items():
        out[k] = _merge(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), dict) else v
    return out


def _sections(cls) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls)}


def _is_section(field: dataclasses.Field) -> bool:
    return isinstance(field.type, type) and issubclass(field.type, _Section)


_NAMES = {
    int: "an integer",
    float: "a number",
    str: "a string",
    bool: "true/false",
    list: "a list",
    dict: "a mapping",
}


def _expected(meta) -> str:
    kinds = " or ".join(dict.fromkeys(_NAMES[t] for t in meta["types"]))
    return kinds + (" or null" if meta["nullable"] else "")


def _build(cls, user: Any, path: str, where: str):
    if not isinstance(user, Mapping):
        what = path or "the config"
        raise ConfigError(
            f"{where}{what} must be a mapping of keys to values, got {type(user).__name__}"
        )
    fields = _sections(cls)
    values = {}
    for key, value in user.items():
        key_path = f"{path}.{key}" if path else str(key)
        if key not in fields:
            close = difflib.get_close_matches(str(key), list(fields), n=1)
            hint = f"; did you mean {(path + '.' if path else '') + close[0]!r}?" if close else ""
            raise ConfigError(
                f"{where}unknown key {key_path!r}{hint} (expected one of {sorted(fields)})"
            )
        field = fields[key]
        if field.type is ModelConfig:
            values[key] = _build_model({} if value is None else value, key_path, where)
            continue
        if _is_section(field):
            values[key] = _build(field.type, {} if value is None else value, key_path, where)
            continue
        meta = field.metadata
        if value is None:
            if not meta["nullable"]:
                raise ConfigError(
                    f"{where}{key_path} must not be null (expected {_expected(meta)})"
                )
            values[key] = None
            continue
        ok = isinstance(value, meta["types"]) and not (
            isinstance(value, bool) and bool not in meta["types"]
        )
        if not ok:
            hint = ""
            if isinstance(value, str) and float in meta["types"] and _is_number(value):
                hint = f" (YAML reads {value} as text: write it with a decimal point, e.g. {float(value)!r})"
            raise ConfigError(
                f"{where}{key_path} must be {_expected(meta)}, got {value!r} ({type(value).__name__})"
                + hint
            )
        if isinstance(value, float) and not math.isfinite(value):
            # .inf and .nan pass every `> 0` / `>= 0` check the wrong way or not at all.
            raise ConfigError(f"{where}{key_path} must be a finite number, got {value!r}")
        if meta["check"] is not None:
            msg = meta["check"](value)
            if msg:
                raise ConfigError(f"{where}{key_path} {msg}, got {value!r}")
        values[key] = float(value) if meta["types"] == NUM else copy.deepcopy(value)
    return cls(**values)


def _build_model(user: Any, path: str, where: str) -> ModelConfig:
    """The section of the model type `user` names (default pinode); a key of another type names its types."""
    kind = user.get("type", "pinode") if isinstance(user, Mapping) else "pinode"
    if not isinstance(kind, str) or kind not in MODEL_SECTIONS:
        return _build(PinodeModelConfig, {"type": kind}, path, where)  # raises, naming the types
    cls = MODEL_SECTIONS[kind]
    if isinstance(user, Mapping):
        for key in user:
            readers = model_types_reading(key)
            if readers and kind not in readers:
                raise ConfigError(
                    f"{where}{path}.{key}: read only by model types {', '.join(readers)}; "
                    f"this model is {kind!r}"
                )
    return _build(cls, user, path, where)


def model_types_reading(key: object) -> tuple[str, ...]:
    """The model types whose section has `key`, e.g. ("pinode", "blackbox", "potential") for "width"."""
    return tuple(kind for kind, cls in MODEL_SECTIONS.items() if cls.reads(key))


def drop_other_types(model: dict, kind: object) -> list[str]:
    """Remove from a model mapping, in place, the keys that only other types than `kind` read, and return them
    (a key of no type stays, to be refused by name; an unknown `kind` is left for validation to refuse)."""
    if kind not in MODEL_SECTIONS:
        return []
    dropped = [
        k
        for k in model
        if isinstance(k, str) and (readers := model_types_reading(k)) and kind not in readers
    ]
    for name in dropped:
        del model[name]
    return dropped


def model_fields() -> dict[str, dataclasses.Field]:
    """Every key of any model section, once (in the order of MODEL_SECTIONS and their fields)."""
    out = {}
    for cls in MODEL_SECTIONS.values():
        for field in dataclasses.fields(cls):
            out.setdefault(field.name, field)
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def validate(user: object, *, source: str | None = None) -> Config:
    """A complete `Config` (defaults filled in) from a user mapping, or `ConfigError` naming the key path."""
    # `user` is any parsed YAML document: anything but a mapping (or None, all defaults) is a `ConfigError`.
    where = f"{source}: " if source else ""
    config = _build(Config, {} if user is None else user, "", where)
    return _check_consistency(config, where)


def _check_consistency(config: Config, where: str) -> Config:
    sc = config.system
    if sc.name in SOURCED and not sc.source:
        raise ConfigError(f"{where}system.source is required for system.name {sc.name!r}")
    if sc.name not in SOURCED:
        for key in ("source", "coordinates", "angles", "inputs"):
            if getattr(sc, key) is not None:
                raise ConfigError(
                    f"{where}system.{key} is only read for system.name one of {list(SOURCED)}, "
                    f"not {sc.name!r}"
                )
    for i, entry in enumerate(config.training.curriculum):
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
    if config.seed >= 2**63:
        raise ConfigError(f"{where}seed must be < 2**63 (a 64-bit integer), got {config.seed}")
    ic = config.model.setting("identification")
    if ic.anchor == "first_stage" and (ic.method != "solver" or ic.first_stage != "least_squares"):
        raise ConfigError(
            f"{where}model.identification.anchor: first_stage holds the rollout fit to its first stage's "
            "equation-error fit: it needs method: solver and first_stage: least_squares, got method: "
            f"{ic.method}, first_stage: {ic.first_stage}"
        )
    if ic.baseline == "least_squares" and (
        ic.method != "solver" or ic.accept != "every_coordinate"
    ):
        raise ConfigError(
            f"{where}model.identification.baseline: least_squares judges the rollout fit against the "
            "equation-error fit on every validation coordinate: it needs method: solver and accept: "
            f"every_coordinate, got method: {ic.method}, accept: {ic.accept}"
        )
    for key in ("weights_q", "weights_qd"):
        weights = getattr(config.training, key)
        bad = [w for w in weights or () if not _is_real(w) or w < 0]
        if bad:
            raise ConfigError(
                f"{where}training.{key} must be numbers >= 0 (one per coordinate), got entries {bad}"
            )
    data = config.data
    if data.mapping:
        # Checked here, not only when the data are read, so that the error names the config file.
        try:
            ColumnMapping.from_dict(data.mapping, f"{where}data.mapping")
        except ValueError as e:
            raise ConfigError(str(e)) from None
    lists = {
        k: [v] if isinstance(v, str) else v
        for k, v in (("train", data.train), ("test", data.test), ("validation", data.validation))
    }
    for split, files in lists.items():
        bad = [f for f in files if not isinstance(f, str)]
        if bad:
            raise ConfigError(
                f"{where}data.{split} must be file names (strings), got entries {bad}"
            )
    return dataclasses.replace(config, data=dataclasses.replace(data, **lists))


def describe(cls=Config, indent: str = "", values=None) -> str:
    """Every key with its default and meaning, as YAML that is itself a valid config (a template); with `values`
    (a loaded `Config`), every key with that config's value instead: the whole config a file resolves to.

    The model section is the default type's (pinode), or that of `values`; a comment lists the keys of the
    other types."""
    lines = []
    for name, field in _sections(cls).items():
        value = None if values is None else getattr(values, name)
        if field.type is ModelConfig:
            lines.append(f"{indent}{name}:")
            lines.append(
                describe(type(value) if value else PinodeModelConfig, indent + "  ", value)
            )
            for kind, section in MODEL_SECTIONS.items():
                keys = ", ".join(f.name for f in dataclasses.fields(section) if f.name != "type")
                lines.append(f"{indent}  # type {kind} reads: {keys or 'type only'}")
            continue
        if _is_section(field):
            lines.append(f"{indent}{name}:")
            lines.append(describe(field.type, indent + "  ", value))
            continue
        shown = field.default_factory() if values is None else _plain(value)
        text = yaml.safe_dump(shown, default_flow_style=True, width=10_000).strip()
        text = text.removesuffix("\n...").removesuffix("...").strip()
        lines.append(f"{indent}{name}: {text}  # {field.metadata['doc']}")
    return "\n".join(lines)


def _plain(value):
    """A section's value as YAML-safe plain data (tuples as lists)."""
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def dump(config: Config) -> str:
    return yaml.safe_dump(config.to_dict(), sort_keys=False)


def key_paths(cls=Config, prefix: tuple[str, ...] = ()):
    """Every key of the config as a path tuple, e.g. ("training", "epochs"); the model's keys of every type."""
    fields = model_fields() if cls is ModelConfig else _sections(cls)
    for name, field in fields.items():
        if _is_section(field):
            yield from key_paths(field.type, (*prefix, name))
        else:
            yield (*prefix, name)
