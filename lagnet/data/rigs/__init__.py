"""Simulated test rigs: a known system plus what it leaves out, sampled through realistic sensors."""

from .actuator import Actuator as Actuator
from .cartpole import CartPoleRig as CartPoleRig
from .forces import Cogging as Cogging
from .forces import ConstantForce as ConstantForce
from .forces import EndStops as EndStops
from .forces import StribeckFriction as StribeckFriction
from .pendulum import PendulumRig as PendulumRig
from .plant import Plant as Plant
from .potential import PotentialPairs as PotentialPairs
from .simulate import simulate as simulate
