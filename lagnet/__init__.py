"""lagnet: learning the dynamics of mechanical systems with physics built in.

The data flow: `systems` (known physics) → `models` (known + learned parts) → `integrators` → `rollout` →
`fit` (the library training loop) → `run` (a trained run: spec, files, loading) → `evaluate` / `control`.
`data` loads recorded trajectories; `simulate` (the simulated rigs, one closed loop, the dataset generators) sits
above `rollout`; `config` is the typed YAML schema and the registry of names.
"""

from . import config as config
from . import control as control
from . import data as data
from . import integrators as integrators
from . import models as models
from . import parallel as parallel
from . import run as run
from . import simulate as simulate
from . import systems as systems
from ._errors import DataError as DataError
from ._errors import LagnetError as LagnetError
from ._version import __version__ as __version__
from .config import Config as Config
from .config import ConfigError as ConfigError
from .config import load_config as load_config
from .config import register_system as register_system
from .config.sources import trust_code as trust_code
from .control import Dynamics as Dynamics
from .control import load as load
from .control import load_exported as load_exported
from .data import Trajectory as Trajectory
from .data import load_dataset as load_dataset
from .data import load_trajectories as load_trajectories
from .data import load_trajectory as load_trajectory
from .integrators import RK4 as RK4
from .integrators import AbstractImplicitIntegrator as AbstractImplicitIntegrator
from .integrators import AbstractIntegrator as AbstractIntegrator
from .integrators import AbstractRootFinder as AbstractRootFinder
from .integrators import BackwardEuler as BackwardEuler
from .integrators import ForwardEuler as ForwardEuler
from .integrators import Leapfrog as Leapfrog
from .integrators import Newmark as Newmark
from .integrators import Newton as Newton
from .integrators import StepInfo as StepInfo
from .integrators import SymplecticEuler as SymplecticEuler
from .integrators import Variational as Variational
from .models import PINODE as PINODE
from .models import AbstractModel as AbstractModel
from .models import BlackBox as BlackBox
from .models import InputHistory as InputHistory
from .models import LearnedPotential as LearnedPotential
from .models.consistency import NonPhysicalModel as NonPhysicalModel
from .rollout import RolloutSolution as RolloutSolution
from .rollout import rollout as rollout
from .rollout import rollout_solution as rollout_solution
from .systems import AbstractDynamics as AbstractDynamics
from .systems import AbstractLagrangianDynamics as AbstractLagrangianDynamics
from .systems import AbstractSystem as AbstractSystem
from .systems import CartPole as CartPole
from .systems import DoublePendulum as DoublePendulum
from .systems import Duffing as Duffing
from .systems import Lagrangian as Lagrangian
from .systems import MassSpringChain as MassSpringChain
from .systems import Pendulum as Pendulum


def __getattr__(name):
    # Training and evaluation pull in the optimiser, the training loop and plotting: loaded when first used,
    # so that `import lagnet` (and loading a run into a controller) does not; so is diffrax.
    import importlib

    if name == "DiffraxReference":
        return integrators.DiffraxReference
    if name in ("train", "evaluate"):
        return importlib.import_module(f"{__name__}.{name}")
    if name == "fit":
        return importlib.import_module(f"{__name__}.train").fit
    if name == "train_run":
        return importlib.import_module(f"{__name__}.run.training").train_run
    if name == "cross_validate":
        return importlib.import_module(f"{__name__}.cross_validation").cross_validate
    if name == "learn_to_control":
        return importlib.import_module(f"{__name__}.learn").learn_to_control
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# lagnet's public names, in one place: what `from lagnet import *` gives and what completion shows. The
# namespaces for one job each are `lagnet.control` (controllers, plants, tasks, export), `lagnet.data`,
# `lagnet.systems`, `lagnet.models`, `lagnet.integrators`, `lagnet.train` and `lagnet.evaluate`.
__all__ = (
    # errors
    "LagnetError",
    "ConfigError",
    "DataError",
    "NonPhysicalModel",
    # systems: the known physics
    "AbstractDynamics",
    "AbstractLagrangianDynamics",
    "AbstractSystem",
    "Lagrangian",
    "Pendulum",
    "DoublePendulum",
    "CartPole",
    "Duffing",
    "MassSpringChain",
    # models: known physics + learned parts
    "AbstractModel",
    "PINODE",
    "BlackBox",
    "LearnedPotential",
    "InputHistory",
    # integrators and rollouts
    "AbstractIntegrator",
    "AbstractImplicitIntegrator",
    "AbstractRootFinder",
    "RK4",
    "Leapfrog",
    "SymplecticEuler",
    "ForwardEuler",
    "BackwardEuler",
    "Newmark",
    "Variational",
    "Newton",
    "StepInfo",
    "DiffraxReference",
    "rollout",
    "rollout_solution",
    "RolloutSolution",
    # data
    "Trajectory",
    "load_trajectory",
    "load_trajectories",
    "load_dataset",
    # configs, training, cross-validation
    "Config",
    "load_config",
    "register_system",
    "trust_code",
    "fit",
    "train_run",
    "cross_validate",
    # trained models as plain functions, and control
    "load",
    "load_exported",
    "Dynamics",
    "learn_to_control",
    # the namespaces
    "config",
    "control",
    "data",
    "evaluate",
    "integrators",
    "models",
    "parallel",
    "run",
    "simulate",
    "systems",
    "train",
    "__version__",
)


def __dir__():
    return sorted(set(__all__))
