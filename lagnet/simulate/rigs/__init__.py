"""The simulated test rigs: a known system plus what it leaves out, driven by a hand, read through sensors."""

from .cartpole import CartPoleRig as CartPoleRig
from .cartpole_control import CartPoleControlRig as CartPoleControlRig
from .common import recording_rng as recording_rng
from .common import simulate_rig as simulate_rig
from .pendulum import PendulumRig as PendulumRig
from .potential import PotentialPairs as PotentialPairs
