"""Integrators for second-order systems q̈ = a(q, q̇, u), one method per file.

`base.py` holds the interfaces (`AbstractIntegrator`, `AbstractImplicitIntegrator` and its `AbstractRootFinder`),
`newton.py` the default root finder. Their numerical analysis (step matrices, stability, energy drift, Hopf onsets)
is `lagnet.integrator_analysis`, above `rollout`, whose runs it measures.
"""

from .backward_euler import BackwardEuler
from .base import AbstractImplicitIntegrator, AbstractIntegrator, AbstractRootFinder, StepInfo
from .centred_implicit import CentredImplicit, NewtonSolution, centred_velocities
from .conservative_duffing import ConservativeDuffing
from .forward_euler import ForwardEuler
from .leapfrog import Leapfrog
from .linearly_implicit_euler import LinearlyImplicitEuler
from .newmark import Newmark
from .newton import Newton
from .rk4 import RK4
from .symplectic_euler import SymplecticEuler
from .variational import Variational


def __getattr__(name):
    # diffrax takes about half a second to import and only reference solutions use it: loaded on first use.
    if name == "DiffraxReference":
        from .diffrax_reference import DiffraxReference

        return DiffraxReference
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BackwardEuler",
    "AbstractImplicitIntegrator",
    "AbstractIntegrator",
    "AbstractRootFinder",
    "StepInfo",
    "CentredImplicit",
    "NewtonSolution",
    "centred_velocities",
    "ConservativeDuffing",
    "ForwardEuler",
    "Leapfrog",
    "LinearlyImplicitEuler",
    "Newmark",
    "Newton",
    "RK4",
    "SymplecticEuler",
    "Variational",
    "DiffraxReference",
]
