"""Evaluation of rollouts: window errors, long-rollout physics, figures and reports."""

from .metrics import angle_aware_difference as angle_aware_difference
from .metrics import energy_error as energy_error
from .metrics import hold_errors as hold_errors
from .metrics import reversibility_error as reversibility_error
from .metrics import state_abs_error as state_abs_error
from .metrics import summarise_errors as summarise_errors
from .metrics import valid_prediction_time as valid_prediction_time
from .metrics import window_errors as window_errors
from .run import evaluate_run as evaluate_run
