"""Simulated rigs: a known system plus the forces, actuator and sensors it leaves out, run in closed loop.

Above `rollout` in the data flow (it steps plants with the integrators); `lagnet.data` only loads what these
generators write.
"""

from .actuator import Actuator as Actuator
from .closed_loop import ClosedLoopSolution as ClosedLoopSolution
from .closed_loop import closed_loop as closed_loop
from .generate import GENERATORS as GENERATORS
from .generate import Generator as Generator
from .generate import generate as generate
from .generate import rig_from_meta as rig_from_meta
from .generate import true_plant as true_plant
from .host_controller_loop import ControllerRun as ControllerRun
from .host_controller_loop import SampledRig as SampledRig
from .host_controller_loop import rig_sampler as rig_sampler
from .host_controller_loop import run_controller as run_controller
from .plant import Plant as Plant
from .rigs import AbstractRig as AbstractRig
from .rigs import AbstractRigForce as AbstractRigForce
from .rigs import ArmRig as ArmRig
from .rigs import CartPoleControlRig as CartPoleControlRig
from .rigs import CartPoleRig as CartPoleRig
from .rigs import Cogging as Cogging
from .rigs import ConstantForce as ConstantForce
from .rigs import EndStops as EndStops
from .rigs import PendulumRig as PendulumRig
from .rigs import PotentialPairs as PotentialPairs
from .rigs import StribeckFriction as StribeckFriction
from .rigs import simulate_rig as simulate_rig
from .sensors import OpticalEncoder as OpticalEncoder
from .sensors import UltrasonicSensor as UltrasonicSensor
from .sensors import backward_velocity as backward_velocity
