"""Spreading a batch over devices: CPU cores as devices, a 1-D batch mesh, data-parallel gradients, multi-host.

XLA runs one program per device, each on its own thread. On a CPU that means a single device spreads only large
single operations over the cores (the 1024 × 64 matmuls of a batched MLP are too small to gain, and the threading
costs more than it brings), while a batch sharded over one device per core keeps every core busy (measured on
the benchmarks page, benchmarks/RESULTS.md: lagnet against the same rollout on one device).

    lagnet.parallel.use_cpu_cores()               # before the first JAX computation
    mesh = lagnet.parallel.batch_mesh("auto", batch_size=1024)
    q0 = lagnet.parallel.shard_batch(q0, mesh)    # then jit(vmap(rollout)) runs one shard per core

Gradients of a batch-mean loss: `sharded_value_and_grad`, an explicit `shard_map` with one all-reduce of the
gradients per step (letting the compiler partition the backward pass of a rollout was several times slower:
the benchmarks page).
"""

import os
from collections.abc import Callable

import equinox as eqx
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

_FORCE_FLAG = "--xla_force_host_platform_device_count"


def cpu_cores() -> int:
    """The number of cores this process may run on (its affinity mask, not the machine's total)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def use_cpu_cores(n: int | None = None) -> int:
    """Expose `n` CPU cores (default: all usable, see `cpu_cores`) as `n` JAX CPU devices; return the count set.

    Must run before JAX creates its CPU backend, i.e. before the first computation; after it, an explicit `n`
    that differs from the running count is an error and the default keeps the running count. An explicit
    `--xla_force_host_platform_device_count` in `XLA_FLAGS`, or `LAGNET_CPU_DEVICES=k` in the environment, wins
    over `n`. Other backends (GPU, TPU) are unaffected; the CPU devices are then extra and unused by default.
    """
    if _FORCE_FLAG in os.environ.get("XLA_FLAGS", ""):
        return jax.local_device_count("cpu")
    env = os.environ.get("LAGNET_CPU_DEVICES")
    if env is not None:
        if not env.isdigit() or int(env) < 1:
            raise ValueError(f"LAGNET_CPU_DEVICES must be a positive integer, got {env!r}")
        n = int(env)
    asked = n is not None
    n = int(n) if asked else cpu_cores()
    if n < 1:
        raise ValueError(f"use_cpu_cores: n must be >= 1, got {n}")
    try:
        # JAX refuses the setting once a backend exists: that is the (public) test of "too late".
        jax.config.update("jax_num_cpu_devices", n)
    except RuntimeError:
        have = jax.local_device_count("cpu")
        if asked and have != n:
            raise RuntimeError(
                f"use_cpu_cores({n}): JAX already runs with {have} CPU device(s); call it before the first "
                "JAX computation, or set LAGNET_CPU_DEVICES / XLA_FLAGS before starting Python"
            ) from None
        return have
    return n


def batch_mesh(setting: int | str = "auto", batch_size: int | None = None) -> Mesh | None:
    """A 1-D mesh ("batch",) over the default backend's devices (all processes'), or None for one device.

    `setting` "auto": every device, or with a `batch_size` they do not divide, the largest count that does;
    an int: exactly that many (an error if there are fewer, or if they do not divide `batch_size`).
    """
    devices = jax.devices()
    if setting == "auto":
        sizes = range(1, len(devices) + 1)
        n = max(d for d in sizes if batch_size is None or batch_size % d == 0)
    else:
        n = int(setting)
        if n > len(devices):
            raise ValueError(
                f"devices: {n} requested, {len(devices)} available ({devices[0].platform})"
            )
        if batch_size is not None and batch_size % n:
            raise ValueError(f"training.batch_size={batch_size} must be divisible by devices={n}")
    if n == 1:
        return None
    if jax.process_count() > 1 and n != len(devices):
        raise ValueError(
            f"devices: with {jax.process_count()} processes use all {len(devices)} devices"
        )
    return Mesh(np.asarray(devices[:n]), ("batch",))


def _put(tree, sharding):
    arrays, rest = eqx.partition(tree, eqx.is_array)
    return eqx.combine(jax.device_put(arrays, sharding), rest)


def shard_batch(tree, mesh: Mesh | None):
    """Every array of `tree` split along its leading (batch) axis over `mesh`; unchanged without a mesh.

    In a multi-process run every process passes the same global values (e.g. loaded from the same files)."""
    return tree if mesh is None else _put(tree, NamedSharding(mesh, PartitionSpec("batch")))


def replicate(tree, mesh: Mesh | None):
    """Every array of `tree` copied to every device of `mesh`; unchanged without a mesh."""
    return tree if mesh is None else _put(tree, NamedSharding(mesh, PartitionSpec()))


def sharded_value_and_grad(loss: Callable, mesh: Mesh | None) -> Callable:
    """`(params, shared, batch) ↦ (loss, ∂loss/∂params)` with `batch` split over `mesh`, everything else replicated.

    `loss(params, shared, batch)` must be a mean over the leading axis of `batch` (whose size the mesh divides):
    each device differentiates the mean over its shard and the means are averaged, ∇ mean = mean of ∇ over
    equal shards, one all-reduce per call. Without a mesh this is `eqx.filter_value_and_grad(loss)`.
    """
    value_and_grad = eqx.filter_value_and_grad(loss)
    if mesh is None:
        return value_and_grad

    replicated, split = PartitionSpec(), PartitionSpec("batch")

    def parallel(params, shared, batch):
        arrays, rest = eqx.partition((params, shared), eqx.is_array)

        def local(arrays, batch):
            params, shared = eqx.combine(arrays, rest)
            return jax.lax.pmean(value_and_grad(params, shared, batch), "batch")

        # check_vma off: eqx.error_if's cond inside a rollout mixes replicated and per-device values.
        return jax.shard_map(
            local, mesh=mesh, in_specs=(replicated, split), out_specs=replicated, check_vma=False
        )(arrays, batch)

    return parallel


def initialize_distributed(
    coordinator: str | None = None, num_processes: int | None = None, process_id: int | None = None
) -> None:
    """Join a multi-process (multi-host) run: `jax.distributed.initialize`, with CPU collectives over gloo.

    Without arguments JAX detects the cluster (SLURM, Open MPI, Kubernetes, ...). Then `jax.devices()` lists every
    process's devices, `batch_mesh` spans them, and every process runs the same program on the same data files.
    """
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=coordinator, num_processes=num_processes, process_id=process_id
    )


def is_main_process() -> bool:
    """True on the process that writes files and prints progress (process 0)."""
    return jax.process_index() == 0
