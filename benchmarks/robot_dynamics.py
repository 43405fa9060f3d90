"""A double pendulum read from a robot description: lagnet's RigidBodyTree against the closed form and MuJoCo MJX.

The same double pendulum three ways: `DoublePendulum` (closed form), `RigidBodyTree` (from the MJCF below,
forward kinematics + autodiff) and, when `mujoco-mjx` imports, `mjx.forward` on the same compiled model. Two
jitted programs, float64 and float32, batch 1 and a vmapped batch of 256:
- "M + acc": the mass matrix and the acceleration q̈ = a(q, q̇, u);
- "grad": the gradient of a rollout-like loss (20 semi-implicit Euler steps, Σ|q|²) with respect to the
  initial state and the physical parameters (lagnet: the module's leaves; MJX: the body masses); by default
  float64 batch 256 only, every dtype and batch with --full (each takes 5-30 s to compile).
Results are cross-checked before timing; ratios are to the closed form measured in the same run.

    .venv/bin/python benchmarks/robot_dynamics.py [--repeats 5] [--full] [--json out.json]
"""

import jax

jax.config.update("jax_enable_x64", True)

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _common import block, first_call, load, max_abs_diff, parser, time_interleaved, write  # noqa: E402

from lagnet.systems import DoublePendulum, RigidBodyTree  # noqa: E402

PARAMS = dict(m1=1.2, m2=0.8, l1=1.1, l2=0.9, r1=0.5, r2=0.4, I1=0.1, I2=0.05, g=9.81)
MJCF = """
<mujoco model="double_pendulum">
  <option timestep="0.01"/>
  <worldbody>
    <body name="link1">
      <joint name="q1" type="hinge" axis="1 0 0"/>
      <inertial pos="0 0 -0.5" mass="1.2" diaginertia="0.1 0.1 0.1"/>
      <body name="link2" pos="0 0 -1.1">
        <joint name="q2" type="hinge" axis="1 0 0"/>
        <inertial pos="0 0 -0.4" mass="0.8" diaginertia="0.05 0.05 0.05"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="tau1" joint="q1"/>
    <motor name="tau2" joint="q2"/>
  </actuator>
</mujoco>
"""
STEPS, DT = 20, 0.01


def cast(tree, dtype):
    return jax.tree_util.tree_map(lambda x: x.astype(dtype) if eqx.is_inexact_array(x) else x, tree)


def lagnet_fns(system):
    def one(s, q, qd, u):
        return s.mass_matrix(q), s.acceleration(q, qd, u)

    def loss(s, q0, qd0, us):
        def step(carry, u):
            q, qd = carry
            qd = qd + DT * s.acceleration(q, qd, u)
            q = q + DT * qd
            return (q, qd), jnp.sum(q**2)

        return jnp.sum(jax.lax.scan(step, (q0, qd0), us)[1])

    forward = eqx.filter_jit(lambda s, q, qd, u: jax.vmap(lambda *a: one(s, *a))(q, qd, u))
    grad = eqx.filter_jit(
        lambda s, q, qd, us: jax.vmap(
            lambda a, b, c: eqx.filter_grad(lambda args: loss(*args))((s, a, b, c))
        )(q, qd, us)
    )
    return (lambda q, qd, u: forward(system, q, qd, u)), (lambda q, qd, us: grad(system, q, qd, us))


def mjx_fns(model, dtype):
    """MJX's mass matrix and smooth acceleration, or a reason why not."""
    try:
        import mujoco
        from mujoco import mjx
    except Exception as e:  # noqa: BLE001 (any import failure is a skip)
        return None, f"mujoco-mjx does not import: {type(e).__name__}: {e}"
    mx = cast(mjx.put_model(model), dtype)
    d0 = cast(mjx.make_data(mx), dtype)

    def one(mass, q, qd, u):
        m = mx.replace(body_mass=mass)
        d = mjx.forward(m, d0.replace(qpos=q, qvel=qd, ctrl=u))
        # MJX keeps some model constants in float64: cast so a float32 state stays float32.
        return mjx.full_m(m, d).astype(q.dtype), d.qacc_smooth.astype(q.dtype)

    def loss(mass, q0, qd0, us):
        def step(carry, u):
            q, qd = carry
            qd = qd + DT * one(mass, q, qd, u)[1]
            q = q + DT * qd
            return (q, qd), jnp.sum(q**2)

        return jnp.sum(jax.lax.scan(step, (q0, qd0), us)[1])

    forward = jax.jit(lambda q, qd, u: jax.vmap(lambda *a: one(mx.body_mass, *a))(q, qd, u))
    grad = jax.jit(
        lambda q, qd, us: jax.vmap(
            lambda a, b, c: jax.grad(loss, argnums=(0, 1, 2))(mx.body_mass, a, b, c)
        )(q, qd, us)
    )
    del mujoco
    return (forward, grad), None


def main():
    p = parser(__doc__)
    p.add_argument(
        "--full",
        action="store_true",
        help="time the gradient for every dtype and batch (slow to compile)",
    )
    args = p.parse_args()
    repeats = 3 if args.quick else args.repeats
    import mujoco

    model = mujoco.MjModel.from_xml_string(MJCF)
    closed64 = DoublePendulum(**PARAMS)
    robot64 = RigidBodyTree.from_mujoco(model)
    rng = np.random.default_rng(0)
    rows, notes = [], []
    mjx_pair, why = mjx_fns(model, jnp.float64)
    if why:
        notes.append(f"MJX skipped: {why}")
    for dtype in (jnp.float64, jnp.float32):
        closed, robot = cast(closed64, dtype), cast(robot64, dtype)
        impls = {"closed form": lagnet_fns(closed), "RigidBodyTree": lagnet_fns(robot)}
        if mjx_pair is not None:
            impls["MJX"] = mjx_fns(model, dtype)[0]
        for batch in (1, 256):
            q = jnp.asarray(rng.uniform(-np.pi, np.pi, (batch, 2)), dtype)
            qd = jnp.asarray(rng.normal(size=(batch, 2)), dtype)
            u = jnp.asarray(rng.normal(size=(batch, 2)), dtype)
            us = jnp.asarray(rng.normal(size=(batch, STEPS, 2)), dtype)
            for what in ("M + acc", "grad"):
                if what == "grad" and not args.full and (dtype != jnp.float64 or batch != 256):
                    continue
                inputs = (q, qd, u) if what == "M + acc" else (q, qd, us)
                calls = {
                    name: (lambda f=fns[what == "grad"], a=inputs: block(f(*a)))
                    for name, fns in impls.items()
                }
                compile_s, outputs = {}, {}
                for name, fn in calls.items():
                    compile_s[name], outputs[name] = first_call(fn)
                    print(
                        f"  compiled {name} {jnp.dtype(dtype).name} batch {batch} {what}: {compile_s[name]:.1f} s",
                        flush=True,
                    )
                if what == "M + acc":  # cross-check M and q̈
                    ref = outputs["closed form"]
                    for name, out in outputs.items():
                        diff = max(max_abs_diff(out[0], ref[0]), max_abs_diff(out[1], ref[1]))
                        tol = 1e-9 if dtype == jnp.float64 else 1e-3
                        assert diff < tol, (name, dtype, diff)
                median, _ = time_interleaved(calls, repeats)
                base = median["closed form"]
                for name, seconds in median.items():
                    rows.append(
                        dict(
                            dtype=jnp.dtype(dtype).name,
                            batch=batch,
                            program=what,
                            implementation=name,
                            us=seconds * 1e6,
                            vs_closed_form=seconds / base,
                            compile_s=max(compile_s[name] - seconds, 0.0),
                        )
                    )
    print(
        f"{'dtype':8} {'batch':>5} {'program':8} {'implementation':14} {'µs':>10} {'× closed':>9}"
    )
    for r in rows:
        print(
            f"{r['dtype']:8} {r['batch']:5d} {r['program']:8} {r['implementation']:14} "
            f"{r['us']:10.1f} {r['vs_closed_form']:9.2f}"
        )
    for note in notes:
        print(note)
    record = {"rows": rows, "notes": notes, "load": load()}
    try:
        import mujoco as mj

        record["mujoco"] = mj.__version__
    except ImportError:
        pass
    if args.json:
        write(args.json, "robot_dynamics", record)


if __name__ == "__main__":
    main()
