"""Is a model's mechanics physical? M(q) ≻ 0 checked over a grid of configurations.

Learned or identified parameters can leave the region where the mass matrix is positive definite (an inertia
about a joint below m r², a centre of mass far off its link), and a rollout through such a model divides by a
vanishing or negative determinant somewhere. Systems whose parameters can leave the region keep them inside by
construction (`AbstractSystem.consistent`); this check is the safety net for every other system and for values
loaded from elsewhere: run after identification, after training and at `lagnet.load`.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._errors import LagnetError
from .base import AbstractModel
from .physical import physical_names, physical_vector


class NonPhysicalModel(LagnetError, ValueError):
    """A model whose mass matrix is not positive definite somewhere: the message names its parameters."""


def configuration_grid(model: AbstractModel, per_angle: int = 16, samples: int = 512):
    """Configurations q covering the model's: each angle over [−π, π) (a full grid of `per_angle` points per
    angle up to two angles, else `samples` seeded random points), each other coordinate over [−1, 1]."""
    n = model.n_dof
    angles = np.asarray(model.angles, bool)
    if n <= 2:
        axes = [
            np.linspace(-np.pi, np.pi, per_angle, endpoint=False)
            if a
            else np.linspace(-1.0, 1.0, 5)
            for a in angles
        ]
        return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, n)
    rng = np.random.default_rng(0)
    unit = rng.uniform(-1.0, 1.0, (samples, n))
    return np.where(angles, np.pi * unit, unit)


def learned_parameter_values(model: AbstractModel) -> dict[str, float]:
    """The model's bounded (learned or identified) physical parameters by name (`physical_names`)."""
    physics = model.with_physics_trainable(True)
    return dict(zip(physical_names(physics), physical_vector(physics)[0].tolist(), strict=True))


def mass_matrix_violation(model: AbstractModel, grid=None) -> dict | None:
    """None if M(q) is finite and positive definite on the configuration grid; else where it fails most: the
    configuration, M's smallest eigenvalue there and the model's learned parameters."""
    physics = model.physics_prior()
    if physics is None or not hasattr(physics, "mass_matrix"):
        return None  # no mechanics of its own (a black box)
    qs = configuration_grid(physics) if grid is None else np.asarray(grid)
    arrays = jax.tree_util.tree_leaves(eqx.filter(physics, eqx.is_inexact_array))
    dtype = jnp.result_type(*arrays, jnp.float32) if arrays else jnp.float32

    @jax.jit
    def smallest(q):
        m = physics.mass_matrix(q)
        return jnp.linalg.eigvalsh(0.5 * (m + m.T))[0], jnp.all(jnp.isfinite(m))

    low, finite = jax.vmap(smallest)(jnp.asarray(qs, dtype))
    low, finite = np.asarray(low, float), np.asarray(finite, bool)
    score = np.where(finite, low, -np.inf)
    worst = int(np.argmin(score))
    if finite.all() and score[worst] > 0:
        return None
    return {
        "q": dict(zip(model.coordinate_names, qs[worst].tolist(), strict=True)),
        "min_eigenvalue": float(low[worst]) if finite[worst] else float("nan"),
        "parameters": learned_parameter_values(physics),
    }


def describe_violation(violation: dict) -> str:
    """One sentence: where M fails to be positive definite, and the parameters that make it so."""
    q = ", ".join(f"{k} = {v:.3g}" for k, v in violation["q"].items())
    params = ", ".join(
        f"{k} = {np.round(np.asarray(v, float), 6).tolist()}"
        for k, v in violation["parameters"].items()
    )
    return (
        f"the mass matrix M(q) is not positive definite: its smallest eigenvalue is "
        f"{violation['min_eigenvalue']:.4g} at {q}; parameters: {params or '(none learned)'}"
    )


def check_physical(model: AbstractModel, what: str) -> None:
    """Raise `NonPhysicalModel` naming `what` and the model's parameters if M(q) ≻ 0 fails on the grid."""
    violation = mass_matrix_violation(model)
    if violation is not None:
        raise NonPhysicalModel(f"{what}: {describe_violation(violation)}")
