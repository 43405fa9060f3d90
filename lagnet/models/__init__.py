"""Known + learned models: PINODE, learned potentials, the pure ODE and black-box baselines."""

from .base import AbstractModel as AbstractModel
from .base import physics_prior as physics_prior
from .blackbox import BlackBox as BlackBox
from .features import OutputScale as OutputScale
from .features import StateFeatures as StateFeatures
from .friction import fit_friction as fit_friction
from .friction import residual_force as residual_force
from .history import InputHistory as InputHistory
from .lecture.passive import ContactNetwork as ContactNetwork
from .lecture.passive import PassiveFriction as PassiveFriction
from .mlp import Ensemble as Ensemble
from .mlp import SpectralNormalised as SpectralNormalised
from .mlp import make_mlp as make_mlp
from .pinode import PINODE as PINODE
from .pinode import start_physics_from as start_physics_from
from .potential import LearnedPotential as LearnedPotential
from .region import TrainingRegion as TrainingRegion
