"""Trajectory data: one loader for measured and simulated recordings, the shipped catalog, splits and windows.

Loading only: the rigs that write the simulated recordings are `lagnet.simulate`, above this package.
"""

from .angles import angular_difference, unwrap, wrap
from .catalog import DatasetSpec, data_root, dataset_path, dataset_system, datasets, load_dataset
from .formats.npz_file import write_npz
from .loader import finite_difference, load_trajectories, load_trajectory, read_table
from .mapping import ColumnMapping
from .trajectory import Trajectory
from .windows import Window, WindowDataset, make_windows, split_by_file, split_by_time

__all__ = [
    "angular_difference",
    "unwrap",
    "wrap",
    "DatasetSpec",
    "data_root",
    "dataset_path",
    "dataset_system",
    "datasets",
    "load_dataset",
    "write_npz",
    "finite_difference",
    "load_trajectories",
    "load_trajectory",
    "read_table",
    "ColumnMapping",
    "Trajectory",
    "Window",
    "WindowDataset",
    "make_windows",
    "split_by_file",
    "split_by_time",
]
