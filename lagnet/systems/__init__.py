"""Known physics: mechanical systems M(q) q̈ + C(q, q̇) q̇ + G(q) = B(q) u + Q."""

from .base import AbstractDynamics as AbstractDynamics
from .base import AbstractLagrangianDynamics as AbstractLagrangianDynamics
from .base import AbstractSystem as AbstractSystem
from .cartpole import CartPole as CartPole
from .double_pendulum import DoublePendulum as DoublePendulum
from .duffing import Duffing as Duffing
from .friction import AbstractFriction as AbstractFriction
from .friction import CoulombFriction as CoulombFriction
from .friction import JointFriction as JointFriction
from .friction import StribeckFriction as StribeckFriction
from .friction import ViscousFriction as ViscousFriction
from .lagrangian import Lagrangian as Lagrangian
from .lecture.bowed import BowedOscillator as BowedOscillator
from .lecture.bowed import SoftFriction as SoftFriction
from .lecture.cloth import Cloth as Cloth
from .lecture.hammer import Hammer as Hammer
from .lecture.rayleigh import Rayleigh as Rayleigh
from .mass_spring_chain import MassSpringChain as MassSpringChain
from .parameters import Bounded as Bounded
from .pendulum import Pendulum as Pendulum
from .robot import RigidBodyTree as RigidBodyTree
from .springs import AbstractSpringNetwork as AbstractSpringNetwork
