"""The lecture's nonlinear oscillators and networks: hammer, bow, Rayleigh, cloth, and their force networks."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lagnet.integrator_analysis import hopf_onset, limit_cycle_amplitude
from lagnet.integrators import (
    RK4,
    BackwardEuler,
    CentredImplicit,
    ForwardEuler,
    Leapfrog,
    LinearlyImplicitEuler,
    SymplecticEuler,
    centred_velocities,
)
from lagnet.models import PINODE, StateFeatures
from lagnet.models.lecture.passive import ContactNetwork, PassiveFriction
from lagnet.rollout import rollout, rollout_solution
from lagnet.systems.lecture.bowed import BowedOscillator, SoftFriction
from lagnet.systems.lecture.cloth import Cloth
from lagnet.systems.lecture.hammer import Hammer
from lagnet.systems.lecture.rayleigh import Rayleigh

K = 1.0 / 44100


# --- bow ---------------------------------------------------------------------------------------------------


def bow_run(bow_velocity, bow_force, steps, q0=0.0, qd0=0.0):
    system = BowedOscillator(omega0=2 * np.pi * 200.0, friction=SoftFriction(100.0))
    us = jnp.tile(jnp.array([bow_velocity, bow_force]), (steps, 1))
    sol = rollout_solution(system, CentredImplicit(), jnp.array([q0]), jnp.array([qd0]), us, K)
    return system, sol


@pytest.mark.parametrize("bow_velocity", [0.0, 0.2])
def test_bow_scheme_energy_balance_is_passive(bow_velocity):
    """𝔥^{n+½} − 𝔥^{n−½} = −k F_B φ(η)(η + v_B) to rounding; with v_B = 0 the energy only decreases."""
    bow_force = 500.0
    system, sol = bow_run(bow_velocity, bow_force, 1500, q0=2e-4, qd0=0.1)
    assert bool(sol.ok)
    energy = jax.vmap(lambda a, b: system.discrete_energy(a, b, K))(sol.qs[:-1], sol.qs[1:])
    eta = centred_velocities(sol.qds)[:, 0] - bow_velocity
    supplied = -K * bow_force * system.friction(eta) * (eta + bow_velocity)
    residual = energy[1:] - energy[:-1] - supplied[1:]
    assert float(jnp.max(jnp.abs(residual))) < 1e-12 * float(jnp.max(energy))
    assert bool(jnp.all(system.friction(eta) * eta >= 0))
    if bow_velocity == 0.0:
        assert bool(jnp.all(jnp.diff(energy) <= 1e-15 * energy[0]))
        assert float(energy[-1]) < 0.5 * float(energy[0])
    else:
        # Self-sustained: the bow feeds the oscillation (stick–slip) instead of letting it decay.
        assert float(jnp.max(jnp.abs(sol.qs[-400:]))) > 1e-4


def test_bow_newton_unique_inside_bound_and_not_beyond():
    system = BowedOscillator(friction=SoftFriction(100.0))
    phi, bow_force = system.friction, 500.0
    kmax = float(system.max_step(bow_force))
    eta = jnp.linspace(-2.0, 2.0, 200001)
    np.testing.assert_allclose(
        float(-jnp.min(phi.derivative(eta))), float(phi.max_negative_slope()), rtol=1e-8
    )
    np.testing.assert_allclose(
        jax.vmap(jax.grad(phi))(eta[::1000]), phi.derivative(eta[::1000]), rtol=1e-10, atol=1e-12
    )
    for k, unique in [(K, True), (0.99 * kmax, True), (3 * kmax, False)]:
        g = 2 / k * eta + bow_force * phi(eta)
        # Over all offsets b, g(v) + b has one root iff g is increasing; probe b at the steepest point of φ.
        b = -jnp.interp(jnp.sqrt(1.5 / 100.0), eta, g)
        roots = int(jnp.count_nonzero(jnp.diff(jnp.sign(g + b)) != 0))
        assert (roots == 1) == unique, (k, roots)
        assert bool(jnp.all(jnp.diff(g) > 0)) == unique

    # Inside the bound, Newton from any start finds the same root as the scheme's warm-started solve.
    scheme = CentredImplicit(max_iterations=50)
    q, qd, u = jnp.array([1e-4]), jnp.array([-0.3]), jnp.array([0.2, bow_force])
    starts = jnp.linspace(-0.8, 0.8, 17)[:, None]
    sols = jax.vmap(lambda v0: scheme.solve(system, q, qd, u, K, v0))(starts)
    assert bool(jnp.all(sols.converged))
    np.testing.assert_allclose(sols.v, jnp.broadcast_to(sols.v[0], sols.v.shape), atol=1e-12)
    r = 2 * (sols.v[0] - qd) / K - system.acceleration(q, sols.v[0], u)
    assert float(jnp.max(jnp.abs(r))) < 1e-6


def test_bow_warm_start_saves_iterations():
    system, sol = bow_run(0.2, 500.0, 800)
    v = centred_velocities(sol.qds)
    us = jnp.tile(jnp.array([0.2, 500.0]), (800, 1))
    scheme = CentredImplicit()
    warm = jax.vmap(lambda q, qd, u, v0: scheme.solve(system, q, qd, u, K, v0))(
        sol.qs[:-1], sol.qds[:-1], us, jnp.concatenate([sol.qds[:1], v[:-1]])
    )
    cold = jax.vmap(lambda q, qd, u: scheme.solve(system, q, qd, u, K, jnp.zeros(1)))(
        sol.qs[:-1], sol.qds[:-1], us
    )
    np.testing.assert_allclose(warm.v, v, atol=1e-12)
    assert float(jnp.mean(warm.iterations)) < float(jnp.mean(cold.iterations))
    assert int(jnp.max(warm.iterations)) <= 6


def test_centred_scheme_is_central_difference_for_position_forces():
    """For q-only forces the centred scheme is symplectic Euler in (q, δ_t− q): the central difference."""
    system = BowedOscillator(friction=None)
    q0, qd0, us = jnp.array([1.0]), jnp.array([0.3]), jnp.zeros((50, 2))
    qa, va = rollout(system, CentredImplicit(), q0, qd0, us, 1e-3)
    qb, vb = rollout(system, SymplecticEuler(), q0, qd0, us, 1e-3)
    np.testing.assert_allclose(qa, qb, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(va, vb, rtol=1e-12, atol=1e-12)


# --- hammer ------------------------------------------------------------------------------------------------


def test_hammer_forces_and_contact_time():
    system = Hammer()
    q = jnp.array([1e-5, 3e-4])
    np.testing.assert_allclose(system.gravity(q), jax.grad(system.potential_energy)(q), rtol=1e-12)
    assert float(system.force(jnp.array([1e-4, 0.0]))) == 0.0
    qs, _ = rollout(
        system, Leapfrog(), jnp.array([0.0, -1e-4]), jnp.array([0.0, 1.0]), jnp.zeros((1200, 0)), K
    )
    force = np.asarray(jax.vmap(system.force)(qs))
    on = np.nonzero(force)[0]
    assert on[-1] - on[0] + 1 == 46  # 1.04 ms: the lecture's "contact 1.0 ms"
    energy = np.asarray(jax.vmap(lambda a, b: system.discrete_energy(a, b, K))(qs[:-1], qs[1:]))
    before, after = energy[: on[0] - 1], energy[on[-1] + 1 :]
    assert np.ptp(before) < 1e-12 * before[0] and np.ptp(after) < 1e-12 * after[0]
    assert abs(after[0] / before[0] - 1) < 1e-3


def test_hammer_harder_strike_shorter_contact():
    system = Hammer()

    def contact_samples(speed):
        qs, _ = rollout(
            system,
            Leapfrog(),
            jnp.array([0.0, -1e-4]),
            jnp.array([0.0, speed]),
            jnp.zeros((1200, 0)),
            K,
        )
        return int(jnp.count_nonzero(jax.vmap(system.force)(qs)))

    n = [contact_samples(v) for v in (0.25, 1.0, 4.0)]
    assert n[0] > n[1] > n[2]


# --- Rayleigh ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mu", [0.05, 0.1])
def test_rayleigh_amplitude_near_sqrt_4mu_over_3(mu):
    system = Rayleigh(mu)
    guess = float(system.amplitude_estimate())
    # Start off the cycle (at 1.3× and 0.7× its amplitude): both must settle onto it.
    for start in (1.3, 0.7):
        amp = limit_cycle_amplitude(
            system, RK4(), 0.05, jnp.array([start * guess]), jnp.zeros(1), 8000, 400
        )
        np.testing.assert_allclose(float(amp), np.sqrt(4 * mu / 3), rtol=0.01)


def test_rayleigh_rest_is_stable_below_onset():
    amp = limit_cycle_amplitude(
        Rayleigh(-0.1), RK4(), 0.05, jnp.array([0.3]), jnp.zeros(1), 4000, 200
    )
    assert float(amp) < 1e-3


@pytest.mark.parametrize("h", [0.05, 0.2])
def test_rayleigh_onset_moves_with_euler(h):
    np.testing.assert_allclose(hopf_onset(Rayleigh, ForwardEuler(), h), -h, atol=1e-9)
    np.testing.assert_allclose(hopf_onset(Rayleigh, BackwardEuler(), h), h, atol=1e-9)
    assert abs(hopf_onset(Rayleigh, RK4(), h)) < 1e-3 * h


def test_rayleigh_power_is_friction_power():
    system = Rayleigh(0.3)
    q, qd = jnp.array([0.2]), jnp.array([0.7])
    de = jax.grad(system.energy, argnums=(0, 1))(q, qd)
    dedt = de[0] @ qd + de[1] @ system.acceleration(q, qd)
    np.testing.assert_allclose(dedt, system.power(q, qd), rtol=1e-12)


# --- cloth -------------------------------------------------------------------------------------------------


def test_cloth_stiffness_matvec_is_the_hessian_when_stretched(key):
    system = Cloth(n=4)
    q0, _ = system.initial_state()
    # Lifting the free nodes out of the plane stretches every spring (no clamping of the lateral part).
    lift = (
        jnp.zeros((q0.shape[0] // 3, 3))
        .at[:, 1]
        .set(0.2 * jax.random.normal(key, (q0.shape[0] // 3,)))
    )
    q = q0 + lift.ravel()
    p = jax.random.normal(jax.random.fold_in(key, 1), q0.shape)
    hvp = jax.jvp(system.gravity, (q,), (p,))[1]  # ∂G/∂q p = −∂f/∂x p
    np.testing.assert_allclose(system.stiffness_matvec(q, p), hvp, rtol=1e-10, atol=1e-8)
    np.testing.assert_allclose(
        system.gravity(q), jax.grad(system.potential_energy)(q), rtol=1e-10, atol=1e-10
    )


def test_cloth_implicit_stable_at_60hz_explicit_explodes_at_400hz():
    system = Cloth()
    q0, qd0 = system.initial_state()
    sol = rollout_solution(system, LinearlyImplicitEuler(), q0, qd0, None, 1 / 60, steps=120)
    assert bool(sol.ok)
    positions = jax.vmap(system.positions)(sol.qs)
    assert float(jnp.max(jnp.abs(positions))) < 1.5
    # It hangs below the pinned edge, swinging with bounded speeds (2 s of simulated time).
    assert -1.2 < float(jnp.min(positions[-1, :, 1])) < -0.5
    assert float(jnp.max(jnp.abs(sol.qds))) < 5.0
    bad = rollout_solution(system, SymplecticEuler(), q0, qd0, None, 1 / 400, steps=40)
    pos = jax.vmap(system.positions)(bad.qs)
    assert not bool(jnp.all(jnp.isfinite(pos)) & (jnp.max(jnp.abs(pos)) < 5))


# --- force networks ----------------------------------------------------------------------------------------


def test_passive_friction_network_is_passive_for_any_weights(key):
    eta = jnp.linspace(-3.0, 3.0, 601)
    curve = eqx.filter_jit(lambda net: jax.vmap(net.phi)(eta))
    for i in range(5):
        net = PassiveFriction(key=jax.random.fold_in(key, i))
        assert bool(jnp.all(curve(net) * eta >= 0))
    free = PassiveFriction(passive=False, key=key)
    assert free.phi(jnp.array(0.0)).shape == ()


def test_force_networks_plug_into_pinode(key):
    bow = PINODE(
        BowedOscillator(friction=None),
        network=PassiveFriction(key=key),
        features=StateFeatures((False,), 2),
        force_on=(0,),
    )
    q, qd, u = jnp.array([1e-4]), jnp.array([0.05]), jnp.array([0.2, 300.0])
    expected = -(BowedOscillator().omega0 ** 2) * q - 300.0 * bow.network.phi(qd[0] - 0.2)
    np.testing.assert_allclose(bow.acceleration(q, qd, u), expected, rtol=1e-12)

    hammer = PINODE(
        Hammer(contact=False),
        network=ContactNetwork(compression_scale=1e-4, force_scale=1e3, key=key),
        features=StateFeatures((False, False), 0),
        force_on=(0, 1),
    )
    q = jnp.array([0.0, 2e-4])
    a = hammer.acceleration(q, jnp.zeros(2), jnp.zeros(0))
    f = hammer.network.law(q[1] - q[0])
    np.testing.assert_allclose(a, jnp.stack([Hammer().mass_ratio * f, -f]), rtol=1e-12)
    assert float(hammer.network.law(jnp.array(-1e-4))) == 0.0


def test_linearly_implicit_euler_needs_a_spring_network():
    with pytest.raises(TypeError, match="AbstractSpringNetwork"):
        rollout(Rayleigh(), LinearlyImplicitEuler(), jnp.ones(1), jnp.zeros(1), None, 0.1, steps=2)
