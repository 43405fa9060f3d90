"""A trained run: its spec, files, and loading, without the training machinery.

`lagnet.run.training` (which `lagnet train` calls) writes runs; it is not imported here, so evaluation and control
code that loads a run never imports the training loop.
"""

from .build import MODELS, build_integrator, build_model, build_system
from .files import atomic_write, load_tree, save_json, save_tree, save_yaml
from .load import Run, load_run
from .recordings import load_recordings
from .spec import RunSpec

__all__ = [
    "build_system",
    "build_integrator",
    "build_model",
    "MODELS",
    "atomic_write",
    "load_tree",
    "save_json",
    "save_tree",
    "save_yaml",
    "Run",
    "load_run",
    "load_recordings",
    "RunSpec",
]
