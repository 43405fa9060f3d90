"""MPC in real time: lagnet's projected shooting MPC against CasADi + IPOPT and do-mpc, cart-pole swing-up on the
true rig.

The controllers solve the same problem on the same model (the known Table 2 cart-pole, the trained PINODE of
configs/cartpole_pinode.yaml with its fitted friction and 2-input history, and the same PINODE trained with the
cart's position hidden from its network): RK4 at the rig's 50 Hz sample step, a
horizon of H steps, the cost below, |u| ≤ 10 N (the drive's limit). Each runs in closed loop on the rig's true
plant (heavier cart, Stribeck friction, end stops; `lagnet.simulate.CartPoleRig`) through its actuator (10 ms
dead time, 8 ms lag), from the same initial states (hanging near rest), one solve per 20 ms sample:

- lagnet: `lagnet.control.ProjectedMPC` (up to 10 L-BFGS steps on u with at most 6 line-search steps each, each
  projected onto the box, and no step started after 20 evaluations of the cost: a bounded solve time),
  warm-started by the shifted previous plan, jit-compiled, called from Python per step;
- IPOPT: CasADi `nlpsol` on the multiple-shooting NLP (states and inputs as variables, x_{k+1} = F(x_k, ū_k) as
  equality constraints, exact Hessian by CasADi's AD), the PINODE's MLP and friction written as CasADi
  expressions with the trained weights (cross-checked against lagnet's acceleration and step), warm-started by the
  shifted previous primal solution and its multipliers;
- do-mpc: its discrete-time `MPC` on the same CasADi step (the same multiple-shooting NLP and IPOPT options), the
  past inputs as model states, `make_step` per sample with do-mpc's own warm start (its previous solution and
  multipliers, unshifted).

The closed loops of an initial state advance in lockstep, their solves interleaved, so that load changes hit
them alike; solve times are per control step after the first (cold) solve. lagnet's loops then run again alone in
the process ("lagnet, alone": the same solves, timed as a deployed controller runs them). On the PINODEs one
IPOPT solve takes seconds (60 iterations, the cap, without converging): there IPOPT is timed at the first 15
states of lagnet's loop, warm-started by its own shifted solutions; and it runs a closed loop of its own with its
iterations capped at 3 (the last iterate applied), for a success rate and cost beside lagnet's; do-mpc runs the
known model's closed loops and the capped ones. The machine's load average is recorded. casadi (or do-mpc)
absent: their rows are skipped with a note (`pip install lagnet[mpc-bench]`).

    .venv/bin/python benchmarks/mpc.py [--quick] [--json out.json]

Cost per stage (φ = 0 hanging, E the pole's energy about its pivot, E_up = g a upright):
    l(x, u) = (1 + cos φ) + 0.5 ((E − E_up)/(g a))² + 2 x² + 0.05 ẋ² + 0.002 φ̇² + 0.05 (u/10)² + 200 [|x| − 0.2]₊²
terminal: 10 (1 + cos φ) + 2 x² + 0.1 ẋ² + 0.01 φ̇². Success: |φ − π| < 0.2 rad over the last 2 s and
|x| < 0.3 m throughout (end stops at 0.36 m).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import dataclasses  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import equinox as eqx  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from _common import handwritten_rk4_step, load, write  # noqa: E402

jax.config.update("jax_enable_x64", True)

from lagnet.control import Dynamics, ProjectedMPC, shift  # noqa: E402
from lagnet.control import load as load_run  # noqa: E402
from lagnet.data.angles import wrap  # noqa: E402
from lagnet.integrators import RK4  # noqa: E402
from lagnet.models import PINODE  # noqa: E402
from lagnet.simulate import CartPoleRig, rig_sampler  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PINODE_RUNS = {
    "PINODE": (os.path.join(ROOT, "runs", "control", "cartpole_pinode"), ()),
    "PINODE, x hidden": (
        os.path.join(ROOT, "runs", "control", "cartpole_pinode_x_hidden"),
        ("model.hide_position=cyclic",),
    ),
}
PINODE_CONFIG = os.path.join(ROOT, "configs", "cartpole_pinode.yaml")

RIG = CartPoleRig()
DT = RIG.dt
U_MAX = RIG.force_limit
HORIZON = 30  # 0.6 s, about three quarters of the pole's swing period (0.78 s)
ITERATIONS = 10  # lagnet: L-BFGS steps per control step (the fixed budget)
# ... and at most this many line-search steps in each: optax's default of 20 made the solve time vary (p99 ≈ 4.5 ×
# the median on random states); 6 cut the p99 by half for +2.4 % open-loop cost (the session's measurement).
LINESEARCH_STEPS = 6
# ... and at most this many evaluations of the cost and its gradient per solve (no iteration starts after them):
# a solve makes at most MAX_EVALUATIONS + LINESEARCH_STEPS, so its time is bounded whatever the state. 16, not 20:
# with 20 the PINODEs' p99 was 21.2–25.4 ms in four closed loops, with 16 17.7–18.8 ms (0.7–1.1 ms per evaluation
# on 2 cores), at the same success (1 of 8 runs either way) and ±8 % closed-loop cost (experiments/CONTROL.md §3).
MAX_EVALUATIONS = 16
FIRST_ITERATIONS = 100  # the first (cold, untimed) solve of both
# IPOPT on the PINODE takes seconds per solve (its ReLU network's exact Hessian through 4 H RK4 stages): timed
# at the first samples of lagnet's loop, not run in closed loop; its iterations are capped there.
PINODE_SHADOW, PINODE_IPOPT_MAX_ITER = 15, 60
# A closed loop IPOPT can run on the PINODEs: its iterations capped (the known model's warm-started solves converge
# in 3), the last iterate applied; still ~0.1 s per solve, so not real time, but a success rate to set beside lagnet's.
CAPPED_IPOPT_ITER = 3
CAPPED = f"IPOPT, {CAPPED_IPOPT_ITER} iterations"  # its rows' label
CAPPED_DO_MPC = f"do-mpc, {CAPPED_IPOPT_ITER} iterations"
ALONE = "lagnet, alone"
X_SOFT, X_SAFE = 0.2, 0.3
SETTLE, TOLERANCE = 2.0, 0.2


@dataclasses.dataclass(frozen=True)
class Pole:
    """The cart-pole's pole as the cost sees it: first moment a and inertia J about the pivot."""

    a: float
    inertia: float
    g: float


POLE = Pole(
    RIG.length * (0.5 * RIG.rod_mass + RIG.tip_mass),
    RIG.length**2 * (RIG.rod_mass / 3 + RIG.tip_mass),
    RIG.g,
)


def stage_cost(x, u, np_=jnp):
    """l(x, u) of the module docstring; `np_` is jnp or casadi (same expression in both)."""
    e = (0.5 * POLE.inertia * x[3] ** 2 - POLE.g * POLE.a * np_.cos(x[1])) / (POLE.g * POLE.a) - 1.0
    rail = np_.fmax(np_.fabs(x[0]) - X_SOFT, 0.0)
    return (
        (1 + np_.cos(x[1]))
        + 0.5 * e**2
        + 2 * x[0] ** 2
        + 0.05 * x[2] ** 2
        + 0.002 * x[3] ** 2
        + 0.05 * (u[0] / U_MAX) ** 2
        + 200 * rail**2
    )


def terminal_cost(x, np_=jnp):
    return 10 * (1 + np_.cos(x[1])) + 2 * x[0] ** 2 + 0.1 * x[2] ** 2 + 0.01 * x[3] ** 2


def models() -> dict[str, Dynamics]:
    """The known Table 2 model and the trained PINODEs (trained here if absent, ~40 s each): as configured, and
    with the cart's position hidden from its network (`model.hide_position: cyclic`, as in cartpole_lqr.py)."""
    out = {"known model": Dynamics(RIG.known_system(), RK4(), DT)}
    for label, (run_dir, overrides) in PINODE_RUNS.items():
        if not os.path.exists(os.path.join(run_dir, "summary.json")):
            from lagnet.config import load_config
            from lagnet.run.training import train_run

            config = load_config(PINODE_CONFIG, list(overrides))
            train_run(config, run_dir, progress=False, overwrite=True)
        run = load_run(run_dir, dtype="float64")
        # The MPC steps at the rig's 50 Hz (the run's dt is that step up to the recording's time rounding).
        out[label] = Dynamics(run.model, run.integrator, DT)
    return out


def lags(dyn: Dynamics) -> int:
    return dyn.history.lags


# ---------------------------------------------------------------------------------------------------------------
# The true rig, one 20 ms sample at a time (`lagnet.simulate.SampledRig`: the actuator's state carried between
# calls, the controllers here run in Python).


def rig_sample_fn():
    rig = rig_sampler(RIG)
    return rig.sample, rig.init()


# ---------------------------------------------------------------------------------------------------------------
# lagnet


def lagnet_controller(dyn: Dynamics):
    mpc = ProjectedMPC(
        dyn,
        stage_cost,
        terminal_cost,
        horizon=HORIZON,
        iterations=ITERATIONS,
        max_evaluations=MAX_EVALUATIONS,
        u_min=-U_MAX,
        u_max=U_MAX,
        # L-BFGS with its zoom line search, projected onto the box: 10 steps reach IPOPT's closed-loop cost on
        # the known model where 40 Adam steps did not swing up.
        optimiser=optax.lbfgs(
            linesearch=optax.scale_by_zoom_linesearch(
                max_linesearch_steps=LINESEARCH_STEPS, initial_guess_strategy="one"
            )
        ),
    )
    # The first (cold, untimed) solve: more iterations, no evaluation budget.
    first = dataclasses.replace(mpc, iterations=FIRST_ITERATIONS, max_evaluations=None)
    k = lags(dyn)

    @eqx.filter_jit
    def step(mpc, x, plan, u_past):
        return mpc.control(x, plan, u_past if k else None)

    def control(x, plan, u_past, cold=False):
        u, plan, sol = step(first if cold else mpc, jnp.asarray(x), plan, u_past)
        return np.asarray(u), plan, float(sol.cost)

    return control


# ---------------------------------------------------------------------------------------------------------------
# CasADi + IPOPT


def casadi_acceleration(ca, model):
    """q̈(q, q̇, ū) of a `CartPole` or a `PINODE` on one (friction: tanh/atan Coulomb + viscous; an eqx MLP) as
    a CasADi function, from the model's own parameters."""
    pinode = isinstance(model, PINODE)
    system = model.known_system if pinode else model
    mc, mr, mt, length, g = (
        float(getattr(system, n)) for n in ("cart_mass", "rod_mass", "tip_mass", "length", "g")
    )
    a, inertia, total = length * (0.5 * mr + mt), length**2 * (mr / 3 + mt), mc + mr + mt
    m_bar = model.history.size if pinode else 1
    q, qd, ub = ca.SX.sym("q", 2), ca.SX.sym("qd", 2), ca.SX.sym("u", m_bar)
    force = ca.SX.zeros(2)
    if pinode and model.friction is not None:
        fr = model.friction
        if set(fr.on) - {"viscous", "coulomb"}:
            raise NotImplementedError(f"friction terms {sorted(fr.on)}")
        sign = ca.atan(qd / fr.epsilon) if fr.shape == "atan" else ca.tanh(qd / fr.epsilon)
        b, c = (np.asarray(fr.coefficient(t), float) for t in ("viscous", "coulomb"))
        force -= b * qd + c * sign
    if pinode and model.network is not None:
        feats = model.features
        idx, other = feats._shown()
        parts = [ca.sin(q[int(i)]) for i in idx] + [ca.cos(q[int(i)]) for i in idx]
        mean, qs = np.asarray(feats.q_mean, float), np.asarray(feats.q_scale, float)
        parts += [(q[int(i)] - mean[i]) / qs[i] for i in other]
        parts += [qd / np.asarray(feats.qd_scale, float), ub / np.asarray(feats.u_scale, float)]
        z = ca.vertcat(*parts)
        activations = {jax.nn.relu: lambda v: ca.fmax(v, 0), jnp.tanh: ca.tanh}
        net = model.network
        for i, layer in enumerate(net.layers):
            z = ca.mtimes(np.asarray(layer.weight, float), z) + np.asarray(layer.bias, float)
            act = net.activation if i < len(net.layers) - 1 else net.final_activation
            if act is not None and not (hasattr(act, "__name__") and act.__name__ == "<lambda>"):
                z = activations[act](z)
        z = np.asarray(model.output_scale.value, float) * z
        for j, coord in enumerate(model.force_on):
            force[coord] += z[j]
    cos, sin = ca.cos(q[1]), ca.sin(q[1])
    r0 = ub[0] + force[0] + a * qd[1] ** 2 * sin
    r1 = force[1] - g * a * sin
    det = total * inertia - (a * cos) ** 2
    qdd = ca.vertcat((inertia * r0 - a * cos * r1) / det, (total * r1 - a * cos * r0) / det)
    return ca.Function("accel", [q, qd, ub], [qdd])


def casadi_step(ca, accel, dt):
    """Classical RK4 on x = (q, q̇) with ū held, as lagnet's `RK4`."""
    x, ub = ca.SX.sym("x", 4), ca.SX.sym("u", accel.size1_in(2))
    # The hand-written references' RK4 is plain arithmetic: on CasADi symbols it builds the same expression.
    q1, qd1 = handwritten_rk4_step(accel, x[:2], x[2:], ub, dt)
    return ca.Function("step", [x, ub], [ca.vertcat(q1, qd1)])


def cross_check(ca, dyn: Dynamics, accel, step) -> float:
    """max |Δ| between the CasADi and lagnet accelerations and steps at random states and inputs."""
    rng = np.random.default_rng(0)
    worst = 0.0
    m_bar = accel.size1_in(2)
    for _ in range(20):
        x = rng.normal(size=4) * [0.2, 2.0, 1.0, 5.0]
        ub = rng.uniform(-U_MAX, U_MAX, m_bar)
        ref = np.asarray(
            dyn.model.acceleration(jnp.asarray(x[:2]), jnp.asarray(x[2:]), jnp.asarray(ub))
        )
        worst = max(worst, float(np.max(np.abs(np.asarray(accel(x[:2], x[2:], ub)).ravel() - ref))))
        ref = np.asarray(dyn.step(jnp.asarray(x), jnp.asarray(ub)))
        worst = max(worst, float(np.max(np.abs(np.asarray(step(x, ub)).ravel() - ref))))
    return worst


def ipopt_options(max_iter: int) -> dict:
    """IPOPT's settings, for CasADi's `nlpsol` and do-mpc alike: quiet, tol 1e-6, warm-started."""
    return {
        "ipopt.print_level": 0,
        "ipopt.sb": "yes",
        "print_time": False,
        "ipopt.tol": 1e-6,
        "ipopt.max_iter": max_iter,
        "ipopt.warm_start_init_point": "yes",
        "ipopt.mu_init": 1e-3,
    }


def ipopt_controller(ca, dyn: Dynamics, max_iter: int = 200):
    """Multiple shooting: variables X (4, H + 1), U (1, H); parameters x0 and the k past inputs."""
    accel = casadi_acceleration(ca, dyn.model)
    step = casadi_step(ca, accel, DT)
    gap = cross_check(ca, dyn, accel, step)
    k = lags(dyn)
    X, U = ca.SX.sym("X", 4, HORIZON + 1), ca.SX.sym("U", 1, HORIZON)
    x0, past = ca.SX.sym("x0", 4), ca.SX.sym("past", max(k, 1))
    seq = ca.horzcat(*[past[j] for j in reversed(range(k))], U) if k else U  # oldest first
    cost, g = 0, [X[:, 0] - x0]
    for i in range(HORIZON):
        ub = ca.vertcat(*[seq[k + i - j] for j in range(k + 1)])  # u_i, u_{i−1}, …, newest first
        cost += stage_cost(X[:, i], U[:, i], ca)
        g.append(X[:, i + 1] - step(X[:, i], ub))
    cost += terminal_cost(X[:, HORIZON], ca)
    nlp = {"x": ca.veccat(X, U), "p": ca.vertcat(x0, past), "f": cost, "g": ca.vertcat(*g)}
    solver = ca.nlpsol("ipopt", "ipopt", nlp, ipopt_options(max_iter))
    nx = 4 * (HORIZON + 1)
    lbx = np.concatenate([np.full(nx, -np.inf), np.full(HORIZON, -U_MAX)])
    ubx = np.concatenate([np.full(nx, np.inf), np.full(HORIZON, U_MAX)])
    zeros_g = np.zeros(4 * (HORIZON + 1))

    def control(x, guess, u_past, cold=False):
        """guess: (plan (H, 1), states (H + 1, 4) or None, multipliers or None)."""
        plan, states, lam = guess
        if (
            states is None
        ):  # the states the plan gives on the model: a consistent multiple-shooting start
            states = np.asarray(
                dyn.rollout(jnp.asarray(x), jnp.asarray(plan), u_past=u_past if k else None)
            )
        z0 = np.concatenate([states.ravel(), np.asarray(plan).ravel()])
        p = np.concatenate([x, np.asarray(u_past).ravel() if k else np.zeros(1)])
        args = dict(x0=z0, p=p, lbx=lbx, ubx=ubx, lbg=zeros_g, ubg=zeros_g)
        if lam is not None and not cold:
            args.update(lam_x0=lam[0], lam_g0=lam[1])
        sol = solver(**args)
        z = np.asarray(sol["x"]).ravel()
        xs, us = z[:nx].reshape(HORIZON + 1, 4), z[nx:].reshape(HORIZON, 1)
        ok = solver.stats()["success"]
        lam = (np.asarray(sol["lam_x"]).ravel(), np.asarray(sol["lam_g"]).ravel())
        nxt = (np.asarray(shift(us)), np.concatenate([xs[1:], xs[-1:]]), lam)
        return us[0], nxt, float(sol["f"]), ok, solver.stats()["iter_count"]

    return control, gap


# ---------------------------------------------------------------------------------------------------------------
# do-mpc (its discrete-time MPC on the same CasADi step: the same multiple-shooting NLP, solved by IPOPT)


def do_mpc_controller(ca, dyn: Dynamics, max_iter: int = 200):
    """do-mpc as its users run it: a discrete `Model` whose state carries the k past inputs, `MPC.make_step`
    per sample, do-mpc's own warm start (the previous solution and multipliers, unshifted). The first solve starts
    from the same plan as the others (and the states it gives on the model); `ipopt_options` as for IPOPT."""
    import do_mpc

    accel = casadi_acceleration(ca, dyn.model)
    step = casadi_step(ca, accel, DT)
    k = lags(dyn)
    model = do_mpc.model.Model("discrete", "SX")
    x = model.set_variable("_x", "x", shape=(4, 1))
    u = model.set_variable("_u", "u", shape=(1, 1))
    if k:
        past = model.set_variable("_x", "past", shape=(k, 1))  # u_{i−1}, …, u_{i−k}, newest first
        model.set_rhs("x", step(x, ca.vertcat(u, past)))
        model.set_rhs("past", ca.vertcat(u, past[: k - 1]))
    else:
        model.set_rhs("x", step(x, u))
    model.setup()
    mpc = do_mpc.controller.MPC(model)
    mpc.settings.n_horizon = HORIZON
    mpc.settings.t_step = DT
    mpc.settings.n_robust = 0
    mpc.settings.store_full_solution = False
    mpc.settings.nlpsol_opts = ipopt_options(max_iter)
    mpc.set_objective(lterm=stage_cost(x, u, ca), mterm=terminal_cost(x, ca))
    mpc.set_rterm(u=0.0)
    mpc.bounds["lower", "_u", "u"] = -U_MAX
    mpc.bounds["upper", "_u", "u"] = U_MAX
    # do-mpc's own checks call numpy on casadi values (a FutureWarning).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        mpc.setup()

    def augmented(x, u_past):
        return np.concatenate([np.asarray(x, float), np.asarray(u_past, float).ravel()])

    def control(x, guess, u_past, cold=False):
        x0 = augmented(x, u_past[:k])
        if cold:
            plan = np.asarray(guess[0])
            states = np.asarray(
                dyn.rollout(jnp.asarray(x), jnp.asarray(plan), u_past=u_past if k else None)
            )
            seq = np.concatenate([np.asarray(u_past[:k])[::-1].ravel(), plan.ravel()])
            mpc.x0, mpc.u0 = x0, plan[0]
            mpc.set_initial_guess()  # then each stage's values (seq: inputs oldest first)
            for i in range(HORIZON + 1):
                mpc.opt_x_num["_x", i, 0, -1] = augmented(states[i], seq[i : i + k][::-1])
                if i < HORIZON:
                    mpc.opt_x_num["_u", i, 0] = plan[i]
        u0 = np.asarray(mpc.make_step(x0)).ravel()
        stats = mpc.solver_stats
        return u0, guess, float("nan"), bool(stats["success"]), int(stats["iter_count"])

    return control


# ---------------------------------------------------------------------------------------------------------------


def initial_plan():
    """The first solve's start, the same for both: a push back and forth at the pole's swing frequency (at rest
    hanging down the cost's gradient vanishes, and a zero plan would stay there)."""
    t = DT * np.arange(HORIZON)
    return (0.3 * U_MAX * np.sin(2 * np.pi * t / 0.78))[:, None]


def score(xs, us):
    """(success, closed-loop cost Σ l(x, u) dt) of one run."""
    err = np.abs(wrap(xs[:, 1] - np.pi))
    last = int(round(SETTLE / DT))
    ok = bool(
        np.all(np.isfinite(xs))
        and np.max(err[-last:]) < TOLERANCE
        and np.max(np.abs(xs[:, 0])) < X_SAFE
    )
    stage = jax.vmap(stage_cost)(jnp.asarray(xs[:-1]), jnp.asarray(us))
    return ok, float(np.sum(np.asarray(stage)) * DT)


def closed_loops(
    dyn: Dynamics,
    x0s,
    samples,
    ca=None,
    shadow: int | None = None,
    max_iter: int = 200,
    with_lagnet: bool = True,
    solvers: tuple[str, ...] = ("IPOPT",),
) -> dict:
    """Both controllers from every initial state, in lockstep; per controller: xs, us, solve times, success.

    With `shadow` = M, IPOPT does not drive a rig: it solves, warm-started by its own shifted solution, at
    the states of lagnet's loop for its first M samples (first initial state only), its inputs unused: solve
    times without a closed loop, for a model on which one IPOPT solve takes seconds. Without `with_lagnet`,
    IPOPT's loop alone. `solvers`: which of "IPOPT" and "do-mpc" run (with `ca`; do-mpc where it is installed).
    """
    sample, act0 = rig_sample_fn()
    k = lags(dyn)
    controllers = {"lagnet": lagnet_controller(dyn)} if with_lagnet else {}
    gap = None
    if ca is not None and "IPOPT" in solvers:
        controllers["IPOPT"], gap = ipopt_controller(ca, dyn, max_iter)
    if ca is not None and "do-mpc" in solvers and do_mpc_available():
        controllers["do-mpc"] = do_mpc_controller(ca, dyn, max_iter)
    out = {
        name: {"xs": [], "us": [], "times": [], "cold_s": [], "ok": [], "cost": []}
        for name in controllers
    }
    for name in set(controllers) - {"lagnet"}:
        out[name].update(failed_solves=0, iterations=[], shadow=shadow if name == "IPOPT" else None)
    past0 = np.zeros((max(k, 1), 1))
    for i, x0 in enumerate(x0s):
        state = {}
        for name in controllers:
            plan = jnp.asarray(initial_plan()) if name == "lagnet" else (initial_plan(), None, None)
            state[name] = dict(
                x=np.asarray(x0, float), act=act0, plan=plan, past=past0, xs=[x0], us=[]
            )
        # Both lagnet programs (the cold first solve, the warm-started one) compiled before timing.
        for cold in (True, False) if with_lagnet else ():
            controllers["lagnet"](
                x0, jnp.asarray(initial_plan()), jnp.asarray(past0[:k]), cold=cold
            )
        for n in range(samples):
            for name, control in controllers.items():
                s = state[name]
                if shadow is not None and name == "IPOPT":
                    if n >= shadow or i > 0:
                        continue
                    s["x"], s["past"] = state["lagnet"]["x"], state["lagnet"]["past"]
                t = time.perf_counter()
                if name == "lagnet":
                    u, s["plan"], _ = control(
                        s["x"], s["plan"], jnp.asarray(s["past"][:k]), cold=n == 0
                    )
                else:
                    u, s["plan"], _, ok, iters = control(
                        s["x"], s["plan"], s["past"][:k], cold=n == 0
                    )
                    out[name]["failed_solves"] += int(not ok)
                    out[name]["iterations"].append(iters)
                elapsed = time.perf_counter() - t
                (out[name]["cold_s"] if n == 0 else out[name]["times"]).append(elapsed)
                if shadow is not None and name == "IPOPT":
                    continue
                u = np.clip(np.asarray(u, float).reshape(1), -U_MAX, U_MAX)
                x, s["act"] = sample(jnp.asarray(s["x"]), s["act"], jnp.asarray(u))
                s["x"] = np.asarray(x)
                s["past"] = np.concatenate([u[None], s["past"][:-1]])
                s["xs"].append(s["x"])
                s["us"].append(u)
        for name in controllers:
            if shadow is not None and name == "IPOPT":
                continue
            xs, us = np.asarray(state[name]["xs"]), np.asarray(state[name]["us"])
            ok, cost = score(xs, us)
            for key, value in (("xs", xs), ("us", us), ("ok", ok), ("cost", cost)):
                out[name][key].append(value)
    out["_cross_check"] = gap
    return out


def summary(res: dict) -> dict:
    out = {}
    for name, r in res.items():
        if name.startswith("_"):
            continue
        t = np.asarray(r["times"]) * 1e3
        out[name] = {
            "median_ms": float(np.median(t)),
            "p99_ms": float(np.percentile(t, 99)),
            "max_ms": float(np.max(t)),
            "cold_ms": float(np.median(r["cold_s"]) * 1e3),
            "success": int(np.sum(r["ok"])) if r["ok"] else None,
            "runs": len(r["ok"]),
            "mean_cost": float(np.mean(r["cost"])) if r["cost"] else None,
            "cost": [float(c) for c in r["cost"]],
            "max_tilt_last_2s": [
                float(np.max(np.abs(wrap(x[-int(SETTLE / DT) :, 1] - np.pi)))) for x in r["xs"]
            ],
            "max_abs_x": [float(np.max(np.abs(x[:, 0]))) for x in r["xs"]],
        }
        if "iterations" in r:
            out[name]["median_ipopt_iterations"] = float(np.median(r["iterations"]))
            out[name]["failed_solves"] = r["failed_solves"]
            out[name]["solves"] = len(r["iterations"])
            out[name]["shadow_of_lagnet_loop"] = r["shadow"]
    return out


def do_mpc_version() -> str | None:
    try:
        # Its import warns of optional features (ONNX, OPC UA) it lacks.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import do_mpc
    except ImportError:
        return None
    return do_mpc.__version__


def do_mpc_available() -> bool:
    return do_mpc_version() is not None


def casadi_or_none(disabled: bool):
    if disabled:
        return None
    try:
        import casadi
    except ImportError:
        return None
    return casadi


def initial_states(count: int):
    """Hanging near rest: cart positions and small tilts, spread over the rail's middle."""
    xs = np.linspace(-0.1, 0.1, count)
    tilts = np.where(np.arange(count) % 2 == 0, 0.1, -0.1)
    return np.stack([xs, tilts, np.zeros(count), np.zeros(count)], axis=1)


def run(states: int, duration: float, no_casadi: bool = False) -> tuple[dict, dict]:
    ca = casadi_or_none(no_casadi)
    samples = int(round(duration / DT))
    x0s = initial_states(states)
    raw, record = {}, {}
    for label, dyn in models().items():
        shadow = (
            dict(shadow=PINODE_SHADOW, max_iter=PINODE_IPOPT_MAX_ITER) if "PINODE" in label else {}
        )
        # do-mpc solves the NLP IPOPT does: on the PINODEs only its capped closed loop (no converging shadow).
        solvers = ("IPOPT",) if shadow else ("IPOPT", "do-mpc")
        res = closed_loops(dyn, x0s, samples, ca, solvers=solvers, **shadow)
        if shadow and ca is not None:
            capped = closed_loops(
                dyn,
                x0s,
                samples,
                ca,
                max_iter=CAPPED_IPOPT_ITER,
                with_lagnet=False,
                solvers=("IPOPT", "do-mpc"),
            )
            res[CAPPED] = capped["IPOPT"]
            if "do-mpc" in capped:
                res[CAPPED_DO_MPC] = capped["do-mpc"]
        # The same loops of lagnet's alone in the process, as a deployed controller runs: the real-time figure
        # (its solves and so its trajectories are those above; interleaved, a peer's solve of up to seconds
        # before each of lagnet's leaves it the caches cold).
        res[ALONE] = closed_loops(dyn, x0s, samples)["lagnet"]
        raw[label] = res
        record[label] = {"cross_check_casadi_vs_lagnet": res["_cross_check"], **summary(res)}
    return raw, record


def report(record: dict, states: int, duration: float, ca, load_before, seconds: float) -> dict:
    """The benchmark's JSON record: settings, per model and solver the summary, and lagnet's speed-ups."""
    ratios = {}
    for label, r in record.items():
        for peer in (CAPPED, CAPPED_DO_MPC, "do-mpc"):
            if peer in r:
                ratios[f"{label} vs {peer}"] = {
                    "median_speedup": r[peer]["median_ms"] / r["lagnet"]["median_ms"],
                    "p99_speedup": r[peer]["p99_ms"] / r["lagnet"]["p99_ms"],
                    "success_lagnet": r["lagnet"]["success"],
                    "success_peer": r[peer]["success"],
                    "cost_ratio_lagnet_over_peer": r["lagnet"]["mean_cost"] / r[peer]["mean_cost"],
                }
        if "IPOPT" in r:
            ratios[label] = {
                "median_speedup": r["IPOPT"]["median_ms"] / r["lagnet"]["median_ms"],
                "p99_speedup": r["IPOPT"]["p99_ms"] / r["lagnet"]["p99_ms"],
                "cost_ratio_lagnet_over_ipopt": (
                    r["lagnet"]["mean_cost"] / r["IPOPT"]["mean_cost"]
                    if r["IPOPT"]["mean_cost"]
                    else None
                ),
            }
    note = None
    if not ca:
        note = "casadi absent: IPOPT and do-mpc skipped (pip install lagnet[mpc-bench])"
    elif not do_mpc_available():
        note = "do-mpc absent: its rows skipped (pip install lagnet[mpc-bench])"
    return {
        "horizon": HORIZON,
        "dt": DT,
        "u_max": U_MAX,
        "lagnet_iterations": ITERATIONS,
        "lagnet_linesearch_steps": LINESEARCH_STEPS,
        "lagnet_max_evaluations": MAX_EVALUATIONS,
        "states": states,
        "duration_s": duration,
        "casadi": ca.__version__ if ca else None,
        "do_mpc": do_mpc_version(),
        "note": note,
        "load_before": load_before,
        "load_after": load(),
        "seconds": seconds,
        "results": record,
        "ratios": ratios,
    }


def main():
    from _common import parser

    p = parser(__doc__)
    p.add_argument("--states", type=int, default=2)
    p.add_argument("--duration", type=float, default=5.0)
    p.add_argument("--no-casadi", action="store_true", help="skip the CasADi/IPOPT comparison")
    args = p.parse_args()
    if args.quick:
        args.states, args.duration = 1, 4.0
    load_before = load()
    t0 = time.perf_counter()
    _, record = run(args.states, args.duration, args.no_casadi)
    ca = casadi_or_none(args.no_casadi)
    seconds = time.perf_counter() - t0
    write(args.json, "mpc", report(record, args.states, args.duration, ca, load_before, seconds))


if __name__ == "__main__":
    main()
