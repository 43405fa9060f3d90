"""Known physics: mechanical systems M(q) q̈ + C(q, q̇) q̇ + G(q) = B(q) u + Q."""

from .base import AbstractSystem as AbstractSystem
from .cartpole import CartPole as CartPole
from .double_pendulum import DoublePendulum as DoublePendulum
from .duffing import Duffing as Duffing
from .lagrangian import Lagrangian as Lagrangian
from .mass_spring_chain import MassSpringChain as MassSpringChain
from .pendulum import Pendulum as Pendulum
