"""Shape aliases used across lagnet (jaxtyping).

`n` is the number of degrees of freedom, `m` the number of inputs, `steps` the length of a trajectory.
"""

from jaxtyping import Array, ArrayLike, Float, Int, PyTree, Scalar

Q = Float[Array, " n"]
QDot = Float[Array, " n"]
QDDot = Float[Array, " n"]
Force = Float[Array, " n"]
U = Float[Array, " m"]
MassMatrix = Float[Array, "n n"]
InputMatrix = Float[Array, "n m"]
Trajectory = Float[Array, "steps n"]
Inputs = Float[Array, "steps m"]
RealScalar = Float[ArrayLike, ""]

__all__ = [
    "Array",
    "ArrayLike",
    "Float",
    "Int",
    "PyTree",
    "Scalar",
    "Q",
    "QDot",
    "QDDot",
    "Force",
    "U",
    "MassMatrix",
    "InputMatrix",
    "Trajectory",
    "Inputs",
    "RealScalar",
]
