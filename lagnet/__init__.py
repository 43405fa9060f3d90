"""lagnet: learning the dynamics of mechanical systems with physics built in."""

from . import systems as systems
from .systems import AbstractSystem as AbstractSystem

__version__ = "0.1.0"
