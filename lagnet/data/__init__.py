"""Trajectory data: one loader for measured and simulated recordings, the shipped catalog, splits and windows.

Loading only: the rigs that write the simulated recordings are `lagnet.simulate`, above this package.
"""

from .angles import angular_difference as angular_difference
from .angles import unwrap as unwrap
from .angles import wrap as wrap
from .catalog import DatasetSpec as DatasetSpec
from .catalog import data_root as data_root
from .catalog import dataset_path as dataset_path
from .catalog import dataset_system as dataset_system
from .catalog import datasets as datasets
from .catalog import load_dataset as load_dataset
from .formats.npz_file import write_npz as write_npz
from .loader import finite_difference as finite_difference
from .loader import load_trajectories as load_trajectories
from .loader import load_trajectory as load_trajectory
from .loader import read_table as read_table
from .mapping import ColumnMapping as ColumnMapping
from .trajectory import Trajectory as Trajectory
from .windows import Window as Window
from .windows import WindowDataset as WindowDataset
from .windows import make_windows as make_windows
from .windows import split_by_file as split_by_file
from .windows import split_by_time as split_by_time
