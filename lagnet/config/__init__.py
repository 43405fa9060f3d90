"""Run configs: typed, validated before any work, with one registry of names for validation and building.

`lagnet train --show-config` prints `describe()`: every key with its default and meaning, as a YAML template.
"""

from .files import apply_override as apply_override
from .files import load_config as load_config
from .registry import INTEGRATORS as INTEGRATORS
from .registry import SYSTEMS as SYSTEMS
from .registry import register_system as register_system
from .schema import MODEL_SECTIONS as MODEL_SECTIONS
from .schema import BlackBoxModelConfig as BlackBoxModelConfig
from .schema import Config as Config
from .schema import ConfigError as ConfigError
from .schema import DataConfig as DataConfig
from .schema import EvaluationConfig as EvaluationConfig
from .schema import FrictionConfig as FrictionConfig
from .schema import IntegratorConfig as IntegratorConfig
from .schema import KnownModelConfig as KnownModelConfig
from .schema import ModelConfig as ModelConfig
from .schema import PinodeModelConfig as PinodeModelConfig
from .schema import PotentialModelConfig as PotentialModelConfig
from .schema import PureOdeModelConfig as PureOdeModelConfig
from .schema import SystemConfig as SystemConfig
from .schema import TrainingConfig as TrainingConfig
from .schema import describe as describe
from .schema import dump as dump
from .schema import key_paths as key_paths
from .schema import model_types_reading as model_types_reading
from .schema import validate as validate

_MOVED = {"build_system", "build_integrator", "build_model", "MODELS"}


def __getattr__(name):
    # The builders live with the run (lagnet.run.build) since the config's objects are built there, one module.
    if name in _MOVED:
        raise AttributeError(f"lagnet.config.{name} moved: use lagnet.run.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
