"""The identification stage of `lagnet train`: the physics fitted through the solver before any network.

A PINODE is trained in two stages in one run: its physical parameters and friction coefficients are identified
first (`lagnet.train.identify`), then the residual network learns from that physics, which stays as identified
unless `model.identification.refine`. The identified physics is kept in checkpoints/identified.eqx, so a resumed
run continues from it instead of identifying again.
"""

import os
import sys
import warnings

from ..config import ConfigError
from ..data.windows import make_windows, window_recordings
from ..models.summary import physics_summary
from ..train.identify import copy_physics, identify, physical_vector
from .files import load_tree, tree_bytes, write_bytes

IDENTIFIED = "identified.eqx"


def identify_physics(
    config, model, integrator, trajs, loss, dtype, checkpoint_dir, *, resume, progress
):
    """The model with its physics identified (or as it is), and the identification's record for summary.json
    (None when nothing was identified). On `resume`, the physics saved by the interrupted run is reused."""
    ic = config.model.identification
    prior = model.physics_prior()
    if ic.method == "none" or prior is None:
        return model, None
    prior = prior.with_physics_trainable(True)
    if physical_vector(prior)[0].size == 0:
        return model, None
    path = os.path.join(checkpoint_dir, IDENTIFIED)
    if resume and os.path.exists(path):
        identified = load_tree(path, prior)
        record = {"method": ic.method, "resumed": True}
    else:
        if progress:
            print(f"train {config.name}: identifying the physics …", file=sys.stderr, flush=True)
        horizon = config.training.longest_horizon if ic.horizon == "training" else ic.horizon
        try:
            windows = make_windows(trajs, horizon, skip_short=True, dtype=dtype)
        except ValueError as e:
            key = (
                "training.horizon (model.identification.horizon: training)"
                if ic.horizon == "training"
                else "model.identification.horizon"
            )
            longest = max((t.n_rows for t in trajs), default=0)
            raise ConfigError(
                f"{key} = {horizon} steps: {e}; the longest training recording has {longest} rows"
            ) from None
        result = identify(
            prior,
            integrator,
            windows,
            loss,
            max_windows=ic.max_windows,
            max_iterations=ic.max_iterations,
            groups=(
                window_recordings(trajs, horizon, skip_short=True)
                if ic.weighting == "recordings"
                else None
            ),
            prior_weight=ic.prior_weight,
        )
        identified = result.model
        record = {
            "method": ic.method,
            "horizon": windows.k,
            "weighting": ic.weighting,
            "prior_weight": ic.prior_weight,
            "data": ic.data,
            "recordings": len(trajs),
            "loss_before": result.initial_loss,
            "loss": result.loss,
            "evaluations": result.iterations,
            "seconds": result.seconds,
            "solver": result.message,
            "at_bound": result.at_bound(),
        }
        if progress:
            print(
                f"train {config.name}: identified physics: loss {result.initial_loss:.4g} → "
                f"{result.loss:.4g} ({result.iterations} evaluations, {result.seconds:.1f} s)",
                file=sys.stderr,
                flush=True,
            )
        for hit in record["at_bound"]:
            warnings.warn(
                f"{config.name}: identified {hit['name']} = {hit['value']:.6g} ended on its {hit['side']} "
                f"bound {hit['bound']:.6g}: the data asks for a value beyond it (a term the rig lacks, one "
                "the data does not excite, or a bound too tight)",
                stacklevel=2,
            )
    record["physics"] = physics_summary(identified)
    model = copy_physics(model, identified).with_physics_trainable(ic.refine)
    return model, record


def save_identified(record, model, checkpoint_dir) -> None:
    """Keep the identified physics for a resume (once, when the run identifies it)."""
    if record is None or record.get("resumed"):
        return
    write_bytes(os.path.join(checkpoint_dir, IDENTIFIED), tree_bytes(model.physics_prior()))
