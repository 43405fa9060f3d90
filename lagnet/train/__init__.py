"""Training through the solver, as a library: the loss and `fit`."""

from .fit import Callback as Callback
from .fit import FitResult as FitResult
from .fit import TrainingDiverged as TrainingDiverged
from .fit import TrainState as TrainState
from .fit import fit as fit
from .fit import init_optimizer as init_optimizer
from .loss import StateLoss as StateLoss
from .loss import batch_loss as batch_loss
from .loss import window_loss as window_loss
