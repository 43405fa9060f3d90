"""How large must a PINODE's output scale be on measured data? `model.output_scale: auto`, old rule vs new.

The network's output is multiplied by a fixed scale s = 3 × the spread of the residual force it has to supply,

    r = M(q) q̈ − (τ − C(q, q̇) q̇ − G(q)) − Q_f(q̇),

over the training samples. The old rule took q̈ by central differences of the measured velocities and the plain
standard deviation; the new one takes q̈ from a smoothed derivative (local quadratic least squares over ≤ 30 ms,
`lagnet.data.derivatives.smoothed_derivative`) and a 2.5 %-trimmed standard deviation (`robust_spread`).

1. The DFKI double pendulum (design A.0, ~500 Hz, quantised velocities; data/real/dfki_double_pendulum_A0, BSD-3)
   with the lab's identified model (configs/dfki_double_pendulum_known.yaml) on its training runs: the residual's
   spread per joint with raw and smoothed q̈, the old and new scales, the torques' spread for reference, the
   commanded vs measured torque, and the new scale against the smoothing window.
2. The shipped simulated data sets (and the measured simple pendulum) through lagnet's own pipeline (config →
   recordings → friction fit → residual): old vs new auto scales.

Run:  .venv/bin/python experiments/output_scale_real.py   (prints the tables; < 1 min on 2 CPU cores)
"""

import time
from pathlib import Path

import jax
import numpy as np

from lagnet.config import load_config
from lagnet.data.derivatives import (
    DEFAULT_WINDOW,
    mad_spread,
    robust_spread,
    smoothed_derivative,
)
from lagnet.models import residual_force as _residual_force
from lagnet.run import build_model, build_system
from lagnet.run.recordings import load_recordings, sample_statistics
from lagnet.run.training import load_training_data

ROOT = Path(__file__).resolve().parents[1]
KNOWN = (
    ROOT / "configs" / "dfki_double_pendulum_known.yaml"
)  # the lab's model, equal to its plant to 1e-10


def residual_force(system, stats, friction):
    """`lagnet.models.residual_force` on stacked samples {q, qd, qdd, u}."""
    u = stats["u"][:, : system.n_inputs]
    return _residual_force(system, stats["q"], stats["qd"], stats["qdd"], u, friction)


def load_dfki(torque="tau_meas"):
    """The lab's model (system + its friction) and the training runs, with `torque` as the input columns."""
    config = load_config(KNOWN)
    mapping = {**config.data.mapping, "inputs": [f"{torque}1", f"{torque}2"]}
    config = config.replace(data={"mapping": mapping})
    system = build_system(config)
    runs = load_recordings(config, system, config.data.train)
    friction = build_model(config, system, None, key=jax.random.key(0)).friction
    return system, friction, runs


def stacked_residual(lab, qdd_of):
    """The lab model's residual force r = M q̈ + C q̇ + G − τ − Q_f over all runs, q̈ of each by `qdd_of(qd, t)`."""
    system, friction, runs = lab
    stats = {
        "q": np.concatenate([r.q for r in runs]),
        "qd": np.concatenate([r.qd for r in runs]),
        "qdd": np.concatenate([qdd_of(r.qd, r.t) for r in runs]),
        "u": np.concatenate([r.u for r in runs]),
    }
    return residual_force(system, stats, friction)


def raw(qd, t):
    """The old q̈: second-order central differences on the measured grid (`finite_difference` "central")."""
    return np.gradient(qd, t, axis=0)


def smooth(window):
    return lambda qd, t: smoothed_derivative(qd, t, window)


def fmt(x):
    return "  ".join(f"{v:9.4g}" for v in np.atleast_1d(x))


def table(title, rows):
    print(f"\n{title}")
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name.ljust(width)}  {value if isinstance(value, str) else fmt(value)}")


def dfki():
    t0 = time.perf_counter()
    lab = load_dfki()
    runs = lab[2]
    n = sum(len(r.t) for r in runs)
    steps = np.concatenate([np.diff(r.t) for r in runs])
    r_raw = stacked_residual(lab, raw)
    r_new = stacked_residual(lab, smooth(DEFAULT_WINDOW))
    qdd_raw = np.concatenate([raw(r.qd, r.t) for r in runs])
    qdd_new = np.concatenate([smooth(DEFAULT_WINDOW)(r.qd, r.t) for r in runs])
    tau = np.concatenate([r.u for r in runs])
    tau_con = np.concatenate([r.u for r in load_dfki("tau_con")[2]])
    print(
        f"DFKI double pendulum A.0, {len(runs)} training runs: {n} samples, median step "
        f"{np.median(steps) * 1e3:.3f} ms ({steps.min() * 1e3:.2f} to {steps.max() * 1e3:.2f} ms); "
        f"smoothing window {DEFAULT_WINDOW * 1e3:g} ms. Columns: joint 1 (shoulder), joint 2 (elbow) [N m, rad/s²]"
    )
    table(
        "reference: the input torques and the accelerations",
        [
            ("std tau_meas", np.std(tau, 0)),
            ("std tau_con", np.std(tau_con, 0)),
            ("std q̈ raw differences", np.std(qdd_raw, 0)),
            ("std q̈ smoothed", np.std(qdd_new, 0)),
        ],
    )
    table(
        "residual force of the lab's model (tau_meas)",
        [
            ("raw q̈: std", np.std(r_raw, 0)),
            ("raw q̈: trimmed std (2.5 %)", robust_spread(r_raw)),
            ("raw q̈: 1.4826 MAD", mad_spread(r_raw)),
            ("smoothed q̈: std", np.std(r_new, 0)),
            ("smoothed q̈: trimmed std (2.5 %)", robust_spread(r_new)),
            ("smoothed q̈: 1.4826 MAD", mad_spread(r_new)),
        ],
    )
    old, new = 3 * np.std(r_raw, 0), 3 * robust_spread(r_new)
    table(
        "auto output scale of a PINODE on this rig",
        [
            ("old: 3 × std, raw q̈", old),
            ("new: 3 × trimmed std, smoothed q̈", new),
            ("old / new", old / new),
            ("new / std tau_meas", new / np.std(tau, 0)),
        ],
    )
    r_con = stacked_residual(load_dfki("tau_con"), smooth(DEFAULT_WINDOW))
    table(
        "which torque does the model need? residual with smoothed q̈ (smaller: closer to the model)",
        [
            ("tau_meas: trimmed std", robust_spread(r_new)),
            ("tau_con: trimmed std", robust_spread(r_con)),
            ("tau_meas: RMS", np.sqrt(np.mean(r_new**2, 0))),
            ("tau_con: RMS", np.sqrt(np.mean(r_con**2, 0))),
        ],
    )
    rows = [("raw differences (3 samples)", 3 * robust_spread(r_raw))]
    for w in (0.01, 0.02, 0.03, 0.05, 0.1, 0.13, 0.2):
        r_w = stacked_residual(lab, smooth(w))
        rows.append((f"window ≤ {w * 1e3:g} ms", 3 * robust_spread(r_w)))
    table("new scale (3 × trimmed std) against the smoothing window", rows)
    print(f"\n(DFKI part: {time.perf_counter() - t0:.1f} s)")


def scales(config_path, window=DEFAULT_WINDOW):
    """Auto scales of a config's PINODE (target: the residual force after the fitted friction) or black box
    (target: q̈) through lagnet's pipeline: old, the smoothed q̈ with the plain std, new."""
    config = load_config(config_path)
    system = build_system(config)
    trajs, _ = load_training_data(config, system)
    new_stats = sample_statistics(trajs, window=window)
    old_stats = new_stats | {"qdd": np.concatenate([raw(t.qd, t.t) for t in trajs])}
    key = jax.random.key(0)
    if config.model.type == "blackbox":
        old, new = old_stats["qdd"], new_stats["qdd"]
    else:
        old, new = (
            residual_force(system, stats, model.friction)[:, list(model.force_on)]
            for stats in (old_stats, new_stats)
            for model in [build_model(config, system, stats, key=key)]
        )
    return 3 * np.std(old, 0), 3 * np.std(new, 0), 3 * robust_spread(new)


def simulated():
    rows = []
    for name in (
        "cartpole_pinode",
        "cartpole_blackbox",
        "pendulum_pinode",
        "real_pendulum_pinode",
    ):
        old, new_std, new = scales(ROOT / "configs" / f"{name}.yaml")
        rows.append((f"{name}: old (3 × std, raw q̈)", old))
        rows.append((f"{name}: 3 × std, smoothed q̈", new_std))
        rows.append((f"{name}: new (3 × trimmed std, smoothed q̈)", new))
        rows.append((f"{name}: new / old", new / old))
    table(
        "lagnet's pipeline (config → training recordings → friction fit → residual): auto scales",
        rows,
    )


if __name__ == "__main__":
    jax.config.update("jax_enable_x64", True)  # the lab's model config is float64
    start = time.perf_counter()
    dfki()
    simulated()
    print(f"\n({time.perf_counter() - start:.1f} s)")
