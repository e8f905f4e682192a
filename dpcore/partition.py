"""How a federation's records are split over its clients: the client sizes (seed 004's
two groups with n_max/n_min = u, or seeded random sizes) and the seeded record split.

Data-layer code: the distributed mechanisms, the bounds catalog and the views read
the sizes from here (one source of truth).
"""

from __future__ import annotations

import math

import numpy as np

from . import streams
from .exceptions import ParameterError

__all__ = ["client_sizes", "partition", "SPLITS"]


def client_sizes(n: int, clients: int, skew: float = 1.0, *, mode: str = "two-groups",
                 min_size: int | None = None, seed: int = 0) -> list[int]:
    """Sizes of m clients summing to n with ``max/min = skew`` (to integer rounding).

    ``two-groups`` (seed 004's design): ⌈m/2⌉ small clients of size s and ⌊m/2⌋
    large ones of size ≈ u·s.  ``random``: sizes drawn (seeded) from a
    Dirichlet above ``min_size`` (default n/(4m)); the skew argument is ignored.
    """
    m = int(clients)
    if m < 1:
        raise ParameterError("the number of clients must be at least 1")
    if m > n:
        raise ParameterError(f"cannot split {n} records over {m} clients: use at most {n} clients")
    if skew < 1:
        raise ParameterError(f"skew u = n_max/n_min must be ≥ 1, got {skew:g}")
    if mode == "random":
        lo = int(min_size if min_size is not None else max(1, n // (4 * m)))
        if lo * m > n:
            raise ParameterError(f"min client size {lo} × {m} clients exceeds n = {n}")
        rng = np.random.default_rng([seed, streams.CLIENT_SIZES])
        extra = rng.dirichlet(np.ones(m)) * (n - lo * m)
        sizes = lo + np.floor(extra).astype(int)
        for k in np.argsort(-(extra - np.floor(extra)))[: n - sizes.sum()]:
            sizes[k] += 1
        return [int(s) for s in sizes]
    if mode != "two-groups":
        raise ParameterError(f"partition mode must be 'two-groups' or 'random', got {mode!r}")
    if m == 1:
        return [n]
    n_large = m // 2
    n_small = m - n_large
    small = n / (n_small + skew * n_large)
    s = int(math.floor(small))
    if s < 1:
        raise ParameterError(
            f"skew {skew:g} with {m} clients leaves the small clients empty for n = {n}: "
            "lower the skew or the number of clients"
        )
    sizes = [s] * n_small
    rest = n - s * n_small
    base, extra = divmod(rest, n_large)
    sizes += [base + (1 if k < extra else 0) for k in range(n_large)]
    return sizes


SPLITS = ("random", "stratified")


def partition(y: np.ndarray, sizes: list[int], seed: int, *, need_both_classes: bool,
              split: str = "random") -> list[np.ndarray]:
    """Seeded split of the row indices into clients of the given sizes.

    ``random`` (default, as in the papers): a uniformly random permutation cut into
    consecutive blocks, so a client's class shares vary as they would in a real
    federation.  ``stratified``: rows are put in an order where the classes
    interleave evenly, so every client's class shares match the data's to ±1 row
    (this hides the label skew that small clients suffer).
    """
    n = len(y)
    if sum(sizes) != n:
        raise ParameterError(f"client sizes sum to {sum(sizes)}, not n = {n}")
    if split not in SPLITS:
        raise ParameterError(f"split must be one of {', '.join(SPLITS)}; got {split!r}")
    rng = np.random.default_rng([seed, streams.CLIENT_SPLIT])
    if split == "random":
        order = rng.permutation(n)
    else:
        key = np.empty(n)
        for c in np.unique(y):
            idx = rng.permutation(np.flatnonzero(y == c))
            key[idx] = (np.arange(len(idx)) + 0.5) / len(idx)  # evenly spread positions per class
        order = np.lexsort((rng.random(n), key))  # random tie-break between classes
    parts, start = [], 0
    for j, s in enumerate(sizes):
        part = np.sort(order[start:start + s])
        start += s
        if need_both_classes and len(np.unique(y[part])) < 2:
            raise ParameterError(
                f"client {j + 1} (size {s}) holds only one class: lower the skew or the number of "
                "clients so that every client sees both labels"
            )
        parts.append(part)
    return parts
