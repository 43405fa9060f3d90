"""Robots from their descriptions: lagnet's RigidBodyTree against the closed form, Pinocchio and MuJoCo MJX.

Two robots: the DFKI double pendulum (its lab's URDF, data/real/dfki_double_pendulum_A0, and the closed form
`DoublePendulum` with the same numbers) and a 7-joint arm (KUKA LBR iiwa 14, data/robots/kuka_iiwa_14). Every
implementation reads the same compiled MuJoCo model; Pinocchio's model is built from its arrays (`pin`, optional:
the `bench` extra), MJX's is `mjx.put_model` of it (`mujoco-mjx`, optional). Float64, a batch of 256 states:
- "M + acc": the mass matrix and q̈ = a(q, q̇, u) of every state;
- "grad": the gradient of a 30-step rollout loss (semi-implicit Euler, dt 0.01, Σ_t Σ_batch |q_t|²) with respect
  to the initial states and the inertial parameters (lagnet: all of the module's leaves; MJX: body masses,
  inertias and centres of mass; Pinocchio: the ten inertial parameters of each body, by its analytical derivatives
  of ABA, ∂q̈/∂(q, q̇), and the joint-torque regressor, ∂q̈/∂π = −M⁻¹ Y(q, q̇, q̈), the adjoint pass in numpy
  vectorised over the batch; its forward pass loops over the batch in Python, as a user of its bindings would).
Results are cross-checked before timing (M, q̈, and the gradient with respect to the initial states); ratios are
to the closed form and to Pinocchio measured in the same run; compile time is the first call less a later one;
peak memory is what XLA allocates for the compiled program (temporaries, arguments, outputs) or, for Pinocchio,
the peak of traced allocations (numpy) during a call.

And whole training runs: `lagnet train` of configs/dfki_double_pendulum_urdf.yaml against the same model on the
closed form (configs/dfki_double_pendulum_pinode.yaml without its learned inertial parameters, which the URDF config
does not learn), each a fresh process with the compilation cache off, `--train-pairs` times interleaved; the ratio
of the median wall times.

    .venv/bin/python benchmarks/robot_dynamics.py [--repeats 5] [--no-mjx] [--train-pairs 3] [--json out.json]
"""

import datetime
import os
import tracemalloc
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _common import block, first_call, load, max_abs_diff, parser, time_interleaved, write  # noqa: E402
from time_to_accuracy import lagnet_train  # noqa: E402

from lagnet.data.catalog import DFKI_DOUBLE_PENDULUM_LINKS  # noqa: E402
from lagnet.systems import DoublePendulum, RigidBodyTree  # noqa: E402
from lagnet.systems.robot import mujoco_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ROBOTS = {
    "DFKI double pendulum": ROOT / "data/real/dfki_double_pendulum_A0/model_2.1_pendubot.urdf",
    "KUKA iiwa 14 (7 joints)": ROOT / "data/robots/kuka_iiwa_14/iiwa14.xml",
}
# The DFKI URDF as written: axis inertias in the centre-of-mass slot, the elbow's reference 3.1416 (not π).
DFKI_SHIFT = np.array([0.0, 3.1416 - np.pi])
BATCH, STEPS, DT = 256, 30, 0.01
TRAIN_CONFIGS = {
    "closed form": (
        ROOT / "configs/dfki_double_pendulum_pinode.yaml",
        ("model.learn_parameters=[]",),
    ),
    "URDF": (ROOT / "configs/dfki_double_pendulum_urdf.yaml", ()),
}


# --- lagnet -----------------------------------------------------------------------------------------------------


def lagnet_fns(system, shift=None):
    """(M + acc, grad) of a lagnet system; `shift` is added to q first (the closed form's coordinates)."""
    offset = jnp.zeros(system.n_dof) if shift is None else jnp.asarray(shift)

    def acc(s, q, qd, u):
        return s.acceleration(q + offset, qd, u)

    def loss(s, q0, qd0, us):
        def step(carry, u):
            q, qd = carry
            qd = qd + DT * jax.vmap(lambda a, b, c: acc(s, a, b, c))(q, qd, u)
            q = q + DT * qd
            return (q, qd), jnp.sum(q**2)

        return jnp.sum(jax.lax.scan(step, (q0, qd0), jnp.swapaxes(us, 0, 1))[1])

    forward = eqx.filter_jit(
        lambda s, q, qd, u: jax.vmap(lambda a, b, c: (s.mass_matrix(a + offset), acc(s, a, b, c)))(
            q, qd, u
        )
    )
    grad = eqx.filter_jit(lambda s, q, qd, us: eqx.filter_grad(lambda a: loss(*a))((s, q, qd, us)))

    def state_grad(out):
        return out[1], out[2]

    return (
        lambda q, qd, u: forward(system, q, qd, u),
        lambda q, qd, us: grad(system, q, qd, us),
        state_grad,
        lambda i, args: xla_mb((forward, grad)[i], system, *args),
    )


def xla_mb(jitted, *args) -> float:
    """The buffers XLA allocates for a jitted program (temporaries + arguments + outputs), in MiB; the program is
    the one already compiled for these arguments (JAX caches it)."""
    compiled = jitted.lower(*args).compile()
    m = getattr(compiled, "compiled", compiled).memory_analysis()  # equinox wraps JAX's Compiled
    return (m.temp_size_in_bytes + m.argument_size_in_bytes + m.output_size_in_bytes) / 2**20


def traced_mb(fn, *args) -> float:
    """The peak of traced allocations (numpy arrays, Python objects) during one call, in MiB."""
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


# --- Pinocchio ----------------------------------------------------------------------------------------------------


def pinocchio_model(system: RigidBodyTree):
    """Pinocchio's model of the tree (one hinge per moving body), built from the same arrays: joint frames at the
    anchors, welded bodies appended to their joint, world-welded bodies composed into the placements."""
    import pinocchio as pin

    def quat(qv):
        w, x, y, z = np.asarray(qv, float) / np.linalg.norm(qv)
        return pin.Quaternion(w, x, y, z).toRotationMatrix()

    model = pin.Model()
    model.gravity.linear = np.asarray(system.g)
    frame = {}  # body -> (pinocchio joint id, placement of the body frame in that joint's frame)
    order = []
    for b, p in enumerate(system.parents):
        local = pin.SE3(quat(system.body_quat[b]), np.asarray(system.body_pos[b], float))
        parent_joint, parent_frame = (
            frame.get(p, (0, pin.SE3.Identity())) if p >= 0 else (0, pin.SE3.Identity())
        )
        placed = parent_frame * local
        joints = system.body_joints[b]
        if len(joints) > 1 or any(system.joint_types[j] != "hinge" for j in joints):
            raise ValueError("the Pinocchio rows take one hinge per body")
        if joints:
            j = joints[0]
            anchor = np.asarray(system.joint_pos[j], float)
            axis = np.asarray(system.joint_axis[j], float)
            at = placed * pin.SE3(np.eye(3), anchor)
            jid = model.addJoint(
                parent_joint,
                pin.JointModelRevoluteUnaligned(axis / np.linalg.norm(axis)),
                at,
                f"j{j}",
            )
            order.append(j)
            frame[b] = (jid, pin.SE3(np.eye(3), -anchor))
        else:
            jid = parent_joint
            frame[b] = (jid, placed)
        inertial_rot = quat(system.body_iquat[b])
        body = frame[b][1] * pin.SE3(inertial_rot, np.asarray(system.body_ipos[b], float))
        inertia = pin.Inertia(
            float(system.body_mass[b]),
            np.zeros(3),
            np.diag(np.asarray(system.body_inertia[b], float)),
        )
        if jid > 0:
            model.appendBodyToJoint(jid, body.act(inertia), pin.SE3.Identity())
    if order != list(range(system.n_dof)):
        raise ValueError("the Pinocchio rows need the joints in the tree's order")
    return model


def pinocchio_fns(system: RigidBodyTree):
    import pinocchio as pin

    model = pinocchio_model(system)
    data = model.createData()
    n = system.n_dof
    b_matrix = np.asarray(system.input_matrix(jnp.zeros(n)))

    def forward(q, qd, u):
        q, qd, tau = np.asarray(q), np.asarray(qd), np.asarray(u) @ b_matrix.T
        ms, accs = np.empty((len(q), n, n)), np.empty((len(q), n))
        for i in range(len(q)):
            m = pin.crba(model, data, q[i])
            ms[i] = np.triu(m) + np.triu(m, 1).T
            accs[i] = pin.aba(model, data, q[i], qd[i], tau[i])
        return ms, accs

    def grad(q0, qd0, us):
        q, qd = np.array(q0), np.array(qd0)
        taus = np.asarray(us) @ b_matrix.T
        batch = len(q)
        da_dq = np.empty((STEPS, batch, n, n))
        da_dv = np.empty((STEPS, batch, n, n))
        regress = []  # per step: M⁻¹ Y, (batch, n, 10 nb)
        qs = np.empty((STEPS, batch, n))
        for t in range(STEPS):
            acc = np.empty((batch, n))
            mty = None
            for i in range(batch):
                pin.computeABADerivatives(model, data, q[i], qd[i], taus[i, t])
                acc[i] = data.ddq
                da_dq[t, i], da_dv[t, i] = data.ddq_dq, data.ddq_dv
                minv = np.triu(data.Minv) + np.triu(data.Minv, 1).T
                y = pin.computeJointTorqueRegressor(model, data, q[i], qd[i], acc[i])
                if mty is None:
                    mty = np.empty((batch, n, y.shape[1]))
                mty[i] = minv @ y
            regress.append(mty)
            qd = qd + DT * acc
            q = q + DT * qd
            qs[t] = q
        lam_q, lam_v = np.zeros((batch, n)), np.zeros((batch, n))
        lam_pi = np.zeros(regress[0].shape[2])
        for t in reversed(range(STEPS)):
            lam_q = lam_q + 2 * qs[t]  # Σ |q_{t+1}|²
            lam_v = lam_v + DT * lam_q  # q_{t+1} = q_t + dt q̇_{t+1}
            lam_a = DT * lam_v  # q̇_{t+1} = q̇_t + dt q̈_t
            lam_q = lam_q + np.einsum("bij,bi->bj", da_dq[t], lam_a)
            lam_v = lam_v + np.einsum("bij,bi->bj", da_dv[t], lam_a)
            lam_pi = lam_pi - np.einsum("bip,bi->p", regress[t], lam_a)
        return lam_q, lam_v, lam_pi

    return (
        forward,
        grad,
        lambda out: (out[0], out[1]),
        lambda i, args: traced_mb((forward, grad)[i], *args),
    )


# --- MJX ----------------------------------------------------------------------------------------------------------


def mjx_fns(model, system: RigidBodyTree):
    """MJX's mass matrix and smooth acceleration and the rollout gradient, or a reason why not."""
    try:
        from mujoco import mjx
    except Exception as e:  # noqa: BLE001 (any import failure is a skip)
        return None, f"mujoco-mjx does not import: {type(e).__name__}: {e}"
    mx = mjx.put_model(model)
    d0 = mjx.make_data(mx)
    b_matrix = jnp.asarray(system.input_matrix(jnp.zeros(system.n_dof)))

    def one(params, q, qd, u):
        m = mx.replace(body_mass=params[0], body_inertia=params[1], body_ipos=params[2])
        d = mjx.forward(m, d0.replace(qpos=q, qvel=qd, qfrc_applied=b_matrix @ u))
        return mjx.full_m(m, d), d.qacc_smooth

    params = (mx.body_mass, mx.body_inertia, mx.body_ipos)

    def loss(params, q0, qd0, us):
        def step(carry, u):
            q, qd = carry
            qd = qd + DT * jax.vmap(lambda a, b, c: one(params, a, b, c)[1])(q, qd, u)
            q = q + DT * qd
            return (q, qd), jnp.sum(q**2)

        return jnp.sum(jax.lax.scan(step, (q0, qd0), jnp.swapaxes(us, 0, 1))[1])

    forward = jax.jit(jax.vmap(lambda a, b, c: one(params, a, b, c)))
    grad = jax.jit(lambda q, qd, us: jax.grad(loss, argnums=(0, 1, 2))(params, q, qd, us))
    memory = lambda i, args: xla_mb((forward, grad)[i], *args)  # noqa: E731
    return (forward, grad, lambda out: (out[1], out[2]), memory), None


def training_times(pairs: int, quick: bool) -> dict:
    """Wall seconds of cold `lagnet train` runs of `TRAIN_CONFIGS`, interleaved, and the ratio of the medians."""
    import statistics
    import tempfile

    extra = ("training.epochs=1",) if quick else ()
    seconds = {name: [] for name in TRAIN_CONFIGS}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(pairs):
            for name, (config, settings) in TRAIN_CONFIGS.items():
                out = os.path.join(tmp, f"{name.split()[0]}{i}")
                wall, _, _ = lagnet_train(str(config), out, *settings, *extra)
                seconds[name].append(wall)
                print(f"  lagnet train, DFKI double pendulum, {name}: {wall:.1f} s", flush=True)
    median = {name: statistics.median(s) for name, s in seconds.items()}
    return {
        "configs": {name: [os.path.relpath(c, ROOT), *s] for name, (c, s) in TRAIN_CONFIGS.items()},
        "seconds": seconds,
        "ratio": median["URDF"] / median["closed form"],
    }


# --- the run --------------------------------------------------------------------------------------------------


def main():
    p = parser(__doc__)
    p.add_argument(
        "--no-mjx", action="store_true", help="skip MJX (its gradient takes minutes to compile)"
    )
    p.add_argument(
        "--robots", nargs="+", default=None, help="only the robots whose names contain these words"
    )
    p.add_argument(
        "--train-pairs",
        type=int,
        default=3,
        help="cold training runs of the DFKI URDF config and its closed form, interleaved (0: none)",
    )
    args = p.parse_args()
    repeats = 3 if args.quick else args.repeats
    rows, notes = [], []
    try:
        import pinocchio  # noqa: F401

        have_pin = True
    except ImportError:
        have_pin = False
        notes.append("Pinocchio skipped: `pin` is not installed (pip install -e '.[bench]')")
    import mujoco

    rng = np.random.default_rng(0)
    for robot, path in ROBOTS.items():
        if args.robots and not any(w.lower() in robot.lower() for w in args.robots):
            continue
        model = mujoco_model(path)
        names = tuple(
            mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(model.njnt)
        )
        tree = RigidBodyTree.from_mujoco(model, actuated=names)
        n = tree.n_dof
        impls = {"RigidBodyTree": lagnet_fns(tree)}
        if tree.expansion is not None:
            # The default for a tree this small is its expansion; time the recursive algorithms beside it.
            recursive = RigidBodyTree.from_mujoco(model, actuated=names, expand=False)
            impls["RigidBodyTree, recursive"] = lagnet_fns(recursive)
        if robot.startswith("DFKI"):
            impls["closed form"] = lagnet_fns(
                DoublePendulum(**DFKI_DOUBLE_PENDULUM_LINKS), shift=-DFKI_SHIFT
            )
        if have_pin:
            impls["Pinocchio"] = pinocchio_fns(tree)
        if not args.no_mjx:
            fns, why = mjx_fns(model, tree)
            if why:
                notes.append(f"MJX skipped: {why}")
            else:
                impls["MJX"] = fns
        q = jnp.asarray(rng.uniform(-1.5, 1.5, (BATCH, n)))
        qd = jnp.asarray(rng.normal(size=(BATCH, n)))
        u = jnp.asarray(rng.normal(size=(BATCH, n)))
        us = jnp.asarray(0.3 * rng.normal(size=(BATCH, STEPS, n)))
        for what in ("M + acc", "grad"):
            inputs = (q, qd, u) if what == "M + acc" else (q, qd, us)
            calls = {
                name: (lambda f=fns[what == "grad"], a=inputs: block(f(*a)))
                for name, fns in impls.items()
            }
            compile_s, outputs = {}, {}
            for name, fn in calls.items():
                compile_s[name], outputs[name] = first_call(fn)
                print(f"  {robot} {what} {name}: first call {compile_s[name]:.1f} s", flush=True)
            ref = outputs["RigidBodyTree"]
            for name, out in outputs.items():
                if what == "M + acc":
                    diff = max(max_abs_diff(out[0], ref[0]), max_abs_diff(out[1], ref[1]))
                else:
                    ours = impls["RigidBodyTree"][2](ref)
                    theirs = impls[name][2](out)
                    diff = max(max_abs_diff(a, b) for a, b in zip(ours, theirs, strict=True))
                    diff /= max(1.0, float(np.max(np.abs(np.asarray(ours[0])))))
                assert diff < 1e-7, (robot, what, name, diff)
            median, _ = time_interleaved(calls, repeats)
            for name, seconds in median.items():
                rows.append(
                    dict(
                        robot=robot,
                        program=what,
                        implementation=name,
                        ms=seconds * 1e3,
                        vs_closed_form=seconds / median["closed form"]
                        if "closed form" in median
                        else None,
                        vs_pinocchio=seconds / median["Pinocchio"]
                        if "Pinocchio" in median
                        else None,
                        compile_s=max(compile_s[name] - seconds, 0.0),
                        peak_mb=impls[name][3](what == "grad", inputs),
                    )
                )
    print(
        f"{'robot':24} {'program':8} {'implementation':25} {'ms':>9} {'× closed':>9} {'× Pinocchio':>11} "
        f"{'compile s':>9} {'peak MiB':>9}"
    )
    fmt = lambda x: "" if x is None else f"{x:.2f}"  # noqa: E731
    for r in rows:
        print(
            f"{r['robot']:24} {r['program']:8} {r['implementation']:25} {r['ms']:9.2f} "
            f"{fmt(r['vs_closed_form']):>9} {fmt(r['vs_pinocchio']):>11} {r['compile_s']:9.1f} "
            f"{r['peak_mb']:9.2f}"
        )
    for note in notes:
        print(note)
    record = {"rows": rows, "notes": notes, "batch": BATCH, "steps": STEPS, "load": load()}
    record["date"] = datetime.date.today().isoformat()
    pairs = min(args.train_pairs, 1) if args.quick else args.train_pairs
    if pairs > 0:
        record["training"] = training_times(pairs, args.quick)
        print(f"lagnet train, URDF / closed form: {record['training']['ratio']:.2f}")
    record["mujoco"] = mujoco.__version__
    if have_pin:
        import pinocchio

        record["pinocchio"] = pinocchio.__version__
    if args.json:
        write(args.json, "robot_dynamics", record)


if __name__ == "__main__":
    main()
