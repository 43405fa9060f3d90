"""The names a config may use, mapped to the classes they build: one registry for validation and building.

`register_system(name, factory)` adds a system for libraries built on lagnet; the config then accepts
`system.name: <name>` with `system.params` passed to `factory(**params)`.
"""

from collections.abc import Callable

from .. import integrators as _integrators
from .. import systems as _systems
from ..systems.base import AbstractSystem
from . import model_builders as _models
from .errors import ConfigError
from .sources import SOURCED

SYSTEMS: dict[str, Callable[..., AbstractSystem]] = {
    "pendulum": _systems.Pendulum,
    "cartpole": _systems.CartPole,
    "double_pendulum": _systems.DoublePendulum,
    "acrobot": _systems.DoublePendulum.acrobot,
    "pendubot": _systems.DoublePendulum.pendubot,
    "duffing": _systems.Duffing,
    "mass_spring_chain": _systems.MassSpringChain,
}

# Each builds the integrator from the validated `integrator` section (its `beta`, `gamma`, ...).
INTEGRATORS: dict[str, Callable] = {
    "rk4": lambda c: _integrators.RK4(),
    "leapfrog": lambda c: _integrators.Leapfrog(),
    "symplectic_euler": lambda c: _integrators.SymplecticEuler(),
    "forward_euler": lambda c: _integrators.ForwardEuler(),
    "backward_euler": lambda c: _integrators.BackwardEuler(),
    "newmark": lambda c: _integrators.Newmark(beta=c.beta, gamma=c.gamma),
    "variational": lambda c: _integrators.Variational(),
}


# Each builds the model from the validated config, the system and the training statistics (None: a skeleton).
MODELS: dict[str, Callable] = {
    "pinode": _models.build_pinode,
    "pure_ode": _models.build_pure_ode,
    "blackbox": _models.build_blackbox,
    "potential": _models.build_potential,
    "known": _models.build_known,
}
MODEL_TYPES = tuple(MODELS)


def register_system(name: str, factory: Callable[..., AbstractSystem]) -> None:
    """Make `system.name: name` valid in configs; `factory(**system.params)` must return an `AbstractSystem`.

    A name already taken raises `ValueError` (register under a new name rather than shadow a shipped system).
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"register_system: name must be a non-empty string, got {name!r}")
    if name in SYSTEMS or name in SOURCED:
        raise ValueError(f"register_system: {name!r} is already registered")
    if not callable(factory):
        raise TypeError(f"register_system: factory must be callable, got {type(factory).__name__}")
    SYSTEMS[name] = factory


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
