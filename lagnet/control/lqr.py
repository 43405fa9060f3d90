"""Linear–quadratic regulators from (linearised) learned dynamics: continuous and discrete Riccati equations."""

import numpy as np
import scipy.linalg


def lqr(a, b, q, r):
    """Continuous LQR: K minimising ∫ δxᵀ Q δx + δuᵀ R δu for ẋ = A x + B u; u = −K δx.

    Solves AᵀP + PA − PBR⁻¹BᵀP + Q = 0 (scipy's Schur method). Returns (K, P).
    """
    a, b, q, r = (np.asarray(v, dtype=float) for v in (a, b, q, r))
    p = scipy.linalg.solve_continuous_are(a, b, q, r)
    return np.linalg.solve(r, b.T @ p), p


def dlqr(a, b, q, r):
    """Discrete LQR for x⁺ = A x + B u: P = AᵀPA − AᵀPB (R + BᵀPB)⁻¹ BᵀPA + Q; K = (R + BᵀPB)⁻¹ BᵀPA."""
    a, b, q, r = (np.asarray(v, dtype=float) for v in (a, b, q, r))
    p = scipy.linalg.solve_discrete_are(a, b, q, r)
    return np.linalg.solve(r + b.T @ p @ b, b.T @ p @ a), p


def closed_loop_stable(a, b, k, *, discrete: bool) -> bool:
    """Whether A − BK is stable (eigenvalues in the open left half plane, or inside the unit circle)."""
    eig = np.linalg.eigvals(np.asarray(a) - np.asarray(b) @ np.asarray(k))
    return bool(np.all(np.abs(eig) < 1)) if discrete else bool(np.all(eig.real < 0))
