"""`lagnet.load`: a trained run as control-ready `Dynamics`."""

import json
import os

from ..train.build import build_integrator
from ..train.loop import load_model
from .dynamics import Dynamics


def load(path: str, which: str = "best") -> Dynamics:
    """The model of a run directory (or of a checkpoint file inside one, `RUN/checkpoints/NAME.eqx`) with the
    integrator and step it was trained with, as `Dynamics` (`f`, `step`, `rollout`; the model is `.model`)."""
    path = os.fspath(path)
    if os.path.isfile(path) and path.endswith(".eqx"):
        which = os.path.basename(path)[: -len(".eqx")]
        path = os.path.dirname(os.path.dirname(os.path.abspath(path)))
    model, config = load_model(path, which)
    dt = config["integrator"]["dt"]
    if dt is None:
        summary = os.path.join(path, "summary.json")
        dt = json.load(open(summary)).get("dt") if os.path.exists(summary) else None
    return Dynamics(model, build_integrator(config), float(dt) if dt is not None else 0.02)
