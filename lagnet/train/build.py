"""From a validated config to objects: the registry of known classes (nothing is imported by name from a file)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from .. import integrators as _integrators
from .. import systems as _systems
from ..config import ConfigError
from ..models import (
    PINODE,
    BlackBox,
    Friction,
    LearnedPotential,
    StateFeatures,
    fit_friction,
    make_mlp,
)

SYSTEM_REGISTRY = {
    "pendulum": lambda **p: _systems.Pendulum(**p),
    "cartpole": lambda **p: _systems.CartPole(**p),
    "double_pendulum": lambda **p: _systems.DoublePendulum(**p),
    "acrobot": lambda **p: _systems.DoublePendulum.acrobot(**p),
    "pendubot": lambda **p: _systems.DoublePendulum.pendubot(**p),
    "duffing": lambda **p: _systems.Duffing(**p),
    "mass_spring_chain": lambda **p: _systems.MassSpringChain(**p),
}

INTEGRATOR_REGISTRY = {
    "rk4": lambda c: _integrators.RK4(),
    "leapfrog": lambda c: _integrators.Leapfrog(),
    "symplectic_euler": lambda c: _integrators.SymplecticEuler(),
    "forward_euler": lambda c: _integrators.ForwardEuler(),
    "backward_euler": lambda c: _integrators.BackwardEuler(),
    "newmark": lambda c: _integrators.Newmark(beta=c["beta"], gamma=c["gamma"]),
    "variational": lambda c: _integrators.Variational(),
}


def with_input_history(traj, history: int):
    """A trajectory whose inputs also carry the last `history` inputs (see `augment_inputs`)."""
    if history == 0:
        return traj
    names = traj.input_names + tuple(
        f"{name}[t-{lag}]" for lag in range(1, history + 1) for name in traj.input_names
    )
    return dataclasses.replace(traj, u=augment_inputs(traj.u, history), input_names=names)


def load_recordings(config: dict, system, paths):
    """The trajectories in `paths`, mapped by `data.mapping` and prepared as the model consumes them: the
    inputs extended by the model's input history, the time stamps replaced by `integrator.dt` when it is fixed."""
    from ..data.loader import load_trajectories

    trajs = []
    for path in paths:
        trajs.extend(load_trajectories(path, config["data"]["mapping"], system=system))
    history = config["model"]["input_history"]
    trajs = [with_input_history(t, history) for t in trajs]
    dt = config["integrator"]["dt"]
    if dt is not None:
        trajs = [dataclasses.replace(t, t=t.t[0] + dt * np.arange(t.n_rows)) for t in trajs]
    return trajs


def build_system(config: dict):
    name, params = config["system"]["name"], config["system"]["params"]
    try:
        return SYSTEM_REGISTRY[name](**params)
    except TypeError as e:
        raise ConfigError(f"system.params: {e} (system {name!r})") from None


def build_integrator(config: dict):
    return INTEGRATOR_REGISTRY[config["integrator"]["name"]](config["integrator"])


def _coordinate_indices(system, names, key: str) -> tuple[int, ...]:
    out = []
    for name in names:
        if name not in system.coordinate_names:
            raise ConfigError(
                f"{key}: {name!r} is not a coordinate of {config_system_name(system)} "
                f"(expected some of {list(system.coordinate_names)})"
            )
        out.append(system.coordinate_names.index(name))
    return tuple(out)


def config_system_name(system) -> str:
    return type(system).__name__


def augment_inputs(u: np.ndarray, history: int) -> np.ndarray:
    """(T, m) → (T, m (k + 1)): each row holds u_t, u_{t−1}, …, u_{t−k} (newest first; zeros before the start)."""
    if history == 0:
        return u
    cols = [u]
    for lag in range(1, history + 1):
        shifted = np.zeros_like(u)
        shifted[lag:] = u[:-lag]
        cols.append(shifted)
    return np.concatenate(cols, axis=1)


def _output_scale(setting, size: int, target=None, key: str = "model.output_scale"):
    """The network's output scale: given, or "auto" = 3 × the spread of `target` (N, size) (1 without data)."""
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
    spread = np.std(np.asarray(target), axis=0)
    return 3 * np.where(spread > 1e-12, spread, 1.0)


def residual_force(system, data, friction=None):
    """M q̈ − (B u − C q̇ − G) − Q_f(q̇) on the samples: what a residual network must supply, (N, n)."""

    def one(q, qd, qdd, u):
        r = system.mass_matrix(q) @ qdd - system.generalised_force(q, qd, u)
        return r - friction(qd) if friction is not None else r

    m = system.n_inputs
    args = (jnp.asarray(data[k]) for k in ("q", "qd", "qdd"))
    return np.asarray(jax.vmap(one)(*args, jnp.asarray(data["u"][:, :m])))


def build_model(config: dict, system, data=None, *, key):
    """The model the config describes. With `data` (a dict of stacked training samples q, qd, qdd, u) the feature
    statistics and the friction fit come from it; without, a skeleton of the right shapes (to load a checkpoint into).
    """
    mc = config["model"]
    kind = mc["type"]
    n, m = system.n_dof, system.n_inputs
    m_net = m * (1 + mc["input_history"])
    hidden_idx = _coordinate_indices(system, mc["hide_position"], "model.hide_position")
    hidden = tuple(i in hidden_idx for i in range(n))
    if data is not None:
        features = StateFeatures.from_data(
            system.angles, data["q"], data["qd"], data["u"], hide_position=hidden
        )
    else:
        features = StateFeatures(system.angles, m_net, hide_position=hidden)

    def mlp(out_size, zero):
        return make_mlp(
            features.size,
            out_size,
            width=mc["width"],
            depth=mc["depth"],
            activation=mc["activation"],
            final_activation=mc["final_activation"],
            zero_output=zero,
            key=key,
        )

    if kind == "known":
        return PINODE(system)
    if kind in ("pinode", "pure_ode"):
        fc = mc["friction"]
        coulomb = _coordinate_indices(system, fc["coulomb"], "model.friction.coulomb")
        viscous = _coordinate_indices(system, fc["viscous"], "model.friction.viscous")
        friction = None
        if coulomb or viscous:
            mask_c = tuple(i in coulomb for i in range(n))
            mask_v = tuple(i in viscous for i in range(n))
            if data is not None and fc["fit"] == "lstsq":
                friction = fit_friction(
                    system,
                    data["q"],
                    data["qd"],
                    data["qdd"],
                    data["u"][:, :m],
                    coulomb=mask_c,
                    viscous=mask_v,
                    epsilon=fc["epsilon"],
                )
            else:
                friction = Friction.zeros(n, fc["epsilon"])
        network = None
        force_on = None
        if kind == "pinode":
            force_on = (
                _coordinate_indices(system, mc["force_on"], "model.force_on")
                if mc["force_on"] is not None
                else tuple(range(n))
            )
            network = mlp(len(force_on), mc["zero_init"])
            target = (
                None if data is None else residual_force(system, data, friction)[:, list(force_on)]
            )
            scale = _output_scale(mc["output_scale"], len(force_on), target)
        for name in mc["learn_parameters"]:
            if not isinstance(getattr(system, name, None), jax.Array):
                raise ConfigError(
                    f"model.learn_parameters: {config_system_name(system)} has no parameter {name!r}"
                )
        return PINODE(
            system,
            friction=friction,
            network=network,
            features=features if network is not None else None,
            learn_parameters=tuple(mc["learn_parameters"]),
            force_on=force_on,
            output_scale=scale if network is not None else 1.0,
            input_history=mc["input_history"],
            friction_trainable=mc["friction"]["trainable"],
        )
    if kind == "blackbox":
        scale = _output_scale(mc["output_scale"], n, None if data is None else data["qdd"])
        return BlackBox(system, mlp(n, False), features, scale, mc["input_history"])
    if kind == "potential":
        if mc["activation"] == "relu":
            # V_θ's gradient is the force: a ReLU network makes it piecewise constant, and leapfrog's
            # accuracy and the energy behaviour rest on a smooth potential.
            raise ConfigError(
                "model.activation: relu is not smooth enough for a learned potential (its force would be "
                "piecewise constant); use tanh, softplus, gelu, silu or elu"
            )
        k1, k2 = jax.random.split(key)
        potential = make_mlp(
            features.size,
            1,
            width=mc["width"],
            depth=mc["depth"],
            activation=mc["activation"],
            final_activation="identity",
            zero_output=False,
            key=k1,
        )
        dissipation = (
            make_mlp(
                features.size,
                n * n,
                width=mc["width"],
                depth=mc["depth"],
                activation="tanh",
                final_activation="identity",
                # Not zero: D = ½ q̇ᵀRRᵀq̇ has zero gradient in R at R = 0, so it would never learn.
                zero_output=False,
                key=k2,
            )
            if mc["dissipation"]
            else None
        )
        mass_factor = jnp.zeros((n, n)) if mc["learn_mass"] else None
        return LearnedPotential(system, potential, features, mass_factor, dissipation)
    raise ConfigError(f"model.type {kind!r} is not known")
