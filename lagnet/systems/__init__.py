"""Known physics: mechanical systems M(q) q̈ + C(q, q̇) q̇ + G(q) = B(q) u + Q."""

from .base import AbstractDynamics, AbstractLagrangianDynamics, AbstractSystem
from .cartpole import CartPole
from .double_pendulum import DoublePendulum
from .duffing import Duffing
from .friction import (
    AbstractFriction,
    CoulombFriction,
    JointFriction,
    StribeckFriction,
    ViscousFriction,
)
from .lagrangian import Lagrangian
from .lecture.bowed import BowedOscillator, SoftFriction
from .lecture.cloth import Cloth
from .lecture.hammer import Hammer
from .lecture.rayleigh import Rayleigh
from .mass_spring_chain import MassSpringChain
from .parameters import Bounded
from .pendulum import Pendulum
from .robot import RigidBodyTree
from .springs import AbstractSpringNetwork

__all__ = [
    "AbstractDynamics",
    "AbstractLagrangianDynamics",
    "AbstractSystem",
    "CartPole",
    "DoublePendulum",
    "Duffing",
    "AbstractFriction",
    "CoulombFriction",
    "JointFriction",
    "StribeckFriction",
    "ViscousFriction",
    "Lagrangian",
    "BowedOscillator",
    "SoftFriction",
    "Cloth",
    "Hammer",
    "Rayleigh",
    "MassSpringChain",
    "Bounded",
    "Pendulum",
    "RigidBodyTree",
    "AbstractSpringNetwork",
]
