"""The lecture notes' oscillators: Rayleigh's self-excited oscillator, the bowed string, the hammer, the cloth.

They serve the lecture experiments (`experiments/bow.py`, `hammer.py`, `cloth.py`, `rayleigh.py`,
`learn_bow_friction.py`, `learn_hammer_contact.py`, `lecture_*.py`); `lagnet.systems` re-exports their classes.
"""

from .bowed import BowedOscillator as BowedOscillator
from .bowed import SoftFriction as SoftFriction
from .cloth import Cloth as Cloth
from .hammer import Hammer as Hammer
from .rayleigh import Rayleigh as Rayleigh
