"""The multilayer perceptrons of the learned parts."""

import equinox as eqx
import jax
import jax.numpy as jnp

ACTIVATIONS = {
    "relu": jax.nn.relu,
    "tanh": jnp.tanh,
    "softplus": jax.nn.softplus,
    "gelu": jax.nn.gelu,
    "silu": jax.nn.silu,
    "elu": jax.nn.elu,
    "identity": lambda x: x,
}


def make_mlp(
    in_size: int,
    out_size: int | str,
    *,
    width: int,
    depth: int,
    activation: str,
    final_activation: str,
    zero_output: bool,
    key,
) -> eqx.nn.MLP:
    """An MLP with `depth` hidden layers of `width`; the last layer starts at zero when `zero_output`.

    Starting the output at zero makes a residual network begin as "no correction": the model starts as the known
    physics (plus fitted friction) and can only improve on it.
    """
    for name in (activation, final_activation):
        if name not in ACTIVATIONS:
            raise ValueError(f"unknown activation {name!r}; expected one of {sorted(ACTIVATIONS)}")

    def build(key):
        return eqx.nn.MLP(
            in_size,
            out_size,
            width_size=width,
            depth=depth,
            activation=ACTIVATIONS[activation],
            final_activation=ACTIVATIONS[final_activation],
            key=key,
        )

    # Built in one compiled program: op by op, each layer's random draws compile on their own (seconds). It runs
    # once, so XLA's backend optimises it less (level 1 instead of 3: about half the compile); the weights are bit
    # for bit those of the eager construction (level 0 would round the first layer's scaling differently).
    if isinstance(key, jax.core.Tracer):
        mlp = build(key)  # inside a caller's trace: part of its program
    else:
        static = []  # the non-array part, kept from the one trace

        def arrays_of(key):
            arrays, rest = eqx.partition(build(key), eqx.is_array)
            static.append(rest)
            return arrays

        compiled = (
            jax.jit(arrays_of)
            .lower(key)
            .compile(compiler_options={"xla_backend_optimization_level": 1})
        )
        mlp = eqx.combine(compiled(key), static[0])
    if zero_output:
        last = mlp.layers[-1]
        mlp = eqx.tree_at(
            lambda m: (m.layers[-1].weight, m.layers[-1].bias),
            mlp,
            (jnp.zeros_like(last.weight), jnp.zeros_like(last.bias)),
        )
    return mlp


def _spectral_norm(w):
    """σ_max(W), whose gradient is u vᵀ (u, v its singular vectors held fixed): differentiable also where the
    singular values coincide (a zero-initialised layer), where the derivative through the SVD is not."""
    u, _, vt = jnp.linalg.svd(jax.lax.stop_gradient(w), full_matrices=False)
    return u[:, 0] @ w @ vt[0]


class SpectralNormalised(eqx.Module):
    """An MLP whose Lipschitz constant is at most `bound`: each of its n layers' weights W is used as
    W · min(1, c / σ_max(W)) with c = bound^(1/n) (with 1-Lipschitz activations: relu, tanh, softplus, elu).

    Lipschitz control of a learned residual, as Neural Lander's spectral normalisation: the network cannot
    change faster than `bound` (in its normalised input and output units) anywhere, off the data included.
    """

    mlp: eqx.nn.MLP
    bound: float = eqx.field(static=True)

    def __init__(self, mlp: eqx.nn.MLP, bound: float):
        if not bound > 0:
            raise ValueError(f"SpectralNormalised.bound must be > 0, got {bound}")
        self.mlp, self.bound = mlp, float(bound)

    def normalised(self) -> eqx.nn.MLP:
        """The MLP with its weights scaled as used."""
        c = self.bound ** (1.0 / len(self.mlp.layers))

        def scaled(w):
            # max(σ, c) so that a layer within the bound is left as it is, gradient included.
            return w * (c / jnp.maximum(_spectral_norm(w), c))

        weights = [scaled(layer.weight) for layer in self.mlp.layers]
        return eqx.tree_at(lambda m: [layer.weight for layer in m.layers], self.mlp, weights)

    def __call__(self, x):
        # The scaling depends on the weights alone: inside a rollout's scan XLA hoists the SVDs out of the loop (a
        # 4000-step scan took no longer than with the weights normalised beforehand).
        return self.normalised()(x)


class Ensemble(eqx.Module):
    """K networks of one architecture whose output is their mean, shrunk where they disagree:

        y = μ · (μ² + τ²) / (μ² + τ² + σ²)    per output, μ and σ² the members' mean and variance.

    Trained together through y, the members are pulled to agree on the training data (σ → 0, y → μ); off it, where
    they extrapolate apart, the residual fades (deep-ensemble disagreement used as a shrinkage). τ, in the
    network's output units, is the disagreement left alone. On `benchmarks/distribution_shift.py` it did not quiet
    the residual where it was wrong off the data (the training guide has the numbers).
    `disagreement(x)` flags a state the members do not agree on.
    """

    members: eqx.Module  # one network, its arrays stacked on a leading axis of size K
    tolerance: float = eqx.field(static=True)

    def __init__(self, make, keys, tolerance: float):
        """`make(key)` builds one member; `keys` has one key per member (at least two)."""
        if len(keys) < 2:
            raise ValueError(f"Ensemble needs at least 2 members, got {len(keys)}")
        if not tolerance > 0:
            raise ValueError(f"Ensemble.tolerance must be > 0, got {tolerance}")
        self.members = eqx.filter_jit(eqx.filter_vmap(make))(keys)
        self.tolerance = float(tolerance)

    def outputs(self, x):
        """Every member's output, (K, out)."""
        return eqx.filter_vmap(lambda m: m(x))(self.members)

    def disagreement(self, x):
        """σ, the members' standard deviation per output."""
        return jnp.std(self.outputs(x), axis=0)

    def __call__(self, x):
        y = self.outputs(x)
        mean, var = jnp.mean(y, axis=0), jnp.var(y, axis=0)
        agree = mean**2 + self.tolerance**2
        return mean * agree / (agree + var)
