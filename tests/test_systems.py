"""Known mechanics: closed forms against autodiff and sympy, structural properties, transformations, errors."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import sympy as sp

from lagnet.systems import (
    CartPole,
    DoublePendulum,
    Duffing,
    Lagrangian,
    MassSpringChain,
    Pendulum,
)

SYSTEMS = {
    "pendulum": Pendulum(mass=0.7, length=1.3, g=9.81),
    "pendulum_default": Pendulum(),
    "cartpole": CartPole(),
    "double_pendulum": DoublePendulum(
        m1=1.2, m2=0.8, l1=1.1, l2=0.9, r1=0.5, r2=0.4, I1=0.1, I2=0.05
    ),
    "double_pendulum_point": DoublePendulum(),
    "acrobot": DoublePendulum.acrobot(),
    "pendubot": DoublePendulum.pendubot(m2=0.5),
    "chain": MassSpringChain(
        5, mass=jnp.linspace(0.5, 1.5, 5), stiffness=jnp.linspace(1.0, 3.0, 6)
    ),
    "duffing": Duffing(omega0=1.3, omega1=0.8),
}


def random_state(system, seed):
    rng = np.random.default_rng(seed)
    n, m = system.n_dof, system.n_inputs
    return (
        jnp.asarray(rng.uniform(-np.pi, np.pi, n)),
        jnp.asarray(rng.normal(size=n)),
        jnp.asarray(rng.normal(size=m)),
    )


def as_lagrangian(system):
    """The same system rebuilt from its T and V alone."""
    return Lagrangian(
        lambda q, qd: 0.5 * qd @ system.mass_matrix(q) @ qd,
        system.potential_energy,
        system.n_dof,
        input_matrix=system.input_matrix,
    )


@pytest.mark.parametrize("name", SYSTEMS)
def test_closed_form_matches_autodiff_lagrangian(name):
    system = SYSTEMS[name]
    auto = as_lagrangian(system)
    for seed in range(5):
        q, qd, u = random_state(system, seed)
        np.testing.assert_allclose(system.mass_matrix(q), auto.mass_matrix(q), atol=1e-10)
        np.testing.assert_allclose(
            system.coriolis(q, qd) @ qd, auto.coriolis(q, qd) @ qd, atol=1e-10
        )
        np.testing.assert_allclose(system.gravity(q), auto.gravity(q), atol=1e-10)
        np.testing.assert_allclose(
            system.acceleration(q, qd, u), auto.acceleration(q, qd, u), rtol=1e-10, atol=1e-10
        )


@pytest.mark.parametrize("name", SYSTEMS)
def test_mass_matrix_spd_and_skew_property(name):
    system = SYSTEMS[name]
    for seed in range(5):
        q, qd, _ = random_state(system, seed)
        m = system.mass_matrix(q)
        np.testing.assert_allclose(m, m.T, atol=1e-14)
        assert np.min(np.linalg.eigvalsh(np.asarray(m))) > 0
        # Ṁ − 2C is skew-symmetric for the Christoffel factorisation (passivity of the mechanics).
        mdot = jax.jvp(system.mass_matrix, (q,), (qd,))[1]
        n = mdot - 2 * system.coriolis(q, qd)
        np.testing.assert_allclose(n, -n.T, atol=1e-10)


@pytest.mark.parametrize("name", SYSTEMS)
def test_energy_balance(name):
    """dE/dt along the flow equals q̇ᵀ(B u + Q)."""
    system = SYSTEMS[name]
    for seed in range(3):
        q, qd, u = random_state(system, seed)
        extra = jnp.asarray(np.random.default_rng(seed + 100).normal(size=system.n_dof))
        qdd = system.acceleration(q, qd, u, extra)
        de_dt = jax.jvp(system.energy, (q, qd), (qd, qdd))[1]
        np.testing.assert_allclose(de_dt, system.power(q, qd, u, extra), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", SYSTEMS)
def test_jit_vmap_grad(name):
    system = SYSTEMS[name]
    batch = [random_state(system, s) for s in range(4)]
    q, qd, u = (jnp.stack(x) for x in zip(*batch, strict=True))
    acc = jax.jit(jax.vmap(system.acceleration))(q, qd, u)
    for i in range(4):
        np.testing.assert_allclose(acc[i], system.acceleration(q[i], qd[i], u[i]), rtol=1e-12)
    energy = jax.jit(jax.vmap(system.energy))(q, qd)
    assert energy.shape == (4,)
    for method in ("mass_matrix", "gravity", "potential_energy", "input_matrix"):
        out = jax.vmap(getattr(system, method))(q)
        assert out.shape[0] == 4
    assert jax.vmap(system.coriolis)(q, qd).shape == (4, system.n_dof, system.n_dof)

    # Gradients with respect to the state (checked against central differences) and the parameters.
    def loss(q0):
        return jnp.sum(system.acceleration(q0, qd[0], u[0]) ** 2) + system.energy(q0, qd[0])

    g = jax.grad(loss)(q[0])
    eps = 1e-6
    fd = jnp.stack(
        [(loss(q[0] + eps * e) - loss(q[0] - eps * e)) / (2 * eps) for e in jnp.eye(system.n_dof)]
    )
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)
    grads = eqx.filter_grad(lambda s: jnp.sum(s.acceleration(q[0], qd[0], u[0]) ** 2))(system)
    leaves = jax.tree_util.tree_leaves(grads)
    assert leaves and all(np.all(np.isfinite(x)) for x in leaves)
    # vmap over a batch of parameter sets (a sweep over models).
    if isinstance(system, Pendulum):
        sweep = jax.vmap(lambda m: Pendulum(mass=m).acceleration(q[0], qd[0], u[0]))(
            jnp.array([0.5, 1.0, 2.0])
        )
        np.testing.assert_allclose(
            sweep[:, 0], -jnp.sin(q[0, 0]) + u[0, 0] / jnp.array([0.5, 1, 2])
        )


def test_pendulum_is_the_lecture_pendulum():
    q = jnp.array([0.7])
    np.testing.assert_allclose(Pendulum().acceleration(q, jnp.zeros(1)), -jnp.sin(q), rtol=1e-15)


def test_cartpole_tip_convention():
    """φ = 0 hangs down: pushing the cart right swings the pole left (φ̈ < 0) from rest."""
    cp = CartPole()
    qdd = cp.acceleration(jnp.zeros(2), jnp.zeros(2), jnp.array([1.0]))
    assert qdd[0] > 0 and qdd[1] < 0
    # Upright (φ = π) is an equilibrium, and the potential is highest there.
    np.testing.assert_allclose(
        cp.acceleration(jnp.array([0.0, jnp.pi]), jnp.zeros(2)), 0.0, atol=1e-12
    )
    assert cp.potential_energy(jnp.array([0.0, jnp.pi])) > cp.potential_energy(jnp.zeros(2))


# ---- independent derivation with sympy ---------------------------------------------------------


def sympy_equations(positions, masses, inertias, angles_of_bodies, q, qd, g):
    """q̈ from Lagrange's equations for rigid bodies given their centre positions and orientation angles."""
    t = sp.Symbol("t")
    qt = [sp.Function(f"q{i}")(t) for i in range(len(q))]
    subs_t = dict(zip(q, qt, strict=True))
    T = 0
    V = 0
    for pos, m, inertia, ang in zip(positions, masses, inertias, angles_of_bodies, strict=True):
        x, y = (sp.sympify(c).subs(subs_t) for c in pos)
        th = sp.sympify(ang).subs(subs_t)
        T += sp.Rational(1, 2) * m * (sp.diff(x, t) ** 2 + sp.diff(y, t) ** 2)
        T += sp.Rational(1, 2) * inertia * sp.diff(th, t) ** 2
        V += m * g * y
    L = T - V
    qdd_syms = sp.symbols(f"a0:{len(q)}")
    eqs = []
    for qi in qt:
        eqs.append(sp.diff(sp.diff(L, sp.diff(qi, t)), t) - sp.diff(L, qi))
    repl = {}
    for i, qi in enumerate(qt):
        repl[sp.diff(qi, t, 2)] = qdd_syms[i]
    for i, qi in enumerate(qt):
        repl[sp.diff(qi, t)] = qd[i]
    eqs = [e.subs(repl) for e in eqs]
    eqs = [e.subs(dict(zip(qt, q, strict=True))) for e in eqs]
    return eqs, qdd_syms


def test_cartpole_against_sympy():
    x, phi, xd, phid, f = sp.symbols("x phi xd phid f")
    mc, mr, mt, ll, g = 0.466, 0.06, 0.012, 0.201, 9.81
    positions = [
        (x, sp.Integer(0)),
        (x + ll / 2 * sp.sin(phi), -ll / 2 * sp.cos(phi)),
        (x + ll * sp.sin(phi), -ll * sp.cos(phi)),
    ]
    eqs, acc = sympy_equations(
        positions, [mc, mr, mt], [0, mr * ll**2 / 12, 0], [0, phi, phi], [x, phi], [xd, phid], g
    )
    eqs = [eqs[0] - f, eqs[1]]  # the input force acts on x
    sol = sp.solve(eqs, acc, dict=True)[0]
    fn = sp.lambdify((x, phi, xd, phid, f), [sol[a] for a in acc])
    cp = CartPole()
    for seed in range(5):
        q, qd, u = random_state(cp, seed)
        expect = np.array(fn(*np.asarray(q), *np.asarray(qd), float(u[0])), dtype=float)
        np.testing.assert_allclose(cp.acceleration(q, qd, u), expect, rtol=1e-10)


def test_double_pendulum_against_sympy():
    q1, q2, q1d, q2d, t1, t2 = sp.symbols("q1 q2 q1d q2d t1 t2")
    m1, m2, l1, r1, r2, i1, i2, g = 1.2, 0.8, 1.1, 0.5, 0.4, 0.1, 0.05, 9.81
    positions = [
        (r1 * sp.sin(q1), -r1 * sp.cos(q1)),
        (l1 * sp.sin(q1) + r2 * sp.sin(q1 + q2), -l1 * sp.cos(q1) - r2 * sp.cos(q1 + q2)),
    ]
    eqs, acc = sympy_equations(
        positions, [m1, m2], [i1, i2], [q1, q1 + q2], [q1, q2], [q1d, q2d], g
    )
    eqs = sp.Matrix([eqs[0] - t1, eqs[1] - t2])
    # Lagrange's equations are linear in q̈: eqs = A q̈ + b. Solved numerically at each state (sympy's symbolic
    # solve of the 2×2 system took ten seconds and checks nothing more).
    a, b = eqs.jacobian(acc), eqs.subs(dict.fromkeys(acc, 0))
    fn = sp.lambdify((q1, q2, q1d, q2d, t1, t2), [a, b])
    dp = SYSTEMS["double_pendulum"]
    for seed in range(5):
        q, qd, u = random_state(dp, seed)
        a_k, b_k = (
            np.array(m, dtype=float) for m in fn(*np.asarray(q), *np.asarray(qd), *np.asarray(u))
        )
        expect = np.linalg.solve(a_k, -b_k[:, 0])
        np.testing.assert_allclose(dp.acceleration(q, qd, u), expect, rtol=1e-10)


def test_chain_and_duffing_closed_forms():
    chain = SYSTEMS["chain"]
    q, qd, u = random_state(chain, 0)
    np.testing.assert_allclose(chain.gravity(q), chain.stiffness_matrix() @ q, rtol=1e-12)
    np.testing.assert_allclose(
        chain.acceleration(q, qd, u),
        np.linalg.solve(np.diag(chain.mass), u - chain.stiffness_matrix() @ q),
        rtol=1e-12,
    )
    duff = Duffing(omega0=1.3, omega1=0.8)
    uu = jnp.array([0.9])
    np.testing.assert_allclose(
        duff.acceleration(uu, jnp.zeros(1)), -(1.3**2) * 0.9 - 0.8**4 * 0.9**3, rtol=1e-14
    )


def test_metadata():
    cp = CartPole()
    assert cp.coordinate_names == ("x", "phi") and cp.angles == (False, True)
    assert cp.state_names == ("x", "phi", "x_dot", "phi_dot") and cp.input_names == ("force",)
    assert DoublePendulum.acrobot().input_names == ("tau2",)
    assert DoublePendulum.acrobot().input_matrix(jnp.zeros(2)).shape == (2, 1)
    assert MassSpringChain(3).n_inputs == 3


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Pendulum(mass=-1.0), r"Pendulum\.mass must be positive"),
        (lambda: Pendulum(length=0.0), r"Pendulum\.length must be positive"),
        (lambda: CartPole(cart_mass=-0.1), r"CartPole\.cart_mass must be positive"),
        (lambda: CartPole(length=jnp.ones(2)), r"CartPole\.length must have shape \(\)"),
        (lambda: DoublePendulum(l2=-1.0), r"DoublePendulum\.l2 must be positive"),
        (lambda: DoublePendulum(actuated="knee"), r"DoublePendulum\.actuated must be one of"),
        (lambda: MassSpringChain(3, mass=jnp.ones(4)), r"MassSpringChain\.mass must have shape"),
        (lambda: MassSpringChain(0), r"MassSpringChain\.n must be a positive integer"),
        (lambda: Duffing(omega0=float("nan")), r"Duffing\.omega0 must be finite"),
        (
            lambda: Lagrangian(lambda q, qd: qd @ qd, lambda q: 0.0, 2, angles=(True,)),
            r"Lagrangian\.angles must have n_dof=2",
        ),
    ],
)
def test_bad_parameters(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize("name", SYSTEMS)
def test_cyclic_coordinates_are_cyclic(name):
    """A declared cyclic coordinate q_i leaves M, V, B and the Coriolis force unchanged: their derivatives in q_i
    are exactly zero at random states."""
    system = SYSTEMS[name]
    cyclic = [system.coordinate_names.index(c) for c in system.cyclic_coordinates]
    assert len(set(cyclic)) == len(system.cyclic_coordinates)
    for seed in range(3):
        q, qd, _ = random_state(system, seed)
        parts = {
            "mass_matrix": jax.jacfwd(system.mass_matrix)(q),
            "potential_energy": jax.grad(system.potential_energy)(q)[None],
            "input_matrix": jax.jacfwd(system.input_matrix)(q),
            "coriolis": jax.jacfwd(lambda q_, v=qd: system.coriolis(q_, v) @ v)(q)[None],
        }
        for part, d in parts.items():
            for i in cyclic:
                assert np.all(np.asarray(d)[..., i] == 0.0), (name, part, i)


def test_cartpole_position_is_cyclic():
    assert CartPole().cyclic_coordinates == ("x",)
    assert Pendulum().cyclic_coordinates == () and DoublePendulum().cyclic_coordinates == ()
