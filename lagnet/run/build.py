"""From a config to the objects it names: its system, integrator and model (what `lagnet.load` rebuilds a run
with, so nothing of the training machinery is imported here; the training's loss and optimiser are
`lagnet.run.training`'s).

The model: one builder per `model.type`, each reading its own section (`lagnet.config.schema.MODEL_SECTIONS`).
Each builder takes the validated `Config`, the system, the statistics and a key. With training statistics
(`stats`: stacked samples q, qd, qdd, u) the feature scales and the friction fit come from the data; without, a
skeleton of the right shapes and structure, into which a checkpoint is loaded.
"""

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..config import ConfigError
from ..config.registry import INTEGRATORS, SYSTEMS
from ..config.sources import SOURCED
from ..data.derivatives import robust_spread
from ..models import (
    PINODE,
    BlackBox,
    Ensemble,
    LearnedPotential,
    SpectralNormalised,
    StateFeatures,
    TrainingRegion,
    fit_friction,
    make_mlp,
    residual_force,
)
from ..models.actuator import Actuator
from ..systems.base import AbstractSystem
from ..systems.friction import TERMS, JointFriction


def coordinate_indices(system: AbstractSystem, names, key: str) -> tuple[int, ...]:
    """The indices of coordinate `names`, or a `ConfigError` at `key` naming the valid ones."""
    out = []
    for name in names:
        if name not in system.coordinate_names:
            raise ConfigError(
                f"{key}: {name!r} is not a coordinate of {type(system).__name__} "
                f"(expected some of {list(system.coordinate_names)})"
            )
        out.append(system.coordinate_names.index(name))
    return tuple(out)


def output_scale(setting, size: int, target=None, key: str = "model.output_scale"):
    """The network's output scale: given, or "auto" = 3 × the robust spread of `target` (N, size) (1 without
    data): its 2.5 %-trimmed standard deviation, scaled to σ for normal samples (`robust_spread`), which a few
    wild samples (spikes of differentiated, quantised velocities) do not inflate. `target` is the residual force
    (PINODE) or q̈ (black box) of `sample_statistics`, whose q̈ is the smoothed derivative of the velocities."""
    if setting != "auto":
        scale = (
            np.broadcast_to(np.asarray(setting, float), (size,))
            if np.ndim(setting) == 0
            else np.asarray(setting, float)
        )
        if scale.shape != (size,) or np.any(scale <= 0):
            raise ConfigError(
                f"{key} must be > 0 with {size} entries (one per output), got {setting}"
            )
        return scale
    if target is None:
        return np.ones(size)  # a skeleton: the value is restored from the checkpoint
    spread = robust_spread(np.asarray(target, float))
    return 3 * np.where(spread > 1e-12, spread, 1.0)


def input_limit(config, system: AbstractSystem) -> tuple[float, ...] | None:
    """`model.input_limit` as one limit per input of the system (None: unlimited)."""
    limit = config.model.setting("input_limit")
    if limit is None:
        return None
    values = limit if isinstance(limit, list) else [limit] * system.n_inputs
    if len(values) != system.n_inputs:
        raise ConfigError(
            f"model.input_limit: {type(system).__name__} has {system.n_inputs} input(s) "
            f"{list(system.input_names)}, got {len(values)} limit(s) {values}"
        )
    return tuple(float(v) for v in values)


def _features(config, system: AbstractSystem, stats) -> StateFeatures:
    mc = config.model
    names = system.cyclic_coordinates if mc.hide_position == "cyclic" else mc.hide_position
    hidden_idx = coordinate_indices(system, names, "model.hide_position")
    hidden = tuple(i in hidden_idx for i in range(system.n_dof))
    if stats is not None:
        return StateFeatures.from_data(
            system.angles, stats["q"], stats["qd"], stats["u"], hide_position=hidden
        )
    m_net = system.n_inputs * (1 + mc.setting("input_history"))
    return StateFeatures(system.angles, m_net, hide_position=hidden)


def _mlp(config, features, out_size: int, *, zero: bool, key, activation=None, final=None):
    mc = config.model
    return make_mlp(
        features.size,
        out_size,
        width=mc.width,
        depth=mc.depth,
        activation=mc.activation if activation is None else activation,
        final_activation=mc.final_activation if final is None else final,
        zero_output=zero,
        key=key,
    )


def _friction(config, system: AbstractSystem, stats) -> JointFriction | None:
    """`model.friction`: given coefficients as given, named terms fitted (lstsq) or from zero; None without terms.

    The fit holds the given terms fixed: it explains what is left of the residual force after them.
    """
    fc = config.model.friction
    given, named = {}, {}
    for term in TERMS:
        entry = getattr(fc, term)
        key = f"model.friction.{term}"
        names = list(entry) if isinstance(entry, dict) else entry
        idx = coordinate_indices(system, names, key)
        if isinstance(entry, dict):
            given[term] = {i: float(entry[n]) for i, n in zip(idx, names, strict=True)}
        elif idx:
            named[term] = dict.fromkeys(idx, 0.0)
    if not (given or named):
        return None
    if given.get("stribeck") or named.get("stribeck"):
        if fc.shape != "stribeck":
            raise ConfigError(
                f"model.friction.stribeck needs model.friction.shape: stribeck, got {fc.shape!r}"
            )
    shape = {"shape": fc.shape, "epsilon": fc.epsilon, "stribeck_velocity": fc.stribeck_velocity}
    n = system.n_dof
    if named and stats is not None and fc.fit == "lstsq":
        known = JointFriction(n, **given, **shape) if given else None
        fitted = fit_friction(
            system,
            stats["q"],
            stats["qd"],
            stats["qdd"],
            stats["u"][:, : system.n_inputs],
            JointFriction(n, **named, **shape),
            known=known,
        )
        named = fitted.values_by_term()
    merged = {
        t: {**named.get(t, {}), **given.get(t, {})} for t in TERMS if t in named or t in given
    }
    return JointFriction(n, **merged, **shape)


def _learn_parameters(config, system: AbstractSystem) -> dict:
    """`model.learn_parameters` as name → bounds, checked against the system's parameters."""
    entry = config.model.learn_parameters
    bounds = (
        {k: dict(v or {}) for k, v in entry.items()}
        if isinstance(entry, dict)
        else {k: {} for k in entry}
    )
    for name, bound in bounds.items():
        try:
            value = np.asarray(system.parameter(name))
        except KeyError:
            raise ConfigError(
                f"model.learn_parameters: {type(system).__name__} has no parameter {name!r}"
            ) from None
        except ValueError as e:
            raise ConfigError(f"model.learn_parameters.{name}: {e}") from None
        lower = bound.get("lower", 0.0)
        if lower is not None and np.any(value < lower):
            raise ConfigError(
                f"model.learn_parameters.{name}: starts at {value}, below its lower bound {lower} "
                "(parameters are kept >= 0 unless you give `lower`)"
            )
    return bounds


def build_known(config, system: AbstractSystem, stats, *, key) -> PINODE:
    """The known system with any given friction, q̈ = M⁻¹ (B u + Q_f − C q̇ − G); nothing is trained."""
    return PINODE(
        system,
        friction=_friction(config, system, stats),
        friction_trainable=False,
        input_limit=input_limit(config, system),
    )


def build_pure_ode(config, system: AbstractSystem, stats, *, key) -> PINODE:
    """Known physics + parametric friction (least squares, the paper's eq. 13), no network."""
    mc = config.model  # a PureOdeModelConfig: the keys of this type only
    return PINODE(
        system,
        friction=_friction(config, system, stats),
        learn_parameters=_learn_parameters(config, system),
        input_history=mc.input_history,
        input_limit=input_limit(config, system),
        friction_trainable=mc.friction.trainable,
        actuator=_actuator(config, system, stats),
    )


def _actuator(config, system: AbstractSystem, stats) -> Actuator | None:
    """`model.actuator_lag` / `actuator_delay`: a drive's lag and dead time at the data's step (a placeholder
    step when the model is built to load a run: the step is a saved leaf)."""
    mc = config.model
    if mc.actuator_lag is None and mc.actuator_delay is None:
        return None
    dt = 1.0 if stats is None else stats["dt"]
    try:
        return Actuator(
            mc.actuator_lag or 0.0,
            mc.actuator_delay or 0.0,
            dt,
            system.n_inputs,
            mc.input_history,
            # Only what the config gives is identified: the other stays at 0.
            learned=tuple(
                name
                for name, value in (
                    ("time_constant", mc.actuator_lag),
                    ("delay", mc.actuator_delay),
                )
                if value is not None
            ),
        )
    except ValueError as e:
        raise ConfigError(f"model.actuator_lag / actuator_delay: {e}") from None


def build_pinode(config, system: AbstractSystem, stats, *, key) -> PINODE:
    """Known physics + friction + a residual network s ⊙ Q_θ on the coordinates `force_on`."""
    mc = config.model  # a PinodeModelConfig: the keys of this type only
    features = _features(config, system, stats)
    friction = _friction(config, system, stats)
    force_on = (
        coordinate_indices(system, mc.force_on, "model.force_on")
        if mc.force_on is not None
        else tuple(range(system.n_dof))
    )

    def residual_network(key):
        network = _mlp(config, features, len(force_on), zero=mc.zero_init, key=key)
        return network if mc.lipschitz is None else SpectralNormalised(network, mc.lipschitz)

    network = (
        residual_network(key)
        if mc.ensemble is None
        else Ensemble(residual_network, jax.random.split(key, mc.ensemble), mc.ensemble_tolerance)
    )
    target = (
        None
        if stats is None
        else residual_force(
            system,
            stats["q"],
            stats["qd"],
            stats["qdd"],
            stats["u"][:, : system.n_inputs],
            friction,
        )[:, list(force_on)]
    )
    scale = output_scale(mc.output_scale, len(force_on), target)
    region = None
    if mc.gate == "box":
        region = (
            TrainingRegion(system.angles, margin=mc.gate_margin)
            if stats is None
            else TrainingRegion.from_data(
                system.angles, stats["q"], stats["qd"], margin=mc.gate_margin
            )
        )
    return PINODE(
        system,
        friction=friction,
        network=network,
        features=features,
        learn_parameters=_learn_parameters(config, system),
        force_on=force_on,
        output_scale=scale,
        input_history=mc.input_history,
        input_limit=input_limit(config, system),
        friction_trainable=mc.friction.trainable,
        region=region,
        zero_at_rest=mc.zero_at_rest,
        actuator=_actuator(config, system, stats),
    )


def build_blackbox(config, system: AbstractSystem, stats, *, key) -> BlackBox:
    """A neural ODE q̈ = s ⊙ f_θ(q, q̇, u) with the PINODE's features and size."""
    mc = config.model  # a BlackBoxModelConfig: the keys of this type only
    features = _features(config, system, stats)
    scale = output_scale(mc.output_scale, system.n_dof, None if stats is None else stats["qdd"])
    network = _mlp(config, features, system.n_dof, zero=False, key=key)
    return BlackBox(system, network, features, scale, mc.input_history, input_limit(config, system))


def build_potential(config, system: AbstractSystem, stats, *, key) -> LearnedPotential:
    """A learned potential V_θ(q) (+ optional passive dissipation and a learned constant mass matrix)."""
    mc = config.model  # a PotentialModelConfig: the keys of this type only
    if mc.activation == "relu":
        # V_θ's gradient is the force: a ReLU network makes it piecewise constant, and leapfrog's
        # accuracy and the energy behaviour rest on a smooth potential.
        raise ConfigError(
            "model.activation: relu is not smooth enough for a learned potential (its force would be "
            "piecewise constant); use tanh, softplus, gelu, silu or elu"
        )
    n = system.n_dof
    features = _features(config, system, stats)
    k1, k2 = jax.random.split(key)
    potential = _mlp(config, features, 1, zero=False, key=k1, final="identity")
    # Not zero: D = ½ q̇ᵀRRᵀq̇ has zero gradient in R at R = 0, so it would never learn.
    dissipation = (
        _mlp(config, features, n * n, zero=False, key=k2, activation="tanh", final="identity")
        if mc.dissipation
        else None
    )
    mass_factor = jnp.zeros((n, n)) if mc.learn_mass else None
    return LearnedPotential(system, potential, features, mass_factor, dissipation)


# Each builds the model from the validated config, the system and the training statistics (None: a skeleton).
MODELS: dict[str, Callable] = {
    "pinode": build_pinode,
    "pure_ode": build_pure_ode,
    "blackbox": build_blackbox,
    "potential": build_potential,
    "known": build_known,
}


def build_system(config) -> AbstractSystem:
    """The known system of `config.system`: the registered factory called with `system.params`, or the system
    its `source` gives (see `lagnet.config.sources`)."""
    name, params = config.system.name, config.system.params
    if name in SOURCED:
        return SOURCED[name](config.system)
    try:
        return SYSTEMS[name](**params)
    except (TypeError, ValueError) as e:
        # e.g. "could not convert string to float: 'a'": say which values were given.
        raise ConfigError(f"system.params: {e} (system {name!r}, params {params})") from None


def build_integrator(config):
    """The integrator of `config.integrator`."""
    return INTEGRATORS[config.integrator.name](config.integrator)


def build_model(config, system: AbstractSystem, stats=None, *, key):
    """The model of `config.model` around `system`; `stats` (stacked training samples q, qd, qdd, u) give the
    feature scales and the friction fit, without them a skeleton to load a checkpoint into."""
    return MODELS[config.model.type](config, system, stats, key=key)
