"""Control with trained models: dynamics as plain functions, linearisation, LQR, MPC, export for deployment."""

from .dynamics import Dynamics as Dynamics
from .dynamics import SelectedInputs as SelectedInputs
from .dynamics import find_equilibrium as find_equilibrium
from .dynamics import linearise as linearise
from .dynamics import linearise_averaged as linearise_averaged
from .dynamics import trim as trim
from .export import ExportedModel as ExportedModel
from .export import export_run as export_run
from .export import load_exported as load_exported
from .load import load as load
from .lqr import closed_loop_stable as closed_loop_stable
from .lqr import dlqr as dlqr
from .lqr import lqr as lqr
from .mpc import ConstrainedMPC as ConstrainedMPC
from .mpc import ConstrainedSolution as ConstrainedSolution
from .mpc import MPCSolution as MPCSolution
from .mpc import ProjectedMPC as ProjectedMPC
from .mpc import ShootingMPC as ShootingMPC
from .mpc import lqr_terminal_cost as lqr_terminal_cost
from .mpc import shift as shift

# Loaded when first asked for: plants and tasks import the simulated rigs, which loading a model does not need.
_LAZY = {
    "gym_env": ("LearnedModelEnv", "RigEnv"),
    "plant": (
        "AbstractPlant",
        "RigPlant",
        "SystemPlant",
        "GymPlant",
        "FunctionPlant",
        "PacedPlant",
    ),
    "tasks": ("Task", "TaskMismatch", "TASKS", "task", "dfki_plant", "dfki_rig"),
    "controllers": (
        "AbstractController",
        "FunctionController",
        "MemoryController",
        "LQRController",
        "IntegralLQRController",
    ),
    "task_loop": ("run_task", "TaskRun"),
    "ilqr": ("ILQR", "ILQRController"),
    "task_evaluation": ("for_task", "evaluate_task"),
    "estimator": ("KalmanFilter", "EstimatingController"),
}


# lagnet.control's public names, in one place (the eager ones above and the lazy ones).
__all__ = (
    "Dynamics",
    "SelectedInputs",
    "find_equilibrium",
    "linearise",
    "linearise_averaged",
    "trim",
    "ExportedModel",
    "export_run",
    "load_exported",
    "load",
    "closed_loop_stable",
    "dlqr",
    "lqr",
    "ConstrainedMPC",
    "ConstrainedSolution",
    "MPCSolution",
    "ProjectedMPC",
    "ShootingMPC",
    "lqr_terminal_cost",
    "shift",
    *(name for names in _LAZY.values() for name in names),
)


def __dir__():
    return sorted(__all__)


def __getattr__(name):
    # Gymnasium is optional: `LearnedModelEnv` is built only when asked for.
    for module, names in _LAZY.items():
        if name in names:
            import importlib

            return getattr(importlib.import_module(f"{__name__}.{module}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
