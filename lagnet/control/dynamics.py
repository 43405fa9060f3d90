"""A model as plain control-ready functions of the state x = (q, q̇): ẋ = f(x, u), x⁺ = step(x, u, dt)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._types import Array, ArrayLike, Float
from ..integrators.base import AbstractIntegrator
from ..models.base import AbstractModel
from ..models.history import InputHistory
from ..rollout import rollout
from ..simulate.plant import Plant
from ..systems.base import AbstractDynamics, AbstractSystem

# x = (q, q̇): the axis `state` is 2n (a shape string cannot say 2n for an n that no argument binds).
State = Float[Array, " state"]
Input = Float[Array, " m"]
# `step` and `rollout` also take NumPy arrays (they go through `lagnet.rollout`, which converts them).
StateLike = Float[ArrayLike, " state"]
InputLike = Float[ArrayLike, " m"]


class SelectedInputs(AbstractDynamics):
    """A model driven through some of its inputs, the others held at zero:

        q̈ = a(q, q̇, S u),   S the columns `columns` of the identity (m_model × m),

    e.g. a double pendulum trained with both joints driven, controlled as a pendubot (joint 1 alone).
    `system` is the known system as the selection leaves it (its input matrix B S)."""

    model: AbstractDynamics
    system: AbstractSystem
    columns: tuple[int, ...] = eqx.field(static=True)

    @property
    def n_dof(self) -> int:
        return self.model.n_dof

    @property
    def n_inputs(self) -> int:
        return len(self.columns)

    @property
    def velocity_dependent(self) -> bool:
        return self.model.velocity_dependent

    def acceleration(self, q, qd, u=None):
        full = jnp.zeros(self.model.n_inputs, jnp.result_type(q))
        if u is not None:
            full = full.at[jnp.asarray(self.columns)].set(u)
        return self.model.acceleration(q, qd, full)


@eqx.filter_jit
def _state_derivative(model: AbstractDynamics, q, qd, u) -> State:
    """ẋ = (q̇, q̈(q, q̇, u)), compiled even when called eagerly: op by op, XLA rounds some fused products
    differently (by an ulp) from the compiled program that jit, `step` (compiled in `lagnet.rollout`) and an
    exported f run; compiled, `f` gives the same bits in all of them."""
    return jnp.concatenate([qd, model.acceleration(q, qd, u)])


class Dynamics(eqx.Module):
    """Continuous and discrete dynamics of `model` in the state x = (q, q̇) (coordinates first, then velocities).

    - `f(x, u)` → ẋ = (q̇, q̈(q, q̇, u)), shape (2n,).
    - `step(x, u, dt=self.dt)` → x after one step of the model's integrator with u held (zero-order hold).
    - `rollout(x0, us, dt=self.dt)` → xs of shape (steps + 1, 2n).

    A model without inputs (m = 0, an unforced rig) takes u=None in `f` and `step`, and us=None with `steps=` in
    `rollout`.

    Everything is a pure function of arrays: jit, vmap (over states, inputs or both) and grad work, with the
    bound methods themselves too: `jax.jit(dyn.f)`, `jax.jit(dyn.step)`, `jax.jit(dyn.rollout,
    static_argnames="steps")`.

    A model trained with an input history (`model.input_history = k`) takes (m (k + 1),) inputs, newest first;
    given only the current (m,) input, `f` and `step` hold it over the history (the steady-state reading, which
    is what linearisation about an equilibrium needs); `step_with_history` carries the past inputs as a state,
    and `rollout` needs them given (`u_past`).
    """

    model: AbstractDynamics
    integrator: AbstractIntegrator
    dt: float = eqx.field(static=True)
    # Where the model came from, when that matters to its user: "physics" for a run that shipped its identified
    # physics because no trained epoch beat it (`lagnet.load` reads it from the run's summary.json).
    fallback: str | None = eqx.field(static=True, default=None)

    # `jax.jit(dyn.f)` hashes the bound method, and with it `dyn`: the dataclass hash of the fields fails on the
    # model's arrays (unhashable). By identity instead: one `Dynamics` is one function, compiled once per
    # object (its arrays become constants of the program); `eqx.filter_jit` on a function taking `dyn` as an
    # argument traces them as inputs instead.
    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other) -> bool:
        return self is other

    def __check_init__(self):
        if not isinstance(self.model, AbstractDynamics):
            raise TypeError(
                "Dynamics: model must be a lagnet AbstractDynamics (a system, a model or a plant), "
                f"got {type(self.model).__name__}"
            )

    @property
    def system(self) -> AbstractSystem:
        """The known system behind the model (the model itself when it is a plain system)."""
        if isinstance(self.model, AbstractSystem):
            return self.model
        # A model, a selection of inputs, a simulated plant with its forces: the system they are built on.
        if isinstance(self.model, AbstractModel | SelectedInputs | Plant):
            return self.model.system
        raise TypeError(f"Dynamics: {type(self.model).__name__} has no known system")

    @property
    def history(self) -> InputHistory:
        """The model's input history (none for dynamics that read only the current input)."""
        if isinstance(self.model, AbstractModel):
            return self.model.history
        return InputHistory(self.model.n_inputs)

    @property
    def n_dof(self) -> int:
        return self.model.n_dof

    @property
    def n_inputs(self) -> int:
        """m, the inputs applied per step (without the history)."""
        return self.history.n_inputs

    @property
    def state_names(self) -> tuple[str, ...]:
        return self.system.state_names

    def full_input(self, u: Input):
        """u (m,) → the model's input vector (m (k + 1),): the current input held over the history."""
        return self.history.hold(u)

    def split(self, x: State):
        n = self.n_dof
        return x[:n], x[n:]

    def _unforced(self, what: str, dtype) -> Input:
        """The empty input (0,) of a model without inputs, for `what` called with u=None; a `ValueError` for a
        model with inputs (it needs them given)."""
        if self.n_inputs:
            raise ValueError(
                f"Dynamics.{what}: the model has {self.n_inputs} input(s); pass them (u=None, "
                "us=None only for a model without inputs)"
            )
        return jnp.zeros((0,), dtype)

    def f(self, x: StateLike, u: InputLike | None = None) -> State:
        """ẋ = (q̇, q̈(q, q̇, u)); u may be None for a model without inputs."""
        x = jnp.asarray(x)
        u = None if u is None else jnp.asarray(u)
        q, qd = self.split(x)
        if u is None:
            u = self._unforced("f", jnp.result_type(x))
        return _state_derivative(self.model, q, qd, self.full_input(u))

    def step(self, x: StateLike, u: InputLike | None = None, dt=None) -> State:
        """x after one step of `dt` (default `self.dt`) with u held; u may be None for a model without inputs."""
        q, qd = self.split(jnp.asarray(x))
        dt = self.dt if dt is None else dt
        if u is None:
            u = self._unforced("step", jnp.result_type(q))
        u = self.full_input(jnp.asarray(u))
        qs, qds = rollout(
            self.model, self.integrator, q, qd, u[None], jnp.asarray(dt)[None], throw=False
        )
        return jnp.concatenate([qs[-1], qds[-1]])

    def step_with_history(
        self, x: StateLike, u: InputLike, u_past: Float[ArrayLike, "k m"], dt=None
    ) -> tuple[State, Float[Array, "k m"]]:
        """(x⁺, u_past⁺): one step with the past inputs as a state, for a model with an input history of k.

            x⁺ = step(x, (u, u_past)),   u_past⁺ = (u, u_past[0], …, u_past[k − 2])

        `u_past` (k, m) holds u_{t−1}, …, u_{t−k}, newest first; a controller starts it from its own last
        inputs (zeros at rest) and threads it through. Without history (k = 0) u_past is (0, m).
        """
        u, u_past = jnp.asarray(u), jnp.asarray(u_past)
        k = self.history.lags
        if u_past.shape != (k, self.n_inputs):
            raise ValueError(
                f"Dynamics.step_with_history: u_past must have shape ({k}, {self.n_inputs}) (the model reads "
                f"its last {k} input(s), newest first), got {u_past.shape}"
            )
        x_next = self.step(x, jnp.concatenate([u, u_past.reshape(-1)]), dt)
        return x_next, jnp.concatenate([u[None], u_past])[:k]

    def history_steps(self, period: float) -> int:
        """h, the model's steps in a control `period` for a model with an input history (it reads its past
        commands at its own step `dt`, the recordings'), which must be whole; 1 for a model without."""
        if not self.history.lags:
            return 1
        h = int(round(period / self.dt))
        if h < 1 or abs(h * self.dt - period) > 1e-9 * period:
            raise ValueError(
                f"the model reads its last {self.history.lags} input(s) at its step of {self.dt:g} s: the "
                f"control period must be a whole number of them, got {period:g} s"
            )
        return h

    def hold_with_history(
        self, x: StateLike, u: InputLike, u_past: Float[ArrayLike, "k m"], period: float, substeps=1
    ) -> tuple[State, Float[Array, "k m"]]:
        """(x⁺, u_past⁺) after u is held for a control `period`, each model step in `substeps` integrator steps.

        A model with an input history steps `history_steps(period)` times at its own `dt`, u filling that many
        places of the history (`step_with_history`); a model without steps the period in `substeps` steps.
        """
        u, past = jnp.asarray(u), jnp.asarray(u_past)
        if not self.history.lags:
            for _ in range(substeps):
                x = self.step(x, u, period / substeps)
            return x, past
        for _ in range(self.history_steps(period)):
            full = jnp.concatenate([u, past.reshape(-1)])
            for _ in range(substeps):
                x = self.step(x, full, self.dt / substeps)
            past = jnp.concatenate([u[None], past])[: self.history.lags]
        return x, past

    def history_inputs(self, us, u_past=None):
        """us (steps, m) → the model's inputs (steps, m (k + 1)): at step j, u_j, u_{j−1}, …, u_{j−k}.

        The k inputs before the first are `u_past`: an array (k, m), newest first; "held" (us[0] applied
        forever, the steady state); or "zeros" (a start from rest). A model with input history needs it: no
        choice is right for every start, and a wrong one silently changes the first k steps' inputs. For a
        model without input history, or inputs already stacked (steps, m (k + 1)), this is `us` itself (None
        stays None: an unforced rollout).
        """
        if us is None:
            return None
        us = jnp.asarray(us)
        history = self.history
        if not history.lags or us.shape[-1] != self.n_inputs:
            return us
        if u_past is None:
            raise ValueError(
                f"Dynamics.rollout: the model reads its last {history.lags} input(s); pass u_past, the inputs "
                f"before us[0] as an array ({history.lags}, {self.n_inputs}), newest first, or "
                "u_past='held' (us[0] applied forever) or u_past='zeros' (a start from rest)"
            )
        if isinstance(u_past, str):
            readings = {"held": history.past_held, "zeros": history.past_zeros}
            if u_past not in readings:
                raise ValueError(
                    f"Dynamics.rollout: u_past must be an array ({history.lags}, {self.n_inputs}), 'held' "
                    f"or 'zeros', got {u_past!r}"
                )
            u_past = readings[u_past](us)
        return history.stack(us, u_past)

    def rollout(
        self,
        x0: StateLike,
        us: Float[ArrayLike, "steps m"] | None = None,
        dt=None,
        u_past=None,
        *,
        steps: int | None = None,
    ) -> Float[Array, "states state"]:  # states = steps + 1 (us may be None, binding no `steps`)
        """States (steps + 1, 2n) from x0 under the inputs us (steps, m).

        A model with input history needs `u_past`, the inputs before us[0] (see `history_inputs`). A model
        without inputs (m = 0) may take us=None with `steps=` (or a (steps,) dt), as `lagnet.rollout`; the
        result equals that of a (steps, 0) array. A model with inputs needs `us`.
        """
        q, qd = self.split(jnp.asarray(x0))
        dt = self.dt if dt is None else dt
        if us is None and self.n_inputs:
            raise ValueError(
                f"Dynamics.rollout: the model has {self.n_inputs} input(s); pass us of shape "
                f"(steps, {self.n_inputs}) (us=None only for a model without inputs)"
            )
        inputs = self.history_inputs(us, u_past)
        qs, qds = rollout(self.model, self.integrator, q, qd, inputs, dt, steps=steps, throw=False)
        return jnp.concatenate([qs, qds], axis=-1)


def linearise(fn, x: State, u: Input):
    """(A, B) = (∂fn/∂x, ∂fn/∂u) at (x, u) by forward-mode autodiff.

    With fn = `Dynamics.f` these are the continuous (A, B) of ẋ ≈ A δx + B δu; with fn = `Dynamics.step` the
    discrete (A_d, B_d) of x⁺ ≈ A_d δx + B_d δu (for the integrator and step the model uses).
    """
    return jax.jacfwd(fn, argnums=(0, 1))(x, u)


def find_equilibrium(
    dyn: Dynamics, x_guess: State, u: Input, *, iterations: int = 50, tol: float = 1e-10
):
    """x* with f(x*, u) = 0 near `x_guess` (Newton with a least-squares step, for singular Jacobians).

    Returns (x*, |f(x*, u)|). Positions unconstrained by the dynamics (e.g. the cart's x) keep their guess.
    """

    def body(x, _):
        r = dyn.f(x, u)
        jac = jax.jacfwd(dyn.f)(x, u)
        dx = jnp.linalg.lstsq(jac, -r)[0]
        return x + dx, None

    x, _ = jax.lax.scan(body, x_guess, None, length=iterations)
    return x, jnp.linalg.norm(dyn.f(x, u))


def trim(dyn: Dynamics, x_guess, u_guess, free, iterations: int = 30):
    """(x*, u*) with q̈(x*, u*) = 0: Newton (minimum-norm steps) in the entries of x marked `free` and in u.

    A learned model's residual force need not vanish at rest, so holding an equilibrium can take a constant
    input and slightly shifted coordinates (a cart-pole upright: a tilt and a force); the entries not `free`
    stay at the guess (`find_equilibrium` keeps u fixed instead and may move any coordinate).
    Returns (x*, u*, |q̈(x*, u*)|).
    """
    n = x_guess.shape[0]
    idx = np.flatnonzero(free)

    def unpack(z):
        return x_guess.at[idx].set(z[: idx.size]), z[idx.size :]

    def residual(z):
        return dyn.f(*unpack(z))[n // 2 :]

    def body(z, _):
        dz = jnp.linalg.lstsq(jax.jacfwd(residual)(z), -residual(z))[0]
        return z + dz, None

    z0 = jnp.concatenate([x_guess[idx], u_guess])
    z, _ = jax.lax.scan(body, z0, None, length=iterations)
    return *unpack(z), jnp.linalg.norm(residual(z))


def linearise_averaged(fn, x, u, spread, *, key, samples: int = 512):
    """(E[∂fn/∂x], E[∂fn/∂u]) over states x + spread · N(0, I): a statistical linearisation.

    A model with smoothed Coulomb friction c tanh(v / ε) has slope c / ε at v = 0 (e.g. ε = 1 cm/s: 29 N s/m for
    a learned cart-pole's cart), a damping that holds only for |v| < ε; averaged over the velocities a closed
    loop actually visits, the slope is the friction's effective damping there. `spread` (2n,) or a scalar.
    """
    dx = jnp.asarray(spread) * jax.random.normal(key, (samples, x.shape[0]), dtype=x.dtype)
    a, b = jax.vmap(lambda d: linearise(fn, x + d, u))(dx)
    return a.mean(0), b.mean(0)
