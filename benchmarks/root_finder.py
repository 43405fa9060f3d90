"""The implicit integrators' root finder: lagnet's `Newton` against `optimistix.Newton`, forward and gradient.

`lagnet.PINODE(lagnet.CartPole())` (the known cart-pole: Coriolis terms make it velocity dependent, so every step
solves for the new acceleration), float32, h = 0.02, a vmapped batch of rollouts with random inputs, stepped by
`Newmark(¼, ½)` and by `BackwardEuler`, each with
- lagnet: `lagnet.integrators.Newton()` (dense `jacfwd` + `solve` in a `while_loop` that stops at the first
  correction |Δx| ≤ √ε (1 + |x|), gradients by `lax.custom_root`);
- optimistix: `optimistix.root_find` with `optimistix.Newton(rtol=atol=√ε)` (Cauchy termination: |Δx| and
  |residual| small; lineax's automatic linear solver on the linearised residual, LU), at most 8 steps,
  `throw=False`, gradients by its `ImplicitAdjoint`.
Timed: the rollout (forward), and the gradient of the mean squared trajectory with respect to the model's
parameters (forward + backward), after a warm-up, median of interleaved repeats. Ratios are optimistix over
lagnet (> 1: lagnet is faster), measured in the same run. Trajectories are cross-checked first.

    .venv/bin/python benchmarks/root_finder.py [--batch 1024] [--steps 200] [--repeats 5] [--json out.json]
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from _common import (
    block,
    first_call,
    load,
    make_inputs,
    max_abs_diff,
    parser,
    time_interleaved,
    write,
)

import lagnet
from lagnet.integrators import AbstractRootFinder, BackwardEuler, Newmark, Newton, StepInfo
from lagnet.integrators.newton import default_tolerance
from lagnet.rollout import rollout

DT = 0.02


class OptimistixNewton(AbstractRootFinder):
    """`optimistix.Newton` behind lagnet's root-finder interface (StepInfo.error: 0 if converged, else ∞)."""

    iterations: int = eqx.field(static=True, default=8)

    def solve(self, residual, x0):
        tol = default_tolerance(jnp.result_type(x0))
        sol = optx.root_find(
            lambda x, _: residual(x),
            optx.Newton(rtol=tol, atol=tol),
            x0,
            max_steps=self.iterations,
            throw=False,
        )
        converged = (sol.result == optx.RESULTS.successful) & jnp.all(jnp.isfinite(sol.value))
        error = jnp.where(converged, 0.0, jnp.inf).astype(x0.dtype)
        return sol.value, StepInfo(converged=converged, error=error)


def forward_fn(integrator):
    @eqx.filter_jit
    def run(model, q0, qd0, us):
        return jax.vmap(lambda a, b, c: rollout(model, integrator, a, b, c, DT, throw=False))(
            q0, qd0, us
        )

    return run


def grad_fn(integrator):
    @eqx.filter_jit
    @eqx.filter_grad
    def run(model, q0, qd0, us):
        qs, qds = jax.vmap(lambda a, b, c: rollout(model, integrator, a, b, c, DT, throw=False))(
            q0, qd0, us
        )
        return jnp.mean(qs**2) + jnp.mean(qds**2)

    return run


def main():
    p = parser(__doc__)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--steps", type=int, default=200)
    args = p.parse_args()
    batch, steps, repeats = args.batch, args.steps, args.repeats
    if args.quick:
        batch, steps, repeats = 64, 50, 2

    model = lagnet.PINODE(lagnet.CartPole())
    model = jax.tree_util.tree_map(
        lambda x: x.astype(jnp.float32) if eqx.is_inexact_array(x) else x, model
    )
    q0, qd0, us = (jnp.asarray(x) for x in make_inputs(batch, steps))
    methods = {
        "Newmark(1/4, 1/2)": lambda rf: Newmark(0.25, 0.5, root_finder=rf),
        "BackwardEuler": lambda rf: BackwardEuler(root_finder=rf),
    }
    finders = {"lagnet": Newton(), "optimistix": OptimistixNewton()}

    calls, compile_s, check = {}, {}, {}
    for method, make in methods.items():
        outs = {}
        for finder_name, finder in finders.items():
            integrator = make(finder)
            for kind, build in (("forward", forward_fn), ("grad", grad_fn)):
                fn = build(integrator)
                name = f"{method} | {kind} | {finder_name}"
                calls[name] = lambda fn=fn: block(fn(model, q0, qd0, us))
                compile_s[name], outs[(finder_name, kind)] = first_call(calls[name])
        check[method] = {
            "trajectory_max_abs_diff": max_abs_diff(
                outs[("lagnet", "forward")][0], outs[("optimistix", "forward")][0]
            ),
            "grad_max_rel_diff": float(
                max(
                    np.max(np.abs(np.asarray(a) - np.asarray(b)))
                    / (np.max(np.abs(np.asarray(a))) + 1e-30)
                    for a, b in zip(
                        jax.tree_util.tree_leaves(outs[("lagnet", "grad")]),
                        jax.tree_util.tree_leaves(outs[("optimistix", "grad")]),
                        strict=True,
                    )
                )
            ),
        }
    median, times = time_interleaved(calls, repeats)

    results = {}
    print(f"\nbatch {batch}, {steps} steps, float32, median of {repeats} interleaved repeats (s)")
    print(f"  {'method':20s} {'kind':8s} {'lagnet':>9s} {'optimistix':>11s} {'optx/lagnet':>12s}")
    for method in methods:
        for kind in ("forward", "grad"):
            ours = median[f"{method} | {kind} | lagnet"]
            theirs = median[f"{method} | {kind} | optimistix"]
            results[f"{method} | {kind}"] = {
                "lagnet_s": ours,
                "optimistix_s": theirs,
                "optimistix_over_lagnet": theirs / ours,
                "compile_s": {
                    f: compile_s[f"{method} | {kind} | {f}"] - median[f"{method} | {kind} | {f}"]
                    for f in finders
                },
            }
            print(f"  {method:20s} {kind:8s} {ours:9.4f} {theirs:11.4f} {theirs / ours:11.2f}x")
    print(f"  cross-check: {check}")
    write(
        args.json,
        "root_finder",
        {
            "batch": batch,
            "steps": steps,
            "repeats": repeats,
            "dtype": "float32",
            "load": load(),
            "check": check,
            "results": results,
            "times": times,
        },
    )


if __name__ == "__main__":
    main()
