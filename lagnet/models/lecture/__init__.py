"""The lecture notes' structured force networks: passive bow friction and one-sided hammer contact.

They serve `experiments/learn_bow_friction.py` and `learn_hammer_contact.py`; `lagnet.models` re-exports them.
"""

from .passive import ContactNetwork as ContactNetwork
from .passive import PassiveFriction as PassiveFriction
