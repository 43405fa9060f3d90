"""Learning to control a plant from interaction: `learn_to_control(config, plant, task, out)` excites the plant,
then trains a model on everything recorded, runs a controller built on it for one episode and records it, until
an episode does the task (model-based reinforcement learning, with lagnet's models)."""

from .loop import Episode as Episode
from .loop import ILQRFactory as ILQRFactory
from .loop import LearningResult as LearningResult
from .loop import describe as describe
from .loop import learn_to_control as learn_to_control
from .recording import RandomExcitation as RandomExcitation
from .recording import Recording as Recording
from .recording import mapping as mapping
from .recording import write_recording as write_recording
