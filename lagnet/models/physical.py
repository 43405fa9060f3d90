"""A model's physical parameters (its trained `Bounded` leaves: learned masses, lengths, inertias, friction
coefficients) as one named vector θ, what identification fits and reports report."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..systems.friction import AbstractFriction
from ..systems.parameters import Bounded
from .base import AbstractModel


def _is_bounded(x) -> bool:
    return isinstance(x, Bounded)


def _trained_bounded(model: AbstractModel) -> list[int]:
    """The positions, among the model's `Bounded` nodes in tree order, of those the model trains."""
    nodes = jax.tree_util.tree_leaves(model, is_leaf=_is_bounded)
    masks = jax.tree_util.tree_leaves(model.trainable(), is_leaf=_is_bounded)
    bounded = [x for x in nodes if _is_bounded(x)]
    flags = [m for m in masks if _is_bounded(m)]
    return [i for i, m in enumerate(flags) if m.raw is True and bounded[i].raw.size > 0]


def _bounded_nodes(model) -> list[Bounded]:
    return [x for x in jax.tree_util.tree_leaves(model, is_leaf=_is_bounded) if _is_bounded(x)]


def physical_vector(model: AbstractModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The trained physical parameters' values θ as one vector, with their lower and upper bounds."""
    nodes = _bounded_nodes(model)
    values, lower, upper = [], [], []
    for i in _trained_bounded(model):
        p = nodes[i]
        # Flattened: a matrix parameter (a URDF's body_pos, one row per body) is as many entries of θ.
        v = np.asarray(p.value, float)
        values.append(v.ravel())
        for out, bound, none in ((lower, p.lower, -np.inf), (upper, p.upper, np.inf)):
            out.append(
                np.broadcast_to(
                    np.asarray(none if bound is None else bound, float), v.shape
                ).ravel()
            )
    if not values:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    return np.concatenate(values), np.concatenate(lower), np.concatenate(upper)


def physical_names(model: AbstractModel) -> list[str]:
    """A name for each entry of θ (as `physical_vector` orders them): "friction.coulomb.x", "parameters.m1", …"""

    def is_node(x):
        return _is_bounded(x) or isinstance(x, AbstractFriction)

    leaves = jax.tree_util.tree_flatten_with_path(model, is_leaf=is_node)[0]
    # Each friction model names its coefficients by term and coordinate (its `on`), in its own tree order.
    names_of = {}
    for path, x in leaves:
        if isinstance(x, AbstractFriction):
            inner = jax.tree_util.tree_flatten_with_path(x, is_leaf=_is_bounded)[0]
            where = {id(b): k for k, b in x.coefficients.items()}
            for sub, b in inner:
                term = where.get(id(b))
                if term is not None:
                    coords = [model.coordinate_names[j] for j in x.on[term]]
                    names_of[jax.tree_util.keystr(path + sub)] = [
                        f"friction.{term}.{c}" for c in coords
                    ]
    paths = [
        jax.tree_util.keystr(p)
        for p, x in jax.tree_util.tree_flatten_with_path(model, is_leaf=_is_bounded)[0]
        if _is_bounded(x)
    ]
    nodes = _bounded_nodes(model)
    names = []
    for i in _trained_bounded(model):
        size = nodes[i].raw.size
        plain = paths[i].replace("[", ".").replace("]", "").replace("'", "").lstrip(".")
        given = names_of.get(paths[i])
        if given is not None and len(given) == size:
            names += given
        elif size == 1:
            names.append(plain)
        else:
            names += [f"{plain}[{j}]" for j in range(size)]
    return names


def with_physical_vector(model: AbstractModel, theta) -> AbstractModel:
    """`model` with its trained physical parameters set to the values θ (as `physical_vector` orders them)."""
    positions = _trained_bounded(model)
    if not positions:
        return model
    nodes = _bounded_nodes(model)
    raws, offset = [], 0
    for i in positions:
        p = nodes[i]
        size = p.raw.size
        value = jnp.reshape(theta[offset : offset + size], p.raw.shape)
        raws.append((value / p.scale).astype(p.raw.dtype))
        offset += size

    def where(m):
        found = _bounded_nodes(m)
        return [found[i].raw for i in positions]

    return eqx.tree_at(where, model, raws)


def bound_hits(names, theta, lower, upper, tolerance: float) -> list[dict]:
    """The entries of θ on a bound (within `tolerance` relative to it): name, value, bound and side ("lower",
    checked first, or "upper"). A fit pinned at a bound is a fit that wanted to go further."""
    out = []
    for name, v, lo, hi in zip(names, theta, lower, upper, strict=True):
        for side, bound in (("lower", lo), ("upper", hi)):
            if np.isfinite(bound) and abs(v - bound) <= tolerance * (1.0 + abs(bound)):
                out.append({"name": name, "value": float(v), "bound": float(bound), "side": side})
                break
    return out


def collapses(names, start, end, factor: float = 1e3) -> list[dict]:
    """The entries that moved by more than `factor` either way from a non-zero start (a friction 2.2e-4 → 6e-9
    is on no bound, yet the fit has switched the term off): name, start and value."""
    return [
        {"name": name, "start": float(a), "value": float(b)}
        for name, a, b in zip(names, start, end, strict=True)
        if a != 0 and (abs(b) * factor < abs(a) or abs(b) > factor * abs(a))
    ]
