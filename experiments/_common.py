"""Shared by the lecture experiments: where figures go, the lecture-vs-lagnet table, one step as a matrix."""

from pathlib import Path

import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from lagnet.oscillators import step_jacobian  # noqa: E402
from lagnet.systems import MassSpringChain  # noqa: E402

jax.config.update("jax_enable_x64", True)

OUT = Path(__file__).resolve().parent / "out"

# One colour per scheme, the same in every figure.
COL = {
    "forward Euler": "#c0392b",
    "backward Euler": "#8e44ad",
    "symplectic Euler": "#d68910",
    "leapfrog": "#1f77b4",
    "average acceleration": "#27ae60",
    "damped Newmark": "#8e44ad",
    "RK4": "#e67e22",
}


def save(fig, name: str) -> Path:
    """Write `fig` to experiments/out/<name>.png and close it."""
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.png"
    fig.savefig(path, dpi=130)
    plt.close(fig)
    print(f"wrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")
    return path


def report(title: str, rows) -> None:
    """Print rows of (quantity, lecture's number, lagnet's number) as an aligned table."""
    rows = [tuple(str(c) for c in r) for r in rows]
    head = ("quantity", "lecture", "lagnet")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(3)]
    print(f"\n{title}")
    for r in [head, *rows]:
        print("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


def linear_oscillator(omega: float = 1.0) -> MassSpringChain:
    """u'' = −ω² u: one unit mass between two walls, each spring ω²/2.

    (Not `Duffing(omega1=0)`: its force ω0² u + 0 · u³ turns NaN once u³ overflows, |u| > 5.6e102, which an
    unstable scheme reaches.)
    """
    return MassSpringChain(1, mass=1.0, stiffness=0.5 * omega**2)


def step_matrix(integrator, wh):
    """The 2×2 matrix A of one lagnet step on u'' = −u with h = ωh: (u1, v1) = A (u0, v0).

    Linear system, so the Jacobian of one step (`lagnet.oscillators.step_jacobian`, forward-mode autodiff
    through the integrator, its Newton solve included) is the step itself.
    """
    zero = jnp.zeros(1)
    return step_jacobian(linear_oscillator(), integrator, wh, zero, zero)
