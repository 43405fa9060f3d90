"""`lagnet.load`: a trained run as control-ready `Dynamics`, without the training machinery."""

from ..run.load import load_run
from .dynamics import Dynamics


def load(path: str, which: str = "best", *, dtype: str | None = None) -> Dynamics:
    """The model of a run directory (or of a checkpoint file inside one, `RUN/checkpoints/NAME.eqx`) with the
    integrator and step it was trained with, as `Dynamics` (`f`, `step`, `rollout`; the model is `.model`).

    The step is the run's (its data's measured sample step, `run.json`). A float64 run needs
    `jax_enable_x64` on; `dtype` casts the model's leaves.
    """
    run = load_run(path, which, dtype=dtype)
    return Dynamics(run.model, run.integrator, run.dt)
