"""Known physics: mechanical systems M(q) q̈ + C(q, q̇) q̇ + G(q) = B(q) u + Q."""

from .base import AbstractDynamics as AbstractDynamics
from .base import AbstractLagrangianDynamics as AbstractLagrangianDynamics
from .base import AbstractSystem as AbstractSystem
from .bowed import BowedOscillator as BowedOscillator
from .bowed import SoftFriction as SoftFriction
from .cartpole import CartPole as CartPole
from .cloth import Cloth as Cloth
from .double_pendulum import DoublePendulum as DoublePendulum
from .duffing import Duffing as Duffing
from .friction import AbstractFriction as AbstractFriction
from .friction import CoulombFriction as CoulombFriction
from .friction import JointFriction as JointFriction
from .friction import StribeckFriction as StribeckFriction
from .friction import ViscousFriction as ViscousFriction
from .hammer import Hammer as Hammer
from .lagrangian import Lagrangian as Lagrangian
from .mass_spring_chain import MassSpringChain as MassSpringChain
from .parameters import Bounded as Bounded
from .pendulum import Pendulum as Pendulum
from .rayleigh import Rayleigh as Rayleigh
from .robot import RigidBodyTree as RigidBodyTree
