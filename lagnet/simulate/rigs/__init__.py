"""The simulated test rigs (`AbstractRig`): a known system plus what it leaves out (`AbstractRigForce`), driven by
a hand, read through sensors."""

from .arm import ArmRig as ArmRig
from .base import AbstractRig as AbstractRig
from .base import AbstractRigForce as AbstractRigForce
from .cartpole import AbstractCartPoleRig as AbstractCartPoleRig
from .cartpole import CartPoleRig as CartPoleRig
from .cartpole_control import CartPoleControlRig as CartPoleControlRig
from .common import recording_rng as recording_rng
from .common import simulate_rig as simulate_rig
from .forces import Cogging as Cogging
from .forces import ConstantForce as ConstantForce
from .forces import EndStops as EndStops
from .forces import StribeckFriction as StribeckFriction
from .pendulum import PendulumRig as PendulumRig
from .potential import PotentialPairs as PotentialPairs
