"""The datasets shipped in `data/`: where each lives, how to read it, which system it belongs to, how to remake it."""

import dataclasses
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._errors import DataError
from ..systems import CartPole, DoublePendulum, Pendulum
from ..systems.base import AbstractSystem
from .loader import load_trajectories
from .trajectory import Trajectory

_DFKI = "real/dfki_simple_pendulum"
_DFKI_MAPPING = {
    "time": "time",
    "positions": ["position"],
    "velocities": ["velocity"],
    "inputs": ["torque"],
    "units": {"time": "s", "position": "rad", "velocity": "rad/s", "torque": "N*m"},
}
_DFKI_RUNS = (
    "ddp",
    "direct_collocation",
    "energy_shaping",
    "energy_shaping_1kg",
    "gravity_compensation",
    "ilqr",
    "pd_swingup_failure",
    "pd_system_identification",
    "sac",
)
_DFKI_FILES = {
    "energy_shaping_1kg": "control_method_energy_shaping__data_measured_1kg.csv.gz",
    "pd_swingup_failure": "control_method_pd__1nm_torque_limited_swingup_failure__data_measured.csv.gz",
    "pd_system_identification": "control_method_pd__system_identification__data_measured.csv.gz",
}


def dfki_pendulum() -> Pendulum:
    """The DFKI test bed as a point-mass pendulum with its identified J = m l² = 0.06259, m l = 0.1022 (g = 9.81)."""
    length = 0.06259 / 0.1022
    return Pendulum(mass=0.1022 / length, length=length, g=9.81)


_DFKI_DOUBLE = "real/dfki_double_pendulum_A0"
_DFKI_DOUBLE_MAPPING = {
    "time": "time",
    "positions": ["pos_meas1", "pos_meas2"],
    "velocities": ["vel_meas1", "vel_meas2"],
    "inputs": ["tau_meas1", "tau_meas2"],
    "units": {
        "time": "s",
        **{f"pos_meas{i}": "rad" for i in (1, 2)},
        **{f"vel_meas{i}": "rad/s" for i in (1, 2)},
        **{f"tau_meas{i}": "N*m" for i in (1, 2)},
    },
}
_DFKI_DOUBLE_RUNS = ("00", "01", "02", "03", "04", "05", "11", "12", "13")


# The DFKI double pendulum's links as its lab identified them (model_2.0_parameters.yml; I1, I2 about the joint
# axes). Its URDF carries the same numbers, with I1, I2 in the centre-of-mass slot.
DFKI_DOUBLE_PENDULUM_LINKS = dict(
    m1=0.5593806151425046,
    m2=0.6043459469186889,
    l1=0.3,
    r1=0.3,
    r2=0.18377686083653508,
    I1=0.053470810264216295,
    I2=0.02392374528789766,
    g=9.81,
)


def dfki_double_pendulum() -> DoublePendulum:
    """The DFKI double pendulum (design A.0) as its lab identified it (model_2.0_parameters.yml): link inertias
    about the joint axes, motor rotor inertia with gear ratio; its friction is the model's (see
    configs/dfki_double_pendulum_known.yaml)."""
    return DoublePendulum(
        **DFKI_DOUBLE_PENDULUM_LINKS,
        inertia_about="joint",
        Ir=7.659297952841183e-05,
        gr=6.0,
    )


@dataclasses.dataclass(frozen=True)
class DatasetSpec:
    """A shipped dataset: `path` under the data root, its column mapping, its system and, if simulated, the
    name of the generator that writes it (`lagnet data generate <generator>`, `lagnet.simulate.GENERATORS`)."""

    name: str
    path: str
    mapping: dict[str, Any]
    system: Callable[[], AbstractSystem]
    description: str
    generator: str | None = None


# The columns of the simulated recordings as their generators write them (`lagnet.simulate`; a test checks
# that these agree with the generators and with each file's own metadata).
_SIM_MAPPINGS = {
    "cartpole": {
        "time": "t",
        "positions": ["x", "phi"],
        "velocities": ["x_dot", "phi_dot"],
        "inputs": ["force"],
    },
    "pendulum": {
        "time": "t",
        "positions": ["theta"],
        "velocities": ["theta_dot"],
        "inputs": ["torque"],
    },
    "pendulum_potential": {
        "time": "t",
        "positions": ["theta"],
        "velocities": ["theta_dot"],
        "episode": "pair",
    },
    "iiwa": {
        "time": "t",
        "positions": [f"q{i + 1}" for i in range(7)],
        "velocities": [f"qd{i + 1}" for i in range(7)],
        "inputs": [f"tau{i + 1}" for i in range(7)],
    },
}
IIWA_DESCRIPTION = "robots/kuka_iiwa_14/iiwa14.xml"  # under `data_root()`
IIWA_JOINTS = tuple(f"joint{i + 1}" for i in range(7))


def iiwa_arm() -> AbstractSystem:
    """The KUKA LBR iiwa 14 of its description alone (`data/robots/kuka_iiwa_14`), a unit torque on each joint:
    the prior of the simulated arm recordings, without the armature and friction the rig adds."""
    from ..systems.robot import RigidBodyTree

    return RigidBodyTree.from_mjcf(data_root() / IIWA_DESCRIPTION, actuated=IIWA_JOINTS)


def _sim(name, generator, system, description):
    return DatasetSpec(
        name, f"sim/{name}.npz", _SIM_MAPPINGS[generator], system, description, generator
    )


def _specs() -> dict[str, DatasetSpec]:
    specs = [
        _sim("cartpole_train", "cartpole", CartPole, "cart-pole rig, 8 min by hand, 50 Hz"),
        _sim("cartpole_test", "cartpole", CartPole, "cart-pole rig, a separate 2 min recording"),
        _sim(
            "pendulum_train", "pendulum", lambda: Pendulum(0.25, 0.5, 9.81), "pendulum rig, 3 min"
        ),
        _sim("pendulum_test", "pendulum", lambda: Pendulum(0.25, 0.5, 9.81), "pendulum rig, 1 min"),
        _sim(
            "pendulum_potential_train",
            "pendulum_potential",
            Pendulum,
            "unforced pendulum, 400 exact pairs 0.1 s apart",
        ),
        _sim(
            "pendulum_potential_test",
            "pendulum_potential",
            Pendulum,
            "unforced pendulum, 400 more pairs",
        ),
        _sim("iiwa_train", "iiwa", iiwa_arm, "7-joint arm (KUKA iiwa 14) in MuJoCo, 1 min, 100 Hz"),
        _sim("iiwa_test", "iiwa", iiwa_arm, "7-joint arm, a separate 30 s recording"),
    ]
    for run in _DFKI_RUNS:
        file = _DFKI_FILES.get(run, f"control_method_{run}__data_measured.csv.gz")
        specs.append(
            DatasetSpec(
                f"dfki_{run}",
                f"{_DFKI}/{file}",
                _DFKI_MAPPING,
                dfki_pendulum,
                f"measured DFKI pendulum, {run.replace('_', ' ')}",
            )
        )
    for run in _DFKI_DOUBLE_RUNS:
        specs.append(
            DatasetSpec(
                f"dfki_double_pendulum_{run}",
                f"{_DFKI_DOUBLE}/sys_id_20220815_trajectory_{run}.csv.gz",
                _DFKI_DOUBLE_MAPPING,
                dfki_double_pendulum,
                f"measured DFKI double pendulum A.0, system identification run {run}",
            )
        )
    return {s.name: s for s in specs}


def datasets() -> dict[str, DatasetSpec]:
    """Every shipped dataset by name."""
    return _specs()


def data_root() -> Path:
    """The `data/` folder: $LAGNET_DATA, else the one beside the `lagnet` package (a source checkout)."""
    env = os.environ.get("LAGNET_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "data"


def dataset_path(name: str) -> Path:
    return data_root() / _spec(name).path


def _spec(name: str) -> DatasetSpec:
    specs = _specs()
    if name not in specs:
        raise DataError(f"unknown dataset {name!r}; shipped datasets: {', '.join(specs)}")
    return specs[name]


def load_dataset(name: str) -> list[Trajectory]:
    """The trajectories of a shipped dataset (one per file episode), checked against its system."""
    spec = _spec(name)
    return load_trajectories(dataset_path(name), spec.mapping, system=spec.system())


def dataset_system(name: str) -> AbstractSystem:
    """The known system a shipped dataset is checked against (for the DFKI runs: the identified test bed)."""
    return _spec(name).system()


def sha256(path: str | os.PathLike) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()
