"""Integrators for second-order systems q̈ = a(q, q̇, u), one method per file."""

from .backward_euler import BackwardEuler as BackwardEuler
from .base import AbstractIntegrator as AbstractIntegrator
from .base import StepInfo as StepInfo
from .diffrax_reference import DiffraxReference as DiffraxReference
from .forward_euler import ForwardEuler as ForwardEuler
from .leapfrog import Leapfrog as Leapfrog
from .newmark import Newmark as Newmark
from .rk4 import RK4 as RK4
from .symplectic_euler import SymplecticEuler as SymplecticEuler
from .variational import Variational as Variational
