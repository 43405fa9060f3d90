"""Evaluation of rollouts: window errors, long-rollout physics, figures and reports."""

from .metrics import (
    angle_aware_difference,
    energy_error,
    hold_errors,
    reversibility_error,
    state_abs_error,
    summarise_errors,
    valid_prediction_time,
    window_errors,
)
from .run import evaluate_run

__all__ = [
    "angle_aware_difference",
    "energy_error",
    "hold_errors",
    "reversibility_error",
    "state_abs_error",
    "summarise_errors",
    "valid_prediction_time",
    "window_errors",
    "evaluate_run",
]
