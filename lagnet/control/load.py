"""`lagnet.load`: a trained run as control-ready `Dynamics`, without the training machinery."""

import os

from ..config.bounded import read_json
from ..run.load import load_run
from .dynamics import Dynamics


def load(
    path: str, which: str = "best", *, dtype: str | None = None, trust_code: bool = False
) -> Dynamics:
    """The model of a run directory (or of a checkpoint file inside one, `RUN/checkpoints/NAME.eqx`) with the
    integrator and step it was trained with, as `Dynamics` (`f`, `step`, `rollout`; the model is `.model`).

    The step is the run's (its data's measured sample step, `run.json`). A float64 run needs
    `jax_enable_x64` on; `dtype` casts the model's leaves. A run whose system is the user's Python code loads
    only with `trust_code=True` (the code is run; see docs/guides/security.md).
    """
    run = load_run(path, which, dtype=dtype, trust_code=trust_code)
    fallback = None
    if which == "best":
        try:
            fallback = read_json(os.path.join(run.path, "summary.json"), "a run's summary").get(
                "fallback"
            )
        except (OSError, ValueError, AttributeError):
            fallback = None  # an unfinished run has no summary yet
    return Dynamics(run.model, run.integrator, run.dt, fallback)
