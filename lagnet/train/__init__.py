"""Training through the solver."""

from .build import build_integrator as build_integrator
from .build import build_model as build_model
from .build import build_system as build_system
from .loop import TrainResult as TrainResult
from .loop import load_model as load_model
from .loop import train as train
from .loss import StateLoss as StateLoss
from .loss import batch_loss as batch_loss
from .loss import window_loss as window_loss
