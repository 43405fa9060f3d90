"""The mathematics of the integrators: order, long-run energy, reversibility, symplecticity, stability, phase.

Numbers quoted as "the lecture" come from running the lecture's own NumPy code (seeds/000, "Thousands of periods
later"): pendulum θ'' = −sin θ, θ0 = 2, h = 0.3, 10,000 steps.
"""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from helpers import damped, fitted_order, reference_rollout  # noqa: E402

from lagnet.integrators import (  # noqa: E402
    RK4,
    BackwardEuler,
    ForwardEuler,
    Leapfrog,
    Newmark,
    Newton,
    SymplecticEuler,
    Variational,
)
from lagnet.rollout import rollout, rollout_solution  # noqa: E402
from lagnet.systems import CartPole, Duffing, MassSpringChain, Pendulum  # noqa: E402
from lagnet.systems.base import AbstractDynamics  # noqa: E402

NOMINAL = {
    "ForwardEuler": (ForwardEuler(), 1),
    "SymplecticEuler": (SymplecticEuler(), 1),
    "BackwardEuler": (BackwardEuler(), 1),
    "Leapfrog": (Leapfrog(), 2),
    "Leapfrog-predicted": (Leapfrog(implicit_kick=False), 2),
    "Newmark(1/4,1/2)": (Newmark(0.25, 0.5), 2),
    "Newmark(0,1/2)": (Newmark(0.0, 0.5), 2),
    "Variational": (Variational(), 2),
    "Variational-midpoint": (Variational("midpoint"), 2),
    "RK4": (RK4(), 4),
    "RK4-looped": (RK4(loop_stages=True), 4),
}


def _state_step(integrator, model, u, dt):
    """The one-step map x = (q, q̇) ↦ (q1, q̇1), starting the integrator's carry from x itself."""

    @jax.jit
    def step(x):
        n = x.shape[0] // 2
        q, qd = x[:n], x[n:]
        state = integrator.init(model, q, qd, u)
        q1, qd1, _, _ = integrator.step(model, q, qd, u, dt, state)
        return jnp.concatenate([q1, qd1])

    return step


def test_rk4_stage_loop_is_the_textbook_formula():
    """RK4's compact form runs its stages as a loop over the tableau (one copy of the acceleration in the program):
    the textbook arithmetic, so equal to rounding (XLA fuses the programs differently)."""
    model, u, dt = CartPole(), jnp.array([3.0]), 0.02

    @jax.jit
    def textbook(q, qd):
        a1 = model.acceleration(q, qd, u)
        v2 = qd + 0.5 * dt * a1
        a2 = model.acceleration(q + 0.5 * dt * qd, v2, u)
        v3 = qd + 0.5 * dt * a2
        a3 = model.acceleration(q + 0.5 * dt * v2, v3, u)
        v4 = qd + dt * a3
        a4 = model.acceleration(q + dt * v3, v4, u)
        return q + dt / 6 * (qd + 2 * v2 + 2 * v3 + v4), qd + dt / 6 * (a1 + 2 * a2 + 2 * a3 + a4)

    assert RK4().compact_form().loop_stages and not RK4().loop_stages
    looped = jax.jit(lambda q, qd: RK4().compact_form().step(model, q, qd, u, dt, None)[:2])
    keys = jax.random.split(jax.random.key(0), 2)
    qs, qds = (jax.random.normal(k, (64, 2)) for k in keys)
    for q, qd in zip(qs, qds, strict=True):
        for a, b in zip(looped(q, qd), textbook(q, qd), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)


# --- convergence order ------------------------------------------------------------------------------------


# Inputs change every `segment` seconds and every step size divides it, so the ZOH input is the same for all.
REFINE = (8, 16, 32)  # steps per segment


def _convergence_case(name):
    if name == "pendulum":
        model, q0, qd0 = Pendulum(), jnp.array([2.0]), jnp.array([0.0])
        segment, us = 0.25, np.zeros((8, 1))  # 2 s
    else:
        model = damped(CartPole(), jnp.array([0.3, 0.002]))
        q0, qd0 = jnp.array([0.1, 1.0]), jnp.array([0.0, -1.0])
        # 1 s of piecewise-constant force; the pole swings at about 8 rad/s.
        segment, us = 0.05, np.random.default_rng(0).uniform(-1.0, 1.0, (20, 1))
    qr, qdr = reference_rollout(model, q0, qd0, us, segment)
    return model, q0, qd0, us, segment, np.concatenate([qr[-1], qdr[-1]])


_CASES = {}


def _case(name):
    if name not in _CASES:
        _CASES[name] = _convergence_case(name)
    return _CASES[name]


@pytest.mark.parametrize("system", ["pendulum", "cartpole"])
@pytest.mark.parametrize("name", list(NOMINAL))
def test_convergence_order(system, name):
    integrator, nominal = NOMINAL[name]
    model, q0, qd0, us, segment, final = _case(system)
    hs, errors = [], []
    for k in REFINE:
        qs, qds = rollout(model, integrator, q0, qd0, np.repeat(us, k, axis=0), segment / k)
        hs.append(segment / k)
        errors.append(np.max(np.abs(np.concatenate([qs[-1], qds[-1]]) - final)))
    order = fitted_order(hs, errors)
    assert abs(order - nominal) <= 0.2, (system, name, order, errors)
    assert integrator.order == nominal


# --- the lecture's long run ---------------------------------------------------------------------------------

# max |E − E0| over the first and the last 1000 of 10,000 steps, from the lecture's own code.
LECTURE_DRIFT = {
    "leapfrog": (Leapfrog(), 2.4445015340e-2, 2.4445000093e-2),
    "newmark": (Newmark(0.25, 0.5), 1.4803428843e-2, 1.4803078255e-2),
    "rk4": (RK4(), 7.2424580897e-3, 7.0852322167e-2),
    "damped-newmark": (Newmark(0.3025, 0.6), 1.4157611603, 1.4161468365),
    "symplectic-euler": (SymplecticEuler(), 1.9009851048e-1, 1.9010213214e-1),
}
PENDULUM = Pendulum()
TH0, H = 2.0, 0.3


@pytest.mark.parametrize("name", list(LECTURE_DRIFT))
def test_lecture_energy_drift(name):
    integrator, first, last = LECTURE_DRIFT[name]
    q0, qd0 = jnp.array([TH0]), jnp.array([0.0])
    qs, qds = rollout(PENDULUM, integrator, q0, qd0, jnp.zeros((10_000, 1)), H)
    dE = np.abs(np.asarray(jax.vmap(PENDULUM.energy)(qs[1:], qds[1:])) - PENDULUM.energy(q0, qd0))
    got_first, got_last = dE[:1000].max(), dE[-1000:].max()
    np.testing.assert_allclose([got_first, got_last], [first, last], rtol=1e-6)
    if integrator.symplectic:
        assert got_last < 1.01 * got_first  # bounded over 350 periods
    if name == "rk4":
        assert got_last > 5 * got_first  # drifts
    if name == "damped-newmark":
        assert abs(got_last - 1.42) < 5e-3  # the swing is gone: E → −cos(0) = −1 from E0 = −cos 2


# --- time reversibility -------------------------------------------------------------------------------------

# Distance |θ − θ0| + |θ'| after 1000 steps with +h and 1000 with −h; the lecture's code gives these for the
# non-symmetric methods (and 7e-14, 1.7e-13 for leapfrog and average-acceleration Newmark).
LECTURE_RETURN = {"RK4": 1.0265330640, "SymplecticEuler": 0.4896355264}


@pytest.mark.parametrize(
    "name",
    [
        "Leapfrog",
        "Newmark(1/4,1/2)",
        "Variational",
        "Variational-midpoint",
        "RK4",
        "SymplecticEuler",
    ],
)
def test_time_reversibility(name):
    integrator = NOMINAL[name][0]
    dts = jnp.concatenate([jnp.full(1000, H), jnp.full(1000, -H)])
    qs, qds = rollout(
        PENDULUM, integrator, jnp.array([TH0]), jnp.array([0.0]), jnp.zeros((2000, 1)), dts
    )
    distance = float(abs(qs[-1, 0] - TH0) + abs(qds[-1, 0]))
    if integrator.symmetric:
        assert distance < 1e-12
    else:
        np.testing.assert_allclose(distance, LECTURE_RETURN[name], rtol=1e-6)


def test_leapfrog_implicit_kick_is_reversible_with_coriolis_terms():
    # The frictionless cart-pole is conservative but velocity dependent: the implicit half kick keeps symmetry.
    model, integrator = CartPole(), Leapfrog()
    dts = jnp.concatenate([jnp.full(500, 0.01), jnp.full(500, -0.01)])
    q0, qd0 = jnp.array([0.1, 2.0]), jnp.array([0.3, -1.0])
    qs, qds = rollout(model, integrator, q0, qd0, jnp.zeros((1000, 1)), dts)
    assert float(jnp.sum(jnp.abs(qs[-1] - q0)) + jnp.sum(jnp.abs(qds[-1] - qd0))) < 1e-10
    # the explicit predicted velocity does not return
    qs, qds = rollout(model, Leapfrog(implicit_kick=False), q0, qd0, jnp.zeros((1000, 1)), dts)
    assert float(jnp.sum(jnp.abs(qs[-1] - q0)) + jnp.sum(jnp.abs(qds[-1] - qd0))) > 1e-6


# --- symplecticity ------------------------------------------------------------------------------------------

OMEGA, H_LIN = 1.3, 0.3
OSCILLATOR = Duffing(omega0=OMEGA, omega1=0.0)  # u'' = −ω² u


def _rk4_area(x):
    return (1 - x**2 / 2 + x**4 / 24) ** 2 + (x - x**3 / 6) ** 2


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Leapfrog", 1.0),
        ("SymplecticEuler", 1.0),
        ("Newmark(1/4,1/2)", 1.0),
        ("Newmark(0,1/2)", 1.0),
        ("Variational", 1.0),
        ("Variational-midpoint", 1.0),
        ("ForwardEuler", 1 + (OMEGA * H_LIN) ** 2),
        ("BackwardEuler", 1 / (1 + (OMEGA * H_LIN) ** 2)),
        ("RK4", _rk4_area(OMEGA * H_LIN)),  # = 1 − (ωh)⁶/72 + (ωh)⁸/576, slightly below 1
    ],
)
def test_area_factor_on_linear_oscillator(name, expected):
    integrator = NOMINAL[name][0]
    step = _state_step(integrator, OSCILLATOR, jnp.zeros(1), H_LIN)
    det = jnp.linalg.det(jax.jacfwd(step)(jnp.array([0.7, -0.2])))
    assert abs(float(det) - expected) < 1e-12
    assert integrator.symplectic == (expected == 1.0)


def test_damped_newmark_shrinks_area():
    step = _state_step(Newmark(0.3025, 0.6), OSCILLATOR, jnp.zeros(1), H_LIN)
    assert float(jnp.linalg.det(jax.jacfwd(step)(jnp.array([0.7, -0.2])))) < 1 - 1e-3


@pytest.mark.parametrize(
    "name", ["Leapfrog", "SymplecticEuler", "Variational", "Variational-midpoint"]
)
def test_canonically_symplectic_on_nonlinear_pendulum(name):
    step = _state_step(NOMINAL[name][0], PENDULUM, jnp.zeros(1), H)
    det = jnp.linalg.det(jax.jacfwd(step)(jnp.array([2.0, 0.3])))
    assert abs(float(det) - 1) < 1e-12


@pytest.mark.parametrize("rule", ["trapezoid", "midpoint"])
def test_variational_is_symplectic_in_position_momentum(rule):
    # Cart-pole: M(q) is not constant, so the preserved form is dq ∧ dp with p = M(q) q̇, not dq ∧ dq̇.
    model, integrator = CartPole(), Variational(rule)
    u = jnp.zeros(1)

    def step(x):
        q, p = x[:2], x[2:]
        qd = jnp.linalg.solve(model.mass_matrix(q), p)
        q1, qd1, _, info = integrator.step(model, q, qd, u, 0.02, None)
        return jnp.concatenate([q1, model.mass_matrix(q1) @ qd1])

    x0 = jnp.array([0.1, 2.0, 0.01, -0.002])
    assert abs(float(jnp.linalg.det(jax.jit(jax.jacfwd(step))(x0))) - 1) < 1e-12


# --- Variational = Störmer–Verlet ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model", [Pendulum(), MassSpringChain(3, mass=1.0, stiffness=jnp.array([1.0, 2.0, 0.5, 3.0]))]
)
def test_trapezoidal_variational_is_stormer_verlet(model):
    # L = ½|q̇|² − V (unit masses): the discrete Euler–Lagrange map is leapfrog, forced or not.
    n, m = model.n_dof, model.n_inputs
    rng = np.random.default_rng(1)
    q0, qd0 = jnp.asarray(rng.normal(size=n)), jnp.asarray(rng.normal(size=n))
    us = jnp.asarray(rng.normal(size=(200, m)))
    qs_v, qds_v = rollout(model, Variational(), q0, qd0, us, 0.1)
    qs_l, qds_l = rollout(model, Leapfrog(), q0, qd0, us, 0.1)
    assert float(jnp.max(jnp.abs(qs_v - qs_l))) < 1e-13
    assert float(jnp.max(jnp.abs(qds_v - qds_l))) < 1e-13


# --- Newmark stability and phase ----------------------------------------------------------------------------


@jax.jit
def _step_matrices(integrator, whs):
    unit = Duffing(omega0=1.0, omega1=0.0)
    return jax.vmap(
        lambda h: jax.jacfwd(_state_step(integrator, unit, jnp.zeros(1), h))(jnp.zeros(2))
    )(whs)


@pytest.mark.parametrize(("beta", "gamma"), [(0.25, 0.5), (0.3025, 0.6), (0.5, 0.5), (0.45, 0.9)])
def test_newmark_unconditionally_stable(beta, gamma):
    assert 2 * beta >= gamma >= 0.5
    whs = jnp.linspace(0.01, 20.0, 400)
    gain = np.abs(np.linalg.eigvals(np.asarray(_step_matrices(Newmark(beta, gamma), whs)))).max(
        axis=1
    )
    assert gain.max() <= 1 + 1e-12
    if gamma > 0.5:
        assert gain[-1] < 0.99  # damps high frequencies


def test_central_difference_stability_limit():
    whs = jnp.linspace(0.01, 4.0, 400)
    gain = np.abs(np.linalg.eigvals(np.asarray(_step_matrices(Newmark(0.0, 0.5), whs)))).max(axis=1)
    stable, unstable = np.asarray(whs) < 2 - 1e-6, np.asarray(whs) > 2 + 1e-6
    np.testing.assert_allclose(gain[stable], 1.0, atol=1e-12)
    assert np.all(gain[unstable] > 1)


@pytest.mark.parametrize(
    ("integrator", "relation"),
    [
        (Leapfrog(), np.sin),  # sin(ω̃h/2) = ωh/2: plays sharp
        (Newmark(0.0, 0.5), np.sin),
        (Variational(), np.sin),
        (Newmark(0.25, 0.5), np.tan),  # tan(ω̃h/2) = ωh/2: plays flat
    ],
)
def test_numerical_frequency(integrator, relation):
    whs = jnp.linspace(0.01, 1.99, 100)
    eig = np.linalg.eigvals(np.asarray(_step_matrices(integrator, whs)))
    np.testing.assert_allclose(np.abs(eig), 1.0, atol=1e-12)
    w_tilde_h = np.abs(np.angle(eig)).max(axis=1)
    np.testing.assert_allclose(relation(w_tilde_h / 2), np.asarray(whs) / 2, rtol=1e-12, atol=1e-14)


# --- properties and configuration ---------------------------------------------------------------------------


def test_properties():
    assert Leapfrog().explicit and Leapfrog().symmetric and Leapfrog().symplectic
    assert Newmark(0.0, 0.5).explicit and not Newmark(0.25, 0.5).explicit
    assert Newmark(0.3025, 0.6).order == 1 and not Newmark(0.3025, 0.6).symmetric
    assert not BackwardEuler().explicit and not RK4().symplectic and not SymplecticEuler().symmetric


def test_configuration_errors():
    with pytest.raises(ValueError, match="beta"):
        Newmark(-0.1, 0.5)
    with pytest.raises(ValueError, match="rule"):
        Variational("simpson")
    with pytest.raises(ValueError, match="iterations"):
        BackwardEuler(Newton(iterations=0))


def test_variational_needs_a_lagrangian():
    class OnlyAcceleration(AbstractDynamics):
        n_dof: int = 1
        n_inputs: int = 0
        velocity_dependent: bool = False

        def acceleration(self, q, qd, u=None):
            return -q

    with pytest.raises(TypeError, match="mass_matrix|potential_energy"):
        rollout(OnlyAcceleration(), Variational(), jnp.ones(1), jnp.zeros(1), None, 0.1, steps=3)


# --- solver status ------------------------------------------------------------------------------------------


def test_nonconvergence_is_reported_not_silent():
    # One Newton iteration cannot solve backward Euler on the swinging pendulum at h = 0.5.
    integrator = BackwardEuler(Newton(iterations=1))
    args = (PENDULUM, integrator, jnp.array([2.0]), jnp.array([0.0]), jnp.zeros((5, 1)), 0.5)
    sol = rollout_solution(*args)
    assert not bool(sol.ok) and int(sol.failed_step) == 0
    with pytest.raises(RuntimeError, match="did not converge"):
        jax.block_until_ready(rollout(*args))
    # enough iterations converge
    assert bool(rollout_solution(PENDULUM, BackwardEuler(), *args[2:]).ok)


def test_blow_up_is_reported():
    class BlowsUp(AbstractDynamics):
        n_dof: int = 1
        n_inputs: int = 0
        velocity_dependent: bool = False

        def acceleration(self, q, qd, u=None):
            return jnp.where(q > 2.0, jnp.nan, q)  # NaN once q passes 2

    sol = rollout_solution(BlowsUp(), RK4(), jnp.ones(1), jnp.zeros(1), None, 0.1, steps=50)
    first_bad = int(np.argmax(~np.isfinite(np.asarray(sol.qs[:, 0])))) - 1
    assert int(sol.failed_step) == first_bad > 0
    with pytest.raises(RuntimeError):
        jax.block_until_ready(
            rollout(BlowsUp(), RK4(), jnp.ones(1), jnp.zeros(1), None, 0.1, steps=50)
        )
