"""Validation of physical parameters, shared by the closed-form systems.

A link's inertia is given about its centre of mass ("com") or about its joint axis ("joint"), and a parameter set
is "physical" (each link a rigid body: J = I_com + m r² ≥ m r²) or "identified": the lumped (base) parameters
system identification gives, which are dynamically equivalent to the rig but need not split into physical
links (only the combinations that enter M, C, G are identifiable). An identified set is checked for what the
equations of motion need, M(q) positive definite for every q, instead of link by link.
"""

import jax
import jax.numpy as jnp
import numpy as np


def as_param(value) -> jax.Array:
    """A physical parameter as a (weakly typed) JAX array, so `eqx.filter_grad` can differentiate it."""
    if isinstance(value, jax.Array):
        return value
    if isinstance(value, float | int):
        # Weakly typed: the parameter follows the dtype of the state it meets (float32 or float64).
        return jnp.asarray(float(value))
    return jnp.asarray(np.asarray(value, dtype=float))


def concrete(value):
    # Under jit/vmap/grad the parameter is a tracer: its value cannot be checked, only its shape.
    if isinstance(value, jax.core.Tracer):
        return None
    return np.asarray(value)


def check_positive(system: str, name: str, value, *, allow_zero: bool = False, shape=()) -> None:
    """Raise `ValueError` naming `system.name` if `value` is not a positive (or non-negative) array of `shape`."""
    arr_shape = jnp.shape(value)
    if shape is not None and arr_shape != tuple(shape):
        raise ValueError(f"{system}.{name} must have shape {tuple(shape)}, got {arr_shape}")
    v = concrete(value)
    if v is None:
        return
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{system}.{name} must be finite, got {v}")
    bad = v < 0 if allow_zero else v <= 0
    if np.any(bad):
        what = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{system}.{name} must be {what}, got {v}")


INERTIA_ABOUT = ("com", "joint")
PARAMETER_SETS = ("physical", "identified")


def joint_inertia(mass, com, inertia, about: str):
    """J = I + m r² (I about the centre of mass, `about="com"`) or J = I (about the joint axis)."""
    return inertia + mass * com**2 if about == "com" else inertia


def check_conventions(system: str, about: str, parameter_set: str) -> None:
    """Refuse an unknown inertia convention or parameter set, naming the key and the choices."""
    if about not in INERTIA_ABOUT:
        raise ValueError(
            f"{system}.inertia_about must be one of {list(INERTIA_ABOUT)}, got {about!r}"
        )
    if parameter_set not in PARAMETER_SETS:
        raise ValueError(
            f"{system}.parameter_set must be one of {list(PARAMETER_SETS)} (identified: a lab's lumped "
            f"parameters, checked for M(q) positive definite instead of link by link), got "
            f"{parameter_set!r}"
        )


def check_inertia(system: str, suffix: str, mass, com, inertia, about: str) -> None:
    """Refuse an unknown convention, and a joint-axis inertia below m r² (parallel axis: J = I_com + m r² ≥ m r²),
    saying what each way out means: identified (lumped) parameters, or an inertia about the centre of mass."""
    check_conventions(system, about, "physical")
    values = [concrete(v) for v in (inertia, mass, com)]
    if about == "joint" and all(v is not None for v in values):
        i, m, r = values
        if np.any(i < m * r**2 * (1 - 1e-9)):
            raise ValueError(
                f"{system}.I{suffix} = {i} about the joint axis must be >= m{suffix} r{suffix}² = "
                f"{m * r**2} for a physical link (parallel axis: J = I_com + m r²). If these are "
                "identified (lumped) parameters, as system identification gives them, set parameter_set: "
                "identified (M(q) positive definite is checked instead); set inertia_about: com only if "
                f"{i} is the inertia about the centre of mass"
            )


# How far a learned parameter may move from its given value, by what it is: a mass stays positive (at least a
# tenth of its given value: a link whose mass collapses to 0 makes M singular), a link length within a factor of
# 2 of the measured one, a centre-of-mass distance between 0 and twice the given one (a 0.3 m link's COM does not
# move to 0.8 m), an inertia ≥ 0. Lumped inertias are further held where M(q) ≻ 0 by the system's `consistent`.
LENGTH_FACTOR = 2.0
MASS_FACTOR = 10.0


def learned_bounds(kind: str | None, value) -> dict:
    """Default `Bounded` bounds of a learned parameter of `kind` ("mass", "length", "com", "inertia" or None:
    ≥ 0) starting at `value` (a scalar, or the smallest entry of an array)."""
    v = float(np.min(np.asarray(value, float))) if np.size(value) else 0.0
    top = float(np.max(np.asarray(value, float))) if np.size(value) else 0.0
    if kind == "mass" and v > 0:
        return {"lower": v / MASS_FACTOR}
    if kind == "length" and v > 0:
        return {"lower": v / LENGTH_FACTOR, "upper": top * LENGTH_FACTOR}
    if kind == "com" and top > 0:
        return {"lower": 0.0, "upper": top * LENGTH_FACTOR}
    return {"lower": 0.0}


# A mass matrix is held at det M ≥ ε M11 M22 (and M22 ≥ ε × the system's inertia scale) by `consistent`: well
# inside M ≻ 0, so that a rollout never divides by a vanishing determinant.
CONSISTENCY_MARGIN = 1e-3
