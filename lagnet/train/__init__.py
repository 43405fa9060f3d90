"""Training through the solver, as a library: the loss and `fit`."""

from .fit import Callback, FitResult, TrainingDiverged, TrainState, fit, init_optimizer
from .loss import StateLoss, batch_loss, window_loss

__all__ = [
    "fit",
    "Callback",
    "FitResult",
    "TrainingDiverged",
    "TrainState",
    "init_optimizer",
    "StateLoss",
    "batch_loss",
    "window_loss",
]
