"""Known + learned models: PINODE, learned potentials, the pure ODE and black-box baselines."""

from .base import AbstractModel, physics_prior
from .blackbox import BlackBox
from .features import OutputScale, StateFeatures
from .friction import fit_friction, residual_force
from .history import InputHistory
from .lecture.passive import ContactNetwork, PassiveFriction
from .mlp import Ensemble, SpectralNormalised, make_mlp
from .pinode import PINODE, start_physics_from
from .potential import LearnedPotential
from .region import TrainingRegion

__all__ = [
    "AbstractModel",
    "physics_prior",
    "BlackBox",
    "OutputScale",
    "StateFeatures",
    "fit_friction",
    "residual_force",
    "InputHistory",
    "ContactNetwork",
    "PassiveFriction",
    "Ensemble",
    "SpectralNormalised",
    "make_mlp",
    "PINODE",
    "start_physics_from",
    "LearnedPotential",
    "TrainingRegion",
]
