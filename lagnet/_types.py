"""Shape aliases used across lagnet (jaxtyping).

`n` is the number of degrees of freedom, `m` the number of inputs, `steps` the number of steps of a trajectory:
a trajectory of `steps` steps has `steps + 1` states (the initial one first) and `steps` inputs and time steps.
`Trajectory` is a symbolic shape, so use it only where an argument binds `steps` (`Inputs` or `TimeSteps`).
"""

from jaxtyping import Array, ArrayLike, Float, Int, PyTree, Scalar

Q = Float[Array, " n"]
QDot = Float[Array, " n"]
QDDot = Float[Array, " n"]
Force = Float[Array, " n"]
U = Float[Array, " m"]
MassMatrix = Float[Array, "n n"]
InputMatrix = Float[Array, "n m"]
Trajectory = Float[Array, "steps+1 n"]
Inputs = Float[Array, "steps m"]
TimeSteps = Float[Array, " steps"]
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
    "TimeSteps",
    "RealScalar",
]
