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
from ..train.fit import end_errors
from ..train.identify import (
    NonFiniteStart,
    copy_physics,
    identify,
    identify_equation_error,
    physical_vector,
)
from .files import GIVEN_PHYSICS, load_tree, tree_bytes, write_bytes
from .recordings import sample_statistics

IDENTIFIED = "identified.eqx"


def _warn(config, message: str) -> None:
    warnings.warn(f"{config.name}: {message}", stacklevel=3)


def bound_message(hit: dict, what: str) -> str:
    """One line for a parameter that ended on a bound (`Identification.at_bound`'s entries), said alike by
    every path that fits parameters."""
    return (
        f"{what} {hit['name']} = {hit['value']:.6g} ended on its {hit['side']} bound {hit['bound']:.6g}: the "
        "data asks for a value beyond it (a term the rig lacks, one the data does not excite, a missing "
        "actuator lag, or a bound too tight)"
    )


def friction_fit_bounds(config, model) -> list[dict] | None:
    """The friction coefficients the least-squares start (`model.friction.fit: lstsq`) left on their lower
    bound 0 (NNLS holds a coefficient there when the data asks for a negative one); None for a model whose
    friction is not started that way."""
    fc = config.model.friction if config.model.reads("friction") else None
    friction = getattr(model, "friction", None)
    if fc is None or friction is None or fc.fit != "lstsq":
        return None
    names = model.coordinate_names
    hits = []
    for term, values in friction.values_by_term().items():
        fitted = getattr(fc, term, None)
        if isinstance(fitted, dict) or not fitted:
            continue  # given coefficients are not fitted
        for i, v in values.items():
            if v <= 0.0:
                name = f"friction.{term}.{names[i]}"
                hits.append({"name": name, "value": float(v), "bound": 0.0, "side": "lower"})
    return hits


def identify_physics(
    config,
    model,
    integrator,
    trajs,
    loss,
    dtype,
    checkpoint_dir,
    *,
    resume,
    progress,
    validation=None,
):
    """The model with its physics identified (or as it is), and the identification's record for summary.json
    (None when nothing was fitted). On `resume`, the physics saved by the interrupted run is reused.

    The identified physics replaces the start only if it is finite, no worse on the data it was fitted to,
    physical (M(q) ≻ 0 on a grid) and, with `validation` windows and `accept: every_coordinate`, no worse on
    any validation coordinate at the windows' end than the start (and, with `baseline: least_squares`, than
    the equation-error fit, which is kept in its place when it is no worse than the start); otherwise the
    start is kept, and the record says why.
    Every parameter that ends on a bound (least-squares friction start included) or collapses by orders of
    magnitude is warned about and listed."""
    ic = config.model.setting("identification")
    ls_hits = friction_fit_bounds(config, model)
    for hit in ls_hits or []:
        _warn(config, bound_message(hit, "least-squares"))
    ls_record = (
        None
        if ls_hits is None
        else {"method": "none", "friction_fit": "lstsq", "at_bound": ls_hits}
    )
    prior = model.physics_prior()
    if ic.method == "none" or prior is None:
        return model, ls_record
    prior = prior.with_physics_trainable(True)
    if physical_vector(prior)[0].size == 0:
        if progress and ls_record is not None:
            print(
                f"train {config.name}: nothing to identify through the solver (no learned parameters, "
                "friction.trainable: false): the friction is the least-squares fit",
                file=sys.stderr,
                flush=True,
            )
        return model, ls_record
    path = os.path.join(checkpoint_dir, IDENTIFIED)
    if resume and os.path.exists(path):
        identified = load_tree(path, prior)
        record = {"method": ic.method, "resumed": True}
    else:
        identified, record, start, rival = _identify(
            config, prior, integrator, trajs, loss, dtype, progress
        )
        if validation is not None and (record["kept_start"] is None or rival is not None):
            identified = _validate(
                config, start, identified, rival, integrator, loss, validation, record
            )
        record["friction_fit_at_bound"] = ls_hits or []
        _report(config, record, progress)
    record["physics"] = physics_summary(identified)
    model = copy_physics(model, identified).with_physics_trainable(ic.refine)
    return model, record


def _report(config, record: dict, progress: bool) -> None:
    """Say what the identification did: the start kept and why, or the fit; bound hits and collapses."""
    if record["kept_start"] is not None:
        _warn(config, f"identification kept the starting physics: {record['kept_start']}")
    elif record.get("kept_least_squares") is not None:
        _warn(
            config,
            "identification kept the equation-error least-squares fit (model.identification.baseline: "
            f"least_squares): {record['kept_least_squares']}",
        )
    elif progress:
        print(
            f"train {config.name}: identified physics: loss {record['loss_before']:.4g} → "
            f"{record['loss']:.4g} ({record['evaluations']} evaluations, {record['seconds']:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
    for hit in record["at_bound"]:
        _warn(config, bound_message(hit, "identified"))
    for c in record["collapsed"]:
        _warn(config, collapse_message(c, "identified"))


def collapse_message(c: dict, what: str) -> str:
    return (
        f"{what} {c['name']} moved from {c['start']:.6g} to {c['value']:.6g}, by more than a factor of "
        "1000: the fit has switched that term off or on (check that the data excites it)"
    )


def _identify(config, prior, integrator, trajs, loss, dtype, progress):
    """`identify` with the config's settings: the identified physics, its record, the start it is judged
    against (the given physics, or with `anchor: first_stage` the equation-error fit it started from) and,
    with `baseline: least_squares`, the equation-error fit it must also beat (None otherwise)."""
    ic = config.model.setting("identification")
    if progress:
        print(f"train {config.name}: identifying the physics …", file=sys.stderr, flush=True)
    horizon = config.training.longest_horizon if ic.horizon == "training" else ic.horizon
    start, rival = prior, None
    try:
        if ic.method == "least_squares":
            result, horizon = _equation_error(config, prior, _samples(config, prior, trajs)), None
        else:
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
            horizon = windows.k
            least_squares = ic.first_stage == "least_squares" or ic.baseline == "least_squares"
            samples = (
                _samples(config, prior, trajs)
                if least_squares or ic.equation_error_weight > 0
                else None
            )
            staged = _equation_error(config, prior, samples) if least_squares else None
            if staged is not None and ic.anchor == "first_stage":
                start = staged.model
            elif (
                staged is not None and ic.baseline == "least_squares" and staged.kept_start is None
            ):
                rival = staged
            result = identify(
                start,
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
                first_stage=staged.theta if ic.first_stage == "least_squares" else None,
                equation_error=samples if ic.equation_error_weight > 0 else None,
                equation_error_weight=ic.equation_error_weight,
            )
    except NonFiniteStart as e:
        raise NonFiniteStart(f"{config.name}: {e}") from None
    kept = result.kept_start is not None
    record = {
        "method": ic.method,
        "horizon": horizon,
        "weighting": ic.weighting,
        "prior_weight": ic.prior_weight,
        "equation_error_weight": ic.equation_error_weight,
        "data": ic.data,
        "anchor": ic.anchor,
        "baseline": ic.baseline,
        "recordings": len(trajs),
        "loss_before": result.initial_loss,
        "loss": result.loss,
        "evaluations": result.iterations,
        "seconds": result.seconds,
        "solver": result.message,
        "kept_start": result.kept_start,
        "at_bound": [] if kept else result.at_bound(),
        "collapsed": [] if kept else result.collapsed(),
    }
    return result.model, record, start, rival


def _samples(config, prior, trajs):
    """The recordings' samples (q, q̇, q̈, u) for the equation error, q̈ filtered as `data.derivative_window`
    says."""
    if prior.input_history:
        raise ConfigError(
            "the equation error (model.identification.method: least_squares, first_stage: least_squares or "
            "equation_error_weight > 0) reads each sample's own input: it needs model.input_history: 0, got "
            f"{prior.input_history}"
        )
    samples = sample_statistics(trajs, window=config.data.derivative_window)
    return samples["q"], samples["qd"], samples["qdd"], samples["u"][:, : prior.n_inputs]


def _equation_error(config, prior, samples):
    """`identify_equation_error` on the recordings' samples (`_samples`)."""
    ic = config.model.setting("identification")
    return identify_equation_error(
        prior,
        *samples,
        max_iterations=ic.max_iterations,
        prior_weight=ic.prior_weight,
    )


def _validate(config, start, identified, rival, integrator, loss, validation, record):
    """What is kept, judged at the validation windows' end (`accept: loss` skips the judging). The equation-error
    fit `rival`, where there is one, counts only if it is no worse than the start on every coordinate; the
    identified physics is kept if it is no worse on every coordinate than the start and than a rival that
    counts; else that rival; else the start. The record says which and why."""
    fitted = record["kept_start"] is None
    before = end_errors(start, integrator, loss, validation)
    record["validation_before"] = before.tolist()
    if fitted:
        after = end_errors(identified, integrator, loss, validation)
        record["validation_after"] = after.tolist()
    if config.model.setting("identification").accept != "every_coordinate":
        return identified
    rivals, why, rival_worse = [("the start", before)], record["kept_start"], ""
    if rival is not None:
        rival_errors = end_errors(rival.model, integrator, loss, validation)
        record["validation_least_squares"] = rival_errors.tolist()
        rival_worse = _worse(start.state_names, before, rival_errors)
        if rival_worse:
            rival = None
        else:
            rivals.append(("the least-squares fit", rival_errors))
    if fitted:
        worse = [(what, _worse(start.state_names, errors, after)) for what, errors in rivals]
        worse = [f"than {what} on {w}" for what, w in worse if w]
        if not worse:
            return identified
        why = (
            "on the validation windows the identified physics is worse at the end of the window "
            f"{'; '.join(worse)} (model.identification.accept: every_coordinate)"
        )
    if rival is not None:
        record["kept_least_squares"] = why
        record["at_bound"], record["collapsed"] = rival.at_bound(), rival.collapsed()
        record["loss"] = None
        return rival.model
    if rival_worse:
        why += f"; the least-squares fit is worse than the start on {rival_worse}"
    record["kept_start"] = why
    record["at_bound"], record["collapsed"], record["loss"] = [], [], record["loss_before"]
    return start


def _worse(names, reference, errors) -> str:
    """The coordinates where `errors` exceed `reference`, with both values ('' when none do)."""
    return ", ".join(
        f"{name} {b:.4g} → {a:.4g}"
        for name, b, a in zip(names, reference, errors, strict=True)
        if not a <= b * (1 + 1e-9)
    )


def save_identified(record, model, checkpoint_dir, given=None) -> None:
    """Keep the identified physics for a resume, and the physics as given for the evaluation to show beside it
    (once, when the run identifies it)."""
    if record is None or record.get("resumed") or record.get("method") in (None, "none"):
        return
    write_bytes(os.path.join(checkpoint_dir, IDENTIFIED), tree_bytes(model.physics_prior()))
    if given is not None:
        write_bytes(os.path.join(checkpoint_dir, GIVEN_PHYSICS), tree_bytes(given))
