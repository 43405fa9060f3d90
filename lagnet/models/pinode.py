"""PINODE: known M, C, G, B plus learned non-conservative forces (Roehrl et al., eq. 8–9)."""

import copy

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._indexing import place
from .._types import Q, QDDot, QDot, Scalar, U
from ..systems.base import AbstractLagrangianDynamics, AbstractSystem
from ..systems.friction import AbstractFriction
from ..systems.parameters import Bounded, learned_bounds
from .actuator import Actuator
from .base import AbstractModel, frozen_known_parts, output_scale_summary
from .features import OutputScale, StateFeatures
from .history import as_limit
from .region import TrainingRegion


class PINODE(AbstractModel, AbstractLagrangianDynamics):
    """q̈ = M(q)⁻¹ [B(q) u + Q_f(q̇) + g(q, q̇) s · Q_θ(φ(q, q̇, u)) − C(q, q̇) q̇ − G(q)].

    - `system`: the known mechanics; the parameters named in `learn_parameters` are learned within bounds
      (default ≥ 0; a `Bounded` each, so they may start at 0), the rest stay fixed. `learn_parameters` is a tuple
      of names or a dict name → {"lower", "upper", "scale"} (see `Bounded`).
    - `friction`: optional `JointFriction` Q_f (given, or fitted by least squares), passive by construction.
    - `network`: optional MLP for the residual forces, acting on the coordinates `force_on` with a fixed output
      scale s (a number, or one per coordinate in `force_on`); `None` gives the pure ODE model.
    - `friction_trainable`: whether training refines the friction coefficients.
    - `physics_trainable`: whether training changes the physics at all (friction and learned parameters); False
      once they are identified (`lagnet.train.identify`), so the network learns only what physics cannot.
    - `region`: optional `TrainingRegion` g(q, q̇): the residual is g · s · Q_θ, the network where the training
      states lie and the physics alone beyond them.
    - `zero_at_rest`: the residual is Q_θ(q, q̇, u) − Q_θ(q, 0, 0), zero at rest without input (as friction
      and drag are), so the known physics' equilibria stay the model's.
    - `input_history`: the network also sees the last k inputs (u is then (m · (k + 1),), newest first), since with a
      lagging actuator (q, q̇, u) alone is not Markov. The physics uses only the newest input.

    Its Lagrangian is the known system's (with the learned parameters); the rest of q̈ is non-conservative.
    """

    # The known part has Coriolis terms and the learned force reads q̇.
    velocity_dependent = True

    system: AbstractSystem
    friction: AbstractFriction | None
    network: eqx.Module | None
    features: StateFeatures | None
    parameters: dict[str, Bounded]
    actuator: Actuator | None
    force_on: tuple[int, ...] = eqx.field(static=True)
    output_scale: OutputScale | None
    region: TrainingRegion | None
    input_history: int = eqx.field(static=True)
    input_limit: tuple[float, ...] | None = eqx.field(static=True)
    zero_at_rest: bool = eqx.field(static=True)
    friction_trainable: bool = eqx.field(static=True)
    physics_trainable: bool = eqx.field(static=True)

    def __init__(
        self,
        system: AbstractSystem,
        *,
        friction: AbstractFriction | None = None,
        network: eqx.Module | None = None,
        features: StateFeatures | None = None,
        learn_parameters: tuple[str, ...] | dict[str, dict] = (),
        force_on: tuple[int, ...] | None = None,
        output_scale=1.0,
        input_history: int = 0,
        input_limit: tuple[float, ...] | None = None,
        friction_trainable: bool = True,
        physics_trainable: bool = True,
        region: TrainingRegion | None = None,
        zero_at_rest: bool = False,
        actuator: Actuator | None = None,
    ):
        self.system = system
        self.friction = friction
        self.network = network
        self.features = features
        if network is not None and features is None:
            raise ValueError("PINODE: a network needs `features` (what it sees of the state)")
        bounds = (
            dict(learn_parameters)
            if isinstance(learn_parameters, dict)
            else {k: {} for k in learn_parameters}
        )
        parameters = {}
        for name, bound in bounds.items():
            try:
                value = system.parameter(name)
            except KeyError:
                raise ValueError(
                    f"PINODE.learn_parameters: {type(system).__name__} has no parameter {name!r}"
                ) from None
            try:
                default = learned_bounds(system.parameter_kinds.get(name), value)
                parameters[name] = Bounded(value, **{**default, **(bound or {})})
            except ValueError as e:
                raise ValueError(f"PINODE.learn_parameters.{name}: {e}") from None
        self.parameters = parameters
        if actuator is not None and (actuator.lags, actuator.n_inputs) != (
            int(input_history),
            system.n_inputs,
        ):
            raise ValueError(
                f"PINODE: the actuator reads {actuator.lags} past commands of {actuator.n_inputs} input(s), "
                f"the model {int(input_history)} of {system.n_inputs}"
            )
        self.actuator = actuator
        self.force_on = tuple(range(system.n_dof)) if force_on is None else tuple(force_on)
        if network is None:
            self.output_scale = None
        else:
            scale = jnp.broadcast_to(jnp.asarray(output_scale, float), (len(self.force_on),))
            self.output_scale = OutputScale(scale)
        self.region = region if network is not None else None
        self.input_history = int(input_history)
        self.input_limit = as_limit(input_limit)
        self.zero_at_rest = bool(zero_at_rest)
        self.friction_trainable = bool(friction_trainable)
        self.physics_trainable = bool(physics_trainable)

    def trainable(self):
        mask = frozen_known_parts(self)
        if self.friction is not None and not (self.friction_trainable and self.physics_trainable):
            mask = eqx.tree_at(lambda m: m.friction, mask, False)
        if self.parameters and not self.physics_trainable:
            mask = eqx.tree_at(lambda m: m.parameters, mask, dict.fromkeys(self.parameters, False))
        if self.actuator is not None and not self.physics_trainable:
            frozen = jax.tree.map(lambda _: False, self.actuator)
            mask = eqx.tree_at(lambda m: m.actuator, mask, frozen)
        return mask

    def physics_prior(self) -> "PINODE | None":
        """The physics alone: this model without its network (friction and learned parameters kept)."""
        if self.network is None:
            return self
        # `is_leaf` lets tree_at write None over the parts that serve only the network.
        return eqx.tree_at(
            lambda m: (m.network, m.features, m.output_scale, m.region),
            self,
            (None, None, None, None),
            is_leaf=lambda x: x is None,
        )

    def with_physics_trainable(self, trainable: bool) -> "PINODE":
        """This model with its physics (friction and learned parameters) trainable or frozen.

        The setting is static (it shapes `trainable()`'s mask, hence the compiled program), so this is a copy
        with that one field changed, not a `tree_at`.
        """
        new = copy.copy(self)
        # A frozen dataclass field set on the copy only, as dataclasses' own __init__ sets it.
        object.__setattr__(new, "physics_trainable", bool(trainable))
        return new

    def with_physics_from(self, source: AbstractModel) -> "PINODE":
        return start_physics_from(self, source)

    def known_mechanics(self, input_history: int | None = None) -> "PINODE":
        history = self.input_history if input_history is None else input_history
        return PINODE(self.system, input_history=history, input_limit=self.input_limit)

    def learned_parts(self) -> tuple[str, ...]:
        return ("force",) if self.network is not None or self.friction is not None else ()

    def learned_force(self, q: Q, qd: QDot, u: U) -> QDot:
        return self.nonconservative_force(q, qd, u)

    def summary(self) -> dict:
        out = {}
        # The model's own friction (a known system may carry its description's friction too, not learned).
        if self.friction is not None:
            out["friction"] = self.friction.summary(self.coordinate_names)
        if self.actuator is not None:
            out["actuator"] = self.actuator.summary()
        if self.parameters:
            # The values the mechanics use: after `consistent`, which may have raised an inertia.
            known = self.known_system
            out["learned_parameters"] = {
                k: np.asarray(known.parameter(k)).tolist() for k in self.parameters
            }
        return out | output_scale_summary(self)

    @property
    def known_system(self) -> AbstractSystem:
        """The known mechanics with the learned parameters put in."""
        if not self.parameters:
            return self.system
        values = {k: p.value for k, p in self.parameters.items()}
        # Through `consistent`: whatever values the optimiser reaches, the mechanics stay physical (M ≻ 0).
        return self.system.with_parameters(values).consistent()

    def mass_matrix(self, q: Q):
        return self.known_system.mass_matrix(q)

    def potential_energy(self, q: Q):
        return self.known_system.potential_energy(q)

    def nonconservative_force(self, q: Q, qd: QDot, u: U) -> QDot:
        """Q = Q_f(q̇) + g(q, q̇) s · Q_θ(q, q̇, u): everything the known mechanics does not give."""
        force = jnp.zeros_like(qd)
        if self.friction is not None:
            force = force + self.friction(qd)
        if self.network is not None:
            out = self.output_scale(self._gated_network(q, qd, u))
            force = force + place(out.astype(force.dtype), self.force_on, force.shape[0])
        return force

    def _gated_network(self, q: Q, qd: QDot, u: U):
        """g(q, q̇) · Q_θ(q, q̇, u), in the network's own units (before the output scale s)."""
        out = self.network(self.features(q, qd, u))
        if self.zero_at_rest:
            # Q_θ(q, q̇, u) − Q_θ(q, 0, 0): no residual force at rest without input, so the physics'
            # equilibria stay equilibria (a controller's trim point is the physics', not the network's).
            out = out - self.network(self.features(q, jnp.zeros_like(qd), jnp.zeros_like(u)))
        if self.region is not None:
            out = self.region(q, qd).astype(out.dtype) * out
        return out

    def residual_size(self, q: Q, qd: QDot, u: U) -> Scalar:
        """‖g · Q_θ(q, q̇, u)‖², the residual's size in units of its output scale (0 without a network): what
        `model.residual_penalty` keeps small, so that the physics explains all it can."""
        if self.network is None:
            return jnp.zeros((), qd.dtype)
        return jnp.sum(self._gated_network(q, qd, self.history.read(u, q.dtype)) ** 2)

    def acceleration(self, q: Q, qd: QDot, u: U | None = None) -> QDDot:
        u = self.history.read(u, q.dtype)
        force = self.nonconservative_force(q, qd, u)
        return self.known_system.acceleration(q, qd, self.applied_input(u), force)

    def applied_input(self, u) -> U:
        """The input the mechanics receive from the stacked commands ū: the newest command, or what the
        actuator's dead time and lag make of the history."""
        return self.history.current(u) if self.actuator is None else self.actuator(u)


def start_physics_from(model: PINODE, source: AbstractModel) -> PINODE:
    """`model` with the physics `source` ended with: the values of the parameters `source` learned (kept in
    `model`'s bounds where `model` learns them too) and its friction coefficients on the terms both have;
    `model`'s network and everything else stay as they are.

    A two-stage fit: identify the physics first (e.g. a pure ODE model trained through the solver), then learn
    the residual network from there, instead of both at once from the given values.
    """
    if not isinstance(source, PINODE):
        raise ValueError(f"the run to start from holds a {type(source).__name__}, not a PINODE")
    if type(source.system) is not type(model.system) or source.n_dof != model.n_dof:
        raise ValueError(
            f"the run to start from models a {type(source.system).__name__} with {source.n_dof} coordinates, "
            f"this one a {type(model.system).__name__} with {model.n_dof}"
        )
    learned = {k: p.value for k, p in source.parameters.items()}
    fixed = {k: v for k, v in learned.items() if k not in model.parameters}
    system = model.system.with_parameters(fixed) if fixed else model.system
    parameters = dict(model.parameters)
    for k, p in model.parameters.items():
        if k in learned:
            try:
                parameters[k] = Bounded(
                    learned[k], lower=p.lower, upper=p.upper, scale=float(p.scale)
                )
            except ValueError as e:
                raise ValueError(
                    f"learned parameter {k}: the run to start from ended at {e}"
                ) from None
    friction = model.friction
    if friction is not None and source.friction is not None:
        shape = ("shape", "epsilon", "stribeck_velocity")
        if any(getattr(friction, a) != getattr(source.friction, a) for a in shape):
            raise ValueError(
                "friction: the run to start from has shape "
                f"{[getattr(source.friction, a) for a in shape]}, this model "
                f"{[getattr(friction, a) for a in shape]} (shape, epsilon, stribeck_velocity)"
            )
        given = source.friction.values_by_term()
        values = {
            term: {i: given.get(term, {}).get(i, c) for i, c in by_index.items()}
            for term, by_index in friction.values_by_term().items()
        }
        friction = friction.with_values(values)
    model = eqx.tree_at(lambda m: m.system, model, system)
    if parameters:
        model = eqx.tree_at(lambda m: m.parameters, model, parameters)
    if friction is not None:
        model = eqx.tree_at(lambda m: m.friction, model, friction)
    return model
