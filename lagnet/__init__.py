"""lagnet: learning the dynamics of mechanical systems with physics built in.

The data flow: `systems` (known physics) → `models` (known + learned parts) → `integrators` → `rollout` →
`train` → `evaluate` / `control`; `data` loads and simulates trajectories.
"""

from . import control as control
from . import data as data
from . import evaluate as evaluate
from . import integrators as integrators
from . import models as models
from . import oscillators as oscillators
from . import parallel as parallel
from . import systems as systems
from . import train as train
from .config import ConfigError as ConfigError
from .config import load_config as load_config
from .control import Dynamics as Dynamics
from .control import load as load
from .data import Trajectory as Trajectory
from .data import load_dataset as load_dataset
from .data import load_trajectories as load_trajectories
from .data import load_trajectory as load_trajectory
from .integrators import RK4 as RK4
from .integrators import AbstractIntegrator as AbstractIntegrator
from .integrators import BackwardEuler as BackwardEuler
from .integrators import DiffraxReference as DiffraxReference
from .integrators import ForwardEuler as ForwardEuler
from .integrators import Leapfrog as Leapfrog
from .integrators import Newmark as Newmark
from .integrators import StepInfo as StepInfo
from .integrators import SymplecticEuler as SymplecticEuler
from .integrators import Variational as Variational
from .models import PINODE as PINODE
from .models import AbstractModel as AbstractModel
from .models import BlackBox as BlackBox
from .models import LearnedPotential as LearnedPotential
from .rollout import RolloutSolution as RolloutSolution
from .rollout import rollout as rollout
from .rollout import rollout_solution as rollout_solution
from .rollout import rollout_windows as rollout_windows
from .rollout import sliding_windows as sliding_windows
from .systems import AbstractSystem as AbstractSystem
from .systems import CartPole as CartPole
from .systems import DoublePendulum as DoublePendulum
from .systems import Duffing as Duffing
from .systems import Lagrangian as Lagrangian
from .systems import MassSpringChain as MassSpringChain
from .systems import Pendulum as Pendulum

__version__ = "0.1.0"
