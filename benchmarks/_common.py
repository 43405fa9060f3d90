"""What every benchmark shares: the benchmark model, its inputs, interleaved timing and the JSON record.

The model is the cart-pole's known M, C, G (`lagnet.systems.CartPole`) plus a learned force from a 2×64 tanh MLP,
M q̈ + C q̇ + G = B u + 10⁻³ MLP(q, q̇, u). Every implementation (lagnet, hand-written scan, diffrax, torchdiffeq,
numpy) gets the same weights, initial states and inputs; each script cross-checks the trajectories before timing.
"""

import argparse
import json
import os
import platform
import sys
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from lagnet.parallel import use_cpu_cores
from lagnet.systems.base import AbstractDynamics

# lagnet's setting on a CPU: one JAX device per core (lagnet.parallel), set before any computation. Programs
# given unsharded inputs still run on one device, so the one-device rows measure what they did before.
CORES = use_cpu_cores()

DT = 0.02
FORCE_SCALE = 1e-3  # the untrained network acts as a small correction, so rollouts stay finite
WIDTH, DEPTH = 64, 2


class LearnedCartPole(AbstractDynamics):
    """M q̈ + C q̇ + G = B u + s · MLP(q, q̇, u), the cart-pole's known mechanics from lagnet."""

    system: eqx.Module
    force: eqx.nn.MLP
    n_dof = 2
    n_inputs = 1
    velocity_dependent = True

    def acceleration(self, q, qd, u):
        force = FORCE_SCALE * self.force(jnp.concatenate([q, qd, u]))
        return self.system.acceleration(q, qd, u, Q=force)


def make_model(dtype=jnp.float32, seed: int = 0) -> LearnedCartPole:
    from lagnet.systems import CartPole

    model = LearnedCartPole(
        CartPole(),
        eqx.nn.MLP(5, 2, WIDTH, DEPTH, activation=jnp.tanh, key=jax.random.key(seed)),
    )
    return jax.tree_util.tree_map(
        lambda x: x.astype(dtype) if eqx.is_inexact_array(x) else x, model
    )


def make_inputs(batch: int, steps: int, dtype=np.float32, seed: int = 0):
    """Initial states (batch, 2) and zero-order-hold inputs (batch, steps, 1), as numpy arrays."""
    rng = np.random.default_rng(seed)
    q0 = (rng.normal(size=(batch, 2)) * 0.5).astype(dtype)
    qd0 = (rng.normal(size=(batch, 2)) * 0.5).astype(dtype)
    us = rng.uniform(-1, 1, (batch, steps, 1)).astype(dtype)
    return q0, qd0, us


def mlp_weights(model: LearnedCartPole) -> list[tuple[np.ndarray, np.ndarray]]:
    """The MLP's (W, b) per layer as numpy arrays, W of shape (out, in), for the non-JAX implementations."""
    return [(np.asarray(layer.weight), np.asarray(layer.bias)) for layer in model.force.layers]


def mlp_flops_per_eval() -> int:
    """Multiply-add FLOPs (2 per MAC) of one MLP evaluation: the matmul work of one acceleration."""
    sizes = [5] + [WIDTH] * DEPTH + [2]
    return sum(2 * a * b for a, b in zip(sizes[:-1], sizes[1:], strict=True))


def handwritten_rk4_step(accel, q, qd, u, dt):
    """Classical RK4 on (q, q̇) written out, for the hand-written references (accel is already batched)."""
    half = 0.5 * dt
    a1 = accel(q, qd, u)
    v2 = qd + half * a1
    a2 = accel(q + half * qd, v2, u)
    v3 = qd + half * a2
    a3 = accel(q + half * v2, v3, u)
    v4 = qd + dt * a3
    a4 = accel(q + dt * v3, v4, u)
    q1 = q + dt / 6 * (qd + 2 * v2 + 2 * v3 + v4)
    qd1 = qd + dt / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
    return q1, qd1


def block(x):
    """Wait for a result of any framework (JAX arrays, torch tensors, numpy)."""
    return jax.block_until_ready(x)


def time_interleaved(fns: dict, repeats: int, warmup: int = 1) -> tuple[dict, dict]:
    """Median and all wall times per function, the functions interleaved so that load changes hit all alike.

    `fns` maps a name to a zero-argument callable that returns when its work is done. The first `warmup`
    rounds are discarded (compilation is timed separately by the caller). Each round runs them in a new (seeded)
    random order, so that no function always runs right after the same neighbour, whose work may have evicted
    its caches.
    """
    times = {name: [] for name in fns}
    names = list(fns)
    rng = np.random.default_rng(0)
    for i in range(warmup + repeats):
        for name in map(str, rng.permutation(names)):
            fn = fns[name]
            t = time.perf_counter()
            fn()
            if i >= warmup:
                times[name].append(time.perf_counter() - t)
    return {name: float(np.median(ts)) for name, ts in times.items()}, times


def first_call(fn) -> tuple[float, object]:
    """Seconds of the first call (trace + compile + one run) and its result."""
    t = time.perf_counter()
    out = block(fn())
    return time.perf_counter() - t, out


def versus_scan(median: dict, compile_s: dict, metric: str, of) -> dict:
    """Per implementation: median seconds, `metric` = of(seconds), the speed ratio to the hand-written scan and the
    compile time (first call minus a steady-state call; None where no first call was timed)."""
    base = median["hand-written scan"]
    return {
        name: {
            "seconds": seconds,
            metric: of(seconds),
            "vs_scan": base / seconds,
            "compile_s": max(compile_s[name] - seconds, 0.0) if name in compile_s else None,
        }
        for name, seconds in median.items()
    }


def max_abs_diff(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def parser(doc: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument(
        "--repeats", type=int, default=5, help="timed repeats (median), after one warm-up"
    )
    p.add_argument(
        "--quick", action="store_true", help="smaller sizes and fewer repeats (a smoke run)"
    )
    p.add_argument("--json", default=None, help="write the results to this JSON file")
    p.add_argument(
        "--no-torch", action="store_true", help="skip the torch / torchdiffeq comparisons"
    )
    return p


def torch_or_none(disabled: bool):
    """(torch, torchdiffeq) or None when absent or disabled: torch is no dependency of lagnet."""
    if disabled:
        return None
    try:
        import torch
        import torchdiffeq
    except ImportError:
        return None
    torch.set_num_threads(os.cpu_count() or 1)
    return torch, torchdiffeq


def environment() -> dict:
    env = {
        "python": platform.python_version(),
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "devices": len(jax.devices()),
        "cpus": os.cpu_count(),
        "cpu": platform.processor() or platform.machine(),
    }
    for name in ("diffrax", "equinox", "optax", "torch", "torchdiffeq"):
        module = sys.modules.get(name)
        if module is not None:
            env[name] = getattr(module, "__version__", "?")
    return env


def write(path: str | None, name: str, record: dict) -> None:
    """Print the record and, with a path, store it as JSON (run_all.py collects these)."""
    record = {"benchmark": name, "environment": environment(), **record}
    text = json.dumps(record, indent=1, default=float)
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    print(text)
