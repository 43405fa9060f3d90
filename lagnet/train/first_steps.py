"""A batch of windows rolled out for their first h steps and then held, with its reverse pass written out.

A curriculum pads every stage's windows to the longest horizon K and takes only the first h steps of each
(`FirstSteps`: a `lax.cond` per step, so held steps cost almost nothing). Differentiated by JAX, that `cond` makes
every residual of its stepping branch an output, the parameters included: each step copies every parameter leaf
out of the branch and the holding branch fills each with zeros. In the cart-pole's compiled epoch program that is
about 160 of 608 top-level instructions (kernels and copies; 448 with the steps masked instead of skipped). Here the
rollout's VJP is written out: the parameters are saved once, and each step's `cond` returns only the residuals that
are not already its inputs (for RK4's compact form, the stage states): 490 instructions, the same arithmetic and
results.
"""

import equinox as eqx
import jax
import jax.numpy as jnp

from .._types import Array, Float, Int
from ..integrators.base import AbstractIntegrator


def _vjp_forwarding_inputs(fn, args):
    """`jax.vjp(fn, *args)` with its residuals split: those that are one of `args`' leaves (by identity) are
    named by position instead of returned. Returns (out, kept residuals, rebuild), rebuild(args, kept) → vjp."""
    out, vjp_fn = jax.vjp(fn, *args)
    leaves, tree = jax.tree_util.tree_flatten(vjp_fn)
    position = {id(a): i for i, a in enumerate(jax.tree_util.tree_leaves(args))}
    forwarded = {k: position[id(r)] for k, r in enumerate(leaves) if id(r) in position}
    kept = [r for k, r in enumerate(leaves) if k not in forwarded]

    def rebuild(args, kept):
        arg_leaves, kept = jax.tree_util.tree_leaves(args), iter(kept)
        return jax.tree_util.tree_unflatten(
            tree,
            [
                arg_leaves[forwarded[k]] if k in forwarded else next(kept)
                for k in range(len(leaves))
            ],
        )

    return out, kept, rebuild


def _stepper(fixed_static, dtypes):
    """fixed arrays → one step of every window: params, (q, q̇, u, dt, integrator state) per window → the next
    (q, q̇, integrator state), in the state's dtypes (as `rollout` keeps them)."""

    def stepper(fixed_arrays):
        fixed, integrator = eqx.combine(fixed_arrays, fixed_static)

        def advance(params, q, qd, u, dt, inner):
            m = eqx.combine(params, fixed)
            q1, qd1, inner1, _ = integrator.step(m, q, qd, u, dt, inner)
            inner1 = jax.tree.map(lambda x, d: x.astype(d), inner1, dtypes)
            return q1.astype(q.dtype), qd1.astype(qd.dtype), inner1

        if not integrator.rematerialised:
            # Keep only each step's inputs; the backward pass recomputes the step (as `rollout(remat=True)`).
            advance = jax.checkpoint(advance, prevent_cse=False)
        return jax.vmap(advance, in_axes=(None, 0, 0, 0, 0, 0))

    return stepper


def _forward(stepper, params, fixed_arrays, q0, qd0, us, dts, inner0, steps):
    """The held rollout's states, and per step its inputs and the residuals its reverse pass reads."""
    advance = stepper(fixed_arrays)
    first = (params, q0, qd0, us[0], dts[0], inner0)
    kept_like = jax.eval_shape(lambda a: _vjp_forwarding_inputs(advance, a)[1], first)

    def body(carry, x):
        q, qd, inner = carry
        u, dt, j = x

        def go(args):
            out, kept, _ = _vjp_forwarding_inputs(advance, args)
            return out, kept

        def hold(args):
            return (q, qd, inner), [jnp.zeros(s.shape, s.dtype) for s in kept_like]

        (q1, qd1, inner1), kept = jax.lax.cond(j < steps, go, hold, (params, q, qd, u, dt, inner))
        return (q1, qd1, inner1), ((q1, qd1), (q, qd, inner, kept))

    js = jnp.arange(dts.shape[0])
    _, (outs, saved) = jax.lax.scan(body, (q0, qd0, inner0), (us, dts, js))
    return outs, saved


def _backward(stepper, residuals, cts):
    """One backward `lax.scan` over the steps, the held ones passed through (a `cond`)."""
    # The inputs of every step (q_j, q̇_j, the integrator's state) and what each kept of its residuals.
    params, fixed_arrays, us, dts, steps, (q_in, qd_in, inners, kept) = residuals
    advance = stepper(fixed_arrays)
    first = (params, q_in[0], qd_in[0], us[0], dts[0], jax.tree.map(lambda x: x[0], inners))
    # Traced again only for the layout of its residuals, which must be the forward pass's.
    _, layout, rebuild = _vjp_forwarding_inputs(advance, first)
    if [(r.shape, r.dtype) for r in layout] != [(r.shape[1:], r.dtype) for r in kept]:
        raise RuntimeError("held_rollout: the step's residuals differ between its two passes")

    def body(carry, x):
        ct_q, ct_qd, ct_inner, ct_params = carry
        q, qd, inner, kept, u, dt, j, ct_q_out, ct_qd_out = x
        # The step's outputs are read by the next step (the carry) and by the loss (this step's output).
        ct = (ct_q + ct_q_out, ct_qd + ct_qd_out, ct_inner)

        def back(ct):
            return rebuild((params, q, qd, u, dt, inner), kept)(ct)

        def through(ct):
            zeros = jax.tree.map(jnp.zeros_like, params)
            return zeros, ct[0], ct[1], jnp.zeros_like(u), jnp.zeros_like(dt), ct[2]

        g_params, g_q, g_qd, g_u, g_dt, g_inner = jax.lax.cond(j < steps, back, through, ct)
        return (g_q, g_qd, g_inner, jax.tree.map(jnp.add, ct_params, g_params)), (g_u, g_dt)

    ct_qs, ct_qds = cts
    zero_inner = jax.tree.map(lambda x: jnp.zeros_like(x[0]), inners)
    zero_params = jax.tree.map(jnp.zeros_like, params)
    init = (jnp.zeros_like(q_in[0]), jnp.zeros_like(qd_in[0]), zero_inner, zero_params)
    js = jnp.arange(dts.shape[0])
    xs = (q_in, qd_in, inners, kept, us, dts, js, ct_qs, ct_qds)
    (g_q0, g_qd0, g_inner0, g_params), (g_us, g_dts) = jax.lax.scan(body, init, xs, reverse=True)
    return g_params, None, g_q0, g_qd0, g_us, g_dts, g_inner0, None


def held_rollout(
    model,
    integrator: AbstractIntegrator,
    q0: Float[Array, "batch n"],
    qd0: Float[Array, "batch n"],
    us: Float[Array, "batch k m"],
    dts: Float[Array, "batch k"],
    steps: Int[Array, ""],
) -> tuple[Float[Array, "batch k n"], Float[Array, "batch k n"]]:
    """The states after each of the k steps of a batch of windows, the first `steps` taken and the rest held:

        (q, q̇)_{j+1} = step(q_j, q̇_j, u_j, dt_j) for j < h,   (q, q̇)_{j+1} = (q, q̇)_j for j ≥ h.

    Equal to `window_rollout(..., steps=h)` vmapped over the windows (`FirstSteps`), with a custom reverse pass:
    one backward `lax.scan` whose `cond` skips the held steps. Reverse mode only (no `jvp`, no second derivative);
    `steps` is shared by the batch. The parameters differentiated are the model's inexact arrays; its other arrays
    and the integrator's are held fixed.
    """
    # Time-major inside: the scans run over the steps, each step vmapped over the windows.
    us, dts = jnp.swapaxes(us, 0, 1), jnp.swapaxes(dts, 0, 1)
    params, fixed = eqx.partition(model, eqx.is_inexact_array)
    fixed_arrays, fixed_static = eqx.partition((fixed, integrator), eqx.is_array)
    inner0 = jax.vmap(lambda q, qd, u: integrator.init(model, q, qd, u))(q0, qd0, us[0])
    stepper = _stepper(fixed_static, jax.tree.map(lambda x: x.dtype, inner0))

    @jax.custom_vjp
    def run(params, fixed_arrays, q0, qd0, us, dts, inner0, steps):
        return _forward(stepper, params, fixed_arrays, q0, qd0, us, dts, inner0, steps)[0]

    def run_fwd(params, fixed_arrays, q0, qd0, us, dts, inner0, steps):
        outs, saved = _forward(stepper, params, fixed_arrays, q0, qd0, us, dts, inner0, steps)
        return outs, (params, fixed_arrays, us, dts, steps, saved)

    run.defvjp(run_fwd, lambda residuals, cts: _backward(stepper, residuals, cts))
    qs, qds = run(params, fixed_arrays, q0, qd0, us, dts, inner0, steps)
    return jnp.swapaxes(qs, 0, 1), jnp.swapaxes(qds, 0, 1)
