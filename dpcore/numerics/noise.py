"""Noise samplers batched over runs (one generator per run, see :class:`dpcore.optim.BatchRNG`)."""

from __future__ import annotations

import numpy as np

__all__ = ["gamma_norm", "gaussian"]


def gamma_norm(rngs, dim: int, scale: float | np.ndarray) -> np.ndarray:
    """Gamma-norm ("ℓ2-Laplace") noise, density ∝ exp(−‖b‖/scale), shape (R, dim).

    ‖b‖ ~ Gamma(shape=dim, scale), direction uniform on the sphere (Chaudhuri,
    Monteleoni & Sarwate 2011, Alg. 1).  ``scale`` may be per run, shape (R,).
    """
    scale = np.broadcast_to(np.asarray(scale, dtype=float), (len(rngs),))
    out = np.empty((len(rngs), dim))
    for r, g in enumerate(rngs):
        v = g.standard_normal(dim)
        v /= np.linalg.norm(v)
        out[r] = v * g.gamma(shape=dim, scale=scale[r])
    return out


def gaussian(rngs, dim: int, sigma: float | np.ndarray) -> np.ndarray:
    """Isotropic Gaussian noise N(0, σ² I), shape (R, dim)."""
    return rngs.normal(dim, sigma)
