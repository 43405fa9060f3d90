"""Integrators for second-order systems q̈ = a(q, q̇, u), one method per file.

`base.py` holds the interfaces (`AbstractIntegrator`, `AbstractImplicitIntegrator` and its `AbstractRootFinder`),
`newton.py` the default root finder. Their numerical analysis (step matrices, stability, energy drift, Hopf onsets)
is `lagnet.integrator_analysis`, above `rollout`, whose runs it measures.
"""

from .backward_euler import BackwardEuler as BackwardEuler
from .base import AbstractImplicitIntegrator as AbstractImplicitIntegrator
from .base import AbstractIntegrator as AbstractIntegrator
from .base import AbstractRootFinder as AbstractRootFinder
from .base import StepInfo as StepInfo
from .centred_implicit import CentredImplicit as CentredImplicit
from .centred_implicit import NewtonSolution as NewtonSolution
from .centred_implicit import centred_velocities as centred_velocities
from .conservative_duffing import ConservativeDuffing as ConservativeDuffing
from .forward_euler import ForwardEuler as ForwardEuler
from .leapfrog import Leapfrog as Leapfrog
from .linearly_implicit_euler import LinearlyImplicitEuler as LinearlyImplicitEuler
from .newmark import Newmark as Newmark
from .newton import Newton as Newton
from .rk4 import RK4 as RK4
from .symplectic_euler import SymplecticEuler as SymplecticEuler
from .variational import Variational as Variational


def __getattr__(name):
    # diffrax takes about half a second to import and only reference solutions use it: loaded on first use.
    if name == "DiffraxReference":
        from .diffrax_reference import DiffraxReference

        return DiffraxReference
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
