"""The systems and integrators a config may name, mapped to what builds them: validation reads the names,
`lagnet.run.build` calls the factories.

`register_system(name, factory)` adds a system for libraries built on lagnet; the config then accepts
`system.name: <name>` with `system.params` passed to `factory(**params)`.
"""

from collections.abc import Callable

from .. import integrators as _integrators
from .. import systems as _systems
from ..systems.base import AbstractSystem
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
