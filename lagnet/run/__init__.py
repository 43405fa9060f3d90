"""A trained run: its spec, files, and loading, without the training machinery.

`lagnet.run.training` (which `lagnet train` calls) writes runs; it is not imported here, so evaluation and control
code that loads a run never imports the training loop.
"""

from .files import atomic_write as atomic_write
from .files import load_tree as load_tree
from .files import save_json as save_json
from .files import save_tree as save_tree
from .files import save_yaml as save_yaml
from .load import Run as Run
from .load import load_run as load_run
from .recordings import load_recordings as load_recordings
from .spec import RunSpec as RunSpec
