"""lagnet.parallel: CPU cores as devices, batch sharding, the data-parallel gradient (each in a fresh process,
since the number of CPU devices is fixed when JAX starts its backend)."""

import json
import os
import subprocess
import sys

import pytest
from helpers import xla_flags_without_device_count

SCRIPT = """
import json, os
import jax
jax.config.update("jax_enable_x64", True)
import lagnet  # importing lagnet must not start JAX's backend, or the device count could not be set
from jax._src import xla_bridge
before = xla_bridge.backends_are_initialized()
from lagnet import parallel
n = parallel.use_cpu_cores(4)
import equinox as eqx, jax.numpy as jnp, numpy as np

out = {"imported_cold": not before, "n": n, "devices": jax.device_count()}
try:
    parallel.use_cpu_cores(3)
except RuntimeError as e:
    out["late"] = str(e)
out["same_again"] = parallel.use_cpu_cores(4)

model = lagnet.CartPole()
rng = np.random.default_rng(0)
q0, qd0 = rng.normal(size=(8, 2)), rng.normal(size=(8, 2))
us = rng.normal(size=(8, 20, 1))
roll = jax.jit(jax.vmap(lambda a, b, c: lagnet.rollout(model, lagnet.RK4(), a, b, c, 0.02)))
mesh = parallel.batch_mesh("auto", 8)
split = parallel.shard_batch((q0, qd0, us), mesh)
whole, parts = roll(q0, qd0, us), roll(*split)
out["rollout_devices"] = len(parts[0].sharding.device_set)
out["rollout_diff"] = float(max(jnp.max(jnp.abs(a - b)) for a, b in zip(whole, parts)))

net = eqx.nn.MLP(2, 1, 8, 2, key=jax.random.key(0))
xs, ys = rng.normal(size=(8, 2)), rng.normal(size=(8, 1))
def loss(net, scale, batch):
    x, y = batch
    return scale * jnp.mean((jax.vmap(net)(x) - y) ** 2)
v1, g1 = parallel.sharded_value_and_grad(loss, None)(net, 3.0, (xs, ys))
arrays, rest = eqx.partition(net, eqx.is_array)
vg = parallel.sharded_value_and_grad(loss, mesh)
vg4 = jax.jit(lambda a, s, b: vg(eqx.combine(a, rest), s, b))
v4, g4 = vg4(arrays, 3.0, (xs, ys))
out["value_diff"] = abs(float(v1 - v4))
out["grad_diff"] = float(max(jnp.max(jnp.abs(a - b)) for a, b in zip(
    jax.tree.leaves(eqx.filter(g1, eqx.is_array)), jax.tree.leaves(eqx.filter(g4, eqx.is_array)))))
out["grad_scale"] = float(max(jnp.max(jnp.abs(a)) for a in jax.tree.leaves(eqx.filter(g1, eqx.is_array))))
hlo = vg4.lower(arrays, 3.0, (xs, ys)).compile().as_text()
out["all_reduces"] = hlo.count("all-reduce(") + hlo.count("all-reduce-start(")
for setting, batch in ((3, 8), (5, 10)):
    try:
        parallel.batch_mesh(setting, batch)
    except ValueError as e:
        out[f"mesh_{setting}"] = str(e)
out["auto_6"] = parallel.batch_mesh("auto", 6).devices.size
print(json.dumps(out))
"""


def python(code: str, **env) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter whose device count no inherited XLA_FLAGS or LAGNET_CPU_DEVICES sets."""
    base = {k: v for k, v in os.environ.items() if k != "LAGNET_CPU_DEVICES"}
    base["XLA_FLAGS"] = xla_flags_without_device_count()
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def result():
    out = python(SCRIPT)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_cores_become_devices(result):
    assert result["imported_cold"], "import lagnet started JAX's backend"
    assert result["n"] == result["devices"] == 4
    assert "already runs with 4 CPU device(s)" in result["late"]
    assert result["same_again"] == 4


def test_sharded_rollout_equals_one_device(result):
    assert result["rollout_devices"] == 4
    assert result["rollout_diff"] < 1e-12


def test_sharded_gradient_is_the_batch_mean(result):
    assert result["value_diff"] < 1e-12
    assert result["grad_diff"] < 1e-12 * max(1.0, result["grad_scale"])
    assert 1 <= result["all_reduces"] <= 2  # the value and the gradients, at most fused in one


def test_mesh_errors_name_the_counts(result):
    assert result["mesh_3"] == "training.batch_size=8 must be divisible by devices=3"
    assert result["mesh_5"] == "devices: 5 requested, 4 available (cpu)"
    assert result["auto_6"] == 3


def test_environment_overrides():
    code = "import lagnet.parallel as p, jax; print(p.use_cpu_cores(), jax.device_count())"
    out = python(code, LAGNET_CPU_DEVICES="3")
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["3", "3"]
    bad = python(code, LAGNET_CPU_DEVICES="two")
    assert bad.returncode != 0
    assert "LAGNET_CPU_DEVICES must be a positive integer, got 'two'" in bad.stderr


def test_compilation_cache_is_reused(tmp_path):
    """A second process finds the first one's compiled program in the cache folder and compiles nothing."""
    code = f"""
import time
from lagnet.compilation_cache import use_compilation_cache
use_compilation_cache({str(tmp_path / "xla")!r})
import jax, jax.numpy as jnp
from jax._src import monitoring
hits = []
monitoring.register_event_listener(lambda name, **kw: hits.append(name) if "cache_hits" in name else None)
f = jax.jit(lambda x: jax.lax.fori_loop(0, 50, lambda i, y: jnp.tanh(y @ y.T) @ y, x))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
f(jnp.ones((64, 64))).block_until_ready()
print(len(hits))
"""
    first = python(code)
    second = python(code)
    assert first.returncode == 0 and second.returncode == 0, (
        first.stderr[-2000:] + second.stderr[-2000:]
    )
    assert first.stdout.split()[-1] == "0"
    assert int(second.stdout.split()[-1]) >= 1
    assert any((tmp_path / "xla").iterdir())
