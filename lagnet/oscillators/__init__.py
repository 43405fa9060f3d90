"""Schemes specific to the lecture's nonlinear oscillators and networks.

- `CentredImplicit`: δ_tt q = a(q, δ_t· q, u) with a warm-started Newton solve per step (the bowed string).
- `LinearlyImplicitEuler`: backward Euler, one Newton step, matrix-free CG (cloth).
- `hopf_onset`, `spectral_radius_at_rest`, `limit_cycle_amplitude`: where numerics moves a bifurcation.
"""

from .bifurcation import hopf_onset as hopf_onset
from .bifurcation import limit_cycle_amplitude as limit_cycle_amplitude
from .bifurcation import spectral_radius_at_rest as spectral_radius_at_rest
from .bifurcation import step_jacobian as step_jacobian
from .bow_scheme import CentredImplicit as CentredImplicit
from .bow_scheme import NewtonSolution as NewtonSolution
from .bow_scheme import centred_velocities as centred_velocities
from .cloth_solver import LinearlyImplicitEuler as LinearlyImplicitEuler
