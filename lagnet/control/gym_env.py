"""Gymnasium environments: one that steps a learned model (RL trains against it), one that steps the simulated
TRUE rig (the plant with its friction, end stops and actuator: where a policy trained on the model is tested).

Gymnasium is an optional dependency: this module imports without it, and `LearnedModelEnv` / `RigEnv` are built
(as `gymnasium.Env` subclasses) the first time they are asked for; without Gymnasium that raises an
`ImportError` saying how to install it.

    from lagnet.control.gym_env import LearnedModelEnv, RigEnv
    env = LearnedModelEnv(dynamics, reward_fn, max_steps=200, u_max=2.0, initial_state_sampler=sampler)
    env = RigEnv(CartPoleRig(), reward_fn, max_steps=250, initial_state_sampler=sampler)
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["LearnedModelEnv", "RigEnv"]  # noqa: F822 (built on first access, see __getattr__)

_MISSING = (
    "lagnet.control.LearnedModelEnv needs Gymnasium, an optional dependency: "
    "pip install 'gymnasium>=1.0' (tested with 1.4.0)"
)


def _terminate_on_nonfinite(x):
    return ~jnp.all(jnp.isfinite(x))


def _gymnasium(env_name: str):
    """The `gymnasium` module, or an `ImportError` saying how to install it."""
    try:
        import gymnasium
    except ImportError as e:
        raise ImportError(_MISSING.replace("LearnedModelEnv", env_name)) from e
    return gymnasium


def _with_env_base(env_class, gymnasium):
    """`env_class` as a `gymnasium.Env` subclass of the same name and docstring.

    The environments are written without their base so that this module imports without Gymnasium; the
    subclass is made when one is first asked for."""
    name = env_class.__name__.lstrip("_")
    namespace = {"__doc__": env_class.__doc__, "__module__": __name__, "__qualname__": name}
    return type(name, (env_class, gymnasium.Env), namespace)


@functools.cache
def _env_class():
    return _with_env_base(_LearnedModelEnv, _gymnasium("LearnedModelEnv"))


@functools.cache
def _rig_env_class():
    return _with_env_base(_RigEnv, _gymnasium("RigEnv"))


def _episode_length(env_name: str, max_steps) -> int:
    if not isinstance(max_steps, int | np.integer) or max_steps < 1:
        raise ValueError(f"{env_name}: max_steps must be a positive integer, got {max_steps!r}")
    return int(max_steps)


def _input_bound(env_name: str, u_max, m, expected: str = "") -> np.ndarray:
    """u_max as one finite, positive bound per input, shape (m,); `expected` adds to the error message."""
    u_max = np.broadcast_to(np.asarray(u_max, dtype=float), (m,)).copy()
    if not np.all(np.isfinite(u_max) & (u_max > 0)):
        raise ValueError(f"{env_name}: u_max must be finite and > 0{expected}, got {u_max}")
    return u_max


def _state_and_input_spaces(n, u_max: np.ndarray):
    """The observation space, an unbounded float32 `Box` (2n,), and the action space `Box(−u_max, u_max)`."""
    from gymnasium import spaces

    high = u_max.astype(np.float32)
    return (
        spaces.Box(-np.inf, np.inf, (2 * n,), np.float32),
        spaces.Box(-high, high, high.shape, np.float32),
    )


def _initial_state(options, sample):
    """`options["state"]` when reset is given one, else `sample()`."""
    if options is not None and "state" in options:
        return options["state"]
    return sample()


def _check_initial_shape(env_name: str, x0, shape) -> None:
    if x0.shape != shape:
        raise ValueError(
            f"{env_name}: the initial state must have shape {shape} (q then q̇), got {x0.shape}"
        )


def _model_float_dtype(model):
    """The dtype of the model's first floating-point array (the dtype it was trained in), else float's."""
    leaves = [
        x
        for x in jax.tree_util.tree_leaves(model)
        if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jnp.floating)
    ]
    return leaves[0].dtype if leaves else jnp.result_type(float)


class _LearnedModelEnv:
    """An episode of the discrete dynamics x_{k+1} = dynamics.step(x_k, clip(a_k, −u_max, u_max)).

    - observation: the state x = (q, q̇) (coordinates first, then velocities; `dynamics.state_names`), as a
      float32 `Box` of shape (2n,), unbounded;
    - action: the input u, a float32 `Box(−u_max, u_max, (m,))`; actions outside it are clipped;
    - reward: `reward_fn(x, u, x_next)` (a JAX function of one transition, returning a scalar);
    - terminated: `terminate_fn(x_next)` (default: the state is no longer finite);
    - truncated: after `max_steps` steps.

    Arguments:
        dynamics: a `lagnet.control.Dynamics` (e.g. from `lagnet.load(run_dir)`); its step and integrator
            are those the model was trained with, unless `dt` overrides the step.
        reward_fn: (x (2n,), u (m,), x_next (2n,)) → scalar.
        max_steps: the episode length.
        u_max: the input bound, a number or one per input.
        initial_state_sampler: `initial_state_sampler(key=key)` → x0 (2n,), with a JAX key drawn from the
            environment's seeded `np_random`; `reset(options={"state": x0})` sets x0 directly.
        terminate_fn: (x_next (2n,)) → bool, or None for "not finite".
        dt: the step; None: `dynamics.dt`.

    The transition is one jit-compiled function of (x, u); `info` holds the unclipped model state as
    `info["state"]` (in the model's dtype) and the applied input as `info["u"]` after each step.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        dynamics,
        reward_fn,
        *,
        max_steps: int,
        u_max,
        initial_state_sampler,
        terminate_fn=None,
        dt: float | None = None,
    ):
        self.max_steps = _episode_length("LearnedModelEnv", max_steps)
        m, n = dynamics.n_inputs, dynamics.n_dof
        self.u_max = _input_bound(
            "LearnedModelEnv", u_max, m, expected=f" (one number, or {m} of them)"
        )
        self.dynamics = dynamics
        self.reward_fn = reward_fn
        self.initial_state_sampler = initial_state_sampler
        self.terminate_fn = _terminate_on_nonfinite if terminate_fn is None else terminate_fn
        self.dt = dynamics.dt if dt is None else float(dt)
        self.observation_space, self.action_space = _state_and_input_spaces(n, self.u_max)
        self._transition = jax.jit(self._transition_fn)
        self._state = None
        self._steps = 0

    def _transition_fn(self, x, a):
        lim = jnp.asarray(self.u_max, x.dtype)
        u = jnp.clip(jnp.asarray(a, x.dtype), -lim, lim)
        x_next = self.dynamics.step(x, u, self.dt)
        reward = self.reward_fn(x, u, x_next)
        return x_next, u, jnp.asarray(reward, x.dtype), jnp.asarray(self.terminate_fn(x_next))

    def _sample_initial_state(self):
        key = jax.random.key(int(self.np_random.integers(0, 2**31 - 1)))
        return self.initial_state_sampler(key=key)

    def _observation(self):
        return np.asarray(self._state, dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        x0 = _initial_state(options, self._sample_initial_state)
        x0 = jnp.asarray(x0, _model_float_dtype(self.dynamics.model))
        _check_initial_shape("LearnedModelEnv", x0, self.observation_space.shape)
        self._state = x0
        self._steps = 0
        return self._observation(), {"state": np.asarray(x0)}

    def step(self, action):
        if self._state is None:
            raise RuntimeError("LearnedModelEnv: call reset() before step()")
        action = np.asarray(action).reshape(self.action_space.shape)
        x_next, u, reward, terminated = self._transition(self._state, action)
        self._state = x_next
        self._steps += 1
        truncated = self._steps >= self.max_steps
        info = {"state": np.asarray(x_next), "u": np.asarray(u)}
        return self._observation(), float(reward), bool(terminated), truncated, info


class _RigEnv:
    """An episode on a simulated rig: x_{k+1} = the rig's plant after one sample with the command a_k
    (clipped to ±u_max) held through its actuator (dead time, lag, limit), integrated in its sub-steps.

    - observation: the true state x = (q, q̇), a float32 `Box` (2n,), unbounded;
    - action: the commanded input, a float32 `Box(−u_max, u_max, (m,))` (default u_max: the rig's
      `force_limit`);
    - reward: `reward_fn(x, u, x_next)` (numpy or JAX, returning a scalar);
    - terminated: `terminate_fn(x_next)` (default: the state is no longer finite);
    - truncated: after `max_steps` steps.

    Arguments:
        rig: a rig with `plant()`, `actuator()`, `dt`, `substeps` (`lagnet.simulate.CartPoleRig`, ...).
        initial_state_sampler: `initial_state_sampler(rng)` → x0 (2n,), with the environment's seeded
            numpy `np_random`; `reset(options={"state": x0})` sets x0 directly. The actuator starts at rest.

    `info` holds the float64 state as `info["state"]` and the commanded input as `info["u"]`.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        rig,
        reward_fn,
        *,
        max_steps: int,
        initial_state_sampler,
        u_max=None,
        terminate_fn=None,
    ):
        # Imported when a rig environment is made, so that importing this module does not load the simulators.
        from ..simulate import rig_sampler

        self.max_steps = _episode_length("RigEnv", max_steps)
        self.rig = rig_sampler(rig)
        n, m = self.rig.plant.n_dof, self.rig.n_inputs
        u_max = getattr(rig, "force_limit", None) if u_max is None else u_max
        if u_max is None:
            raise ValueError("RigEnv: give u_max (the rig has no force_limit)")
        self.u_max = _input_bound("RigEnv", u_max, m)
        self.reward_fn = reward_fn
        self.initial_state_sampler = initial_state_sampler
        self.terminate_fn = terminate_fn or (lambda x: not np.all(np.isfinite(x)))
        self.observation_space, self.action_space = _state_and_input_spaces(n, self.u_max)
        self._state = None
        self._actuator = None
        self._steps = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        x0 = _initial_state(options, lambda: self.initial_state_sampler(self.np_random))
        x0 = np.asarray(x0, dtype=np.float64)
        _check_initial_shape("RigEnv", x0, self.observation_space.shape)
        self._state, self._actuator, self._steps = x0, self.rig.init(), 0
        return x0.astype(np.float32), {"state": x0.copy()}

    def step(self, action):
        if self._state is None:
            raise RuntimeError("RigEnv: call reset() before step()")
        u = np.clip(
            np.asarray(action, float).reshape(self.action_space.shape), -self.u_max, self.u_max
        )
        x = self._state
        x_next, self._actuator = self.rig.sample(jnp.asarray(x), self._actuator, jnp.asarray(u))
        x_next = np.asarray(x_next, dtype=np.float64)
        self._state = x_next
        self._steps += 1
        reward = float(self.reward_fn(x, u, x_next))
        terminated = bool(self.terminate_fn(x_next))
        truncated = self._steps >= self.max_steps
        info = {"state": x_next.copy(), "u": u}
        return x_next.astype(np.float32), reward, terminated, truncated, info


def __getattr__(name):
    if name == "LearnedModelEnv":
        return _env_class()
    if name == "RigEnv":
        return _rig_env_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
