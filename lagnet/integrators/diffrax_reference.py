"""Adaptive reference solutions through diffrax, behind the integrator interface."""

import diffrax
import equinox as eqx
import jax.numpy as jnp

from .base import AbstractIntegrator, StepInfo


class DiffraxReference(AbstractIntegrator):
    """An adaptive diffrax solve of y' = (q̇, a(q, q̇, u)) across each rollout step, u held constant.

    Each `step` is one `diffrax.diffeqsolve` from 0 to dt with a `PIDController(rtol, atol)` and its own
    initial step-size guess; restarting at every step boundary is what a zero-order-hold input needs (the
    force jumps there). Use it as an accurate reference in the same `lagnet.rollout` call as a fixed-step method:

        qs_ref, qds_ref = lagnet.rollout(model, DiffraxReference(diffrax.Dopri8(), 1e-12, 1e-12), q0, qd0, us, dt)

    Any diffrax ODE solver works (`Tsit5`, `Dopri5`, `Dopri8`, implicit `Kvaerno5` for stiff problems). A failed
    solve (e.g. `max_steps` exceeded) is reported in `StepInfo.converged`; the default adjoint
    (recursive checkpointing) makes it reverse-mode differentiable.
    """

    solver: diffrax.AbstractSolver = diffrax.Tsit5()
    rtol: float = eqx.field(static=True, default=1e-10)
    atol: float = eqx.field(static=True, default=1e-10)
    max_steps: int = eqx.field(static=True, default=4096)

    def __check_init__(self):
        if not (self.rtol > 0 and self.atol > 0):
            raise ValueError(
                f"DiffraxReference.rtol and atol must be > 0, got {self.rtol}, {self.atol}"
            )
        if self.max_steps < 1:
            raise ValueError(f"DiffraxReference.max_steps must be >= 1, got {self.max_steps}")

    def init(self, model, q, qd, u):
        return None

    def step(self, model, q, qd, u, dt, state):
        def vector_field(t, y, args):
            q_, qd_ = y
            return qd_, model.acceleration(q_, qd_, u).astype(q.dtype)

        dt = jnp.asarray(dt, q.dtype)
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(vector_field),
            self.solver,
            t0=jnp.zeros((), q.dtype),
            t1=dt,
            dt0=None,
            y0=(q, qd),
            saveat=diffrax.SaveAt(t1=True),
            stepsize_controller=diffrax.PIDController(rtol=self.rtol, atol=self.atol),
            max_steps=self.max_steps,
            throw=False,
        )
        q1, qd1 = sol.ys[0][-1], sol.ys[1][-1]
        converged = sol.result == diffrax.RESULTS.successful
        return q1, qd1, None, StepInfo(converged=converged, error=jnp.zeros((), q.dtype))

    @property
    def order(self) -> int:
        return self.solver.order(None)

    @property
    def explicit(self) -> bool:
        return not isinstance(self.solver, diffrax.AbstractImplicitSolver)

    # The method's properties (see AbstractIntegrator), constant for this class.
    symplectic = False
    symmetric = False
