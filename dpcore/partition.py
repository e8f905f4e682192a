"""How a federation's records are split over its clients: the client sizes (seed 004's
two groups with n_max/n_min = u, or seeded random sizes) and the seeded record split.

Data-layer code: the distributed mechanisms, the bounds catalog and the views read
the sizes from here (one source of truth).

Every rule in the package that divides a training set's rows into parts a proof then treats
as fixed (the clients of a federation, a tuning's validation part, a subsample) is declared
in :data:`RECORD_SPLITS`, with whether it is *record-independent*: which part holds row i
depends on the positions and the seed only, so replacing one record changes that row's part
and moves no other record.  Parallel composition over clients, and a validation part that
composes in parallel with the training part, need exactly that; a split that reads the data
must say what is certified instead (``tests/test_partition.py`` checks every declaration).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .numerics import streams
from .exceptions import ParameterError

__all__ = ["client_sizes", "check_split", "partition", "SPLITS", "RecordSplit", "RECORD_SPLITS", "record_split",
           "moved_records"]


@dataclass(frozen=True)
class RecordSplit:
    """A rule dividing a training set's rows into parts, and what its privacy proofs may assume.

    ``parts(X, y, seed)`` gives the parts' row indices; ``record_independent`` says that which
    part holds a row depends on nothing but the positions and the seed; ``certifies`` says, in
    a sentence for users, what a guarantee built on this split covers.
    """

    name: str
    parts: Callable[[np.ndarray, np.ndarray, int], list[np.ndarray]]
    record_independent: bool
    certifies: str


#: Every split of training rows in the package, by name (registered where it is defined).
RECORD_SPLITS: dict[str, RecordSplit] = {}


def record_split(name: str, *, record_independent: bool, certifies: str):
    """Register ``parts(X, y, seed) -> list of index arrays`` in :data:`RECORD_SPLITS`."""
    def register(func):
        if name in RECORD_SPLITS:
            raise ValueError(f"record split {name!r} is already registered")
        RECORD_SPLITS[name] = RecordSplit(name, func, record_independent, certifies)
        return func
    return register


def moved_records(split: RecordSplit, X: np.ndarray, y: np.ndarray, seed: int, index: int,
                  x_new: np.ndarray, y_new: float) -> int:
    """How many rows other than ``index`` change part when record ``index`` is replaced by
    ``(x_new, y_new)``: 0 for every replacement is what record-independence means."""
    def owner(parts, n):
        where = np.full(n, -1)
        for j, part in enumerate(parts):
            where[np.asarray(part, dtype=int)] = j
        return where

    n = len(y)
    X2, y2 = np.array(X, dtype=float, copy=True), np.array(y, dtype=float, copy=True)
    X2[index], y2[index] = x_new, y_new
    before, after = owner(split.parts(X, y, seed), n), owner(split.parts(X2, y2, seed), n)
    changed = before != after
    changed[index] = False
    return int(changed.sum())


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


def check_split(n: int | None, clients: int, skew: float) -> None:
    """Refuse the seed-004 split of ``n`` rows over ``clients`` at ``skew`` that the core cannot make
    (:func:`client_sizes`: more clients than rows, small clients left empty) or that would not mean
    what it says: a skew u ≠ 1 with one client, which nothing skews (the command line refuses it too).
    ``n`` unknown (``None`` or 0: synthetic data drawn later) checks the clients and the skew alone."""
    if int(clients) == 1 and skew != 1:
        raise ParameterError(f"skew u = {skew:g} needs at least 2 clients (with 1 client there is nothing to skew)")
    if n:
        client_sizes(n, clients, skew)


#: The client splits of a federation (the distributed mechanisms' ``split`` option).
SPLITS = ("random", "stratified")


def partition(y: np.ndarray, sizes: list[int], seed: int, *, need_both_classes: bool,
              split: str = "random") -> list[np.ndarray]:
    """Seeded split of the row indices into clients of the given sizes.

    ``random`` (default, as in the papers): a uniformly random permutation cut into
    consecutive blocks, so a client's class shares vary as they would in a real
    federation.  Record-independent: the distributed mechanisms certify the worst client
    (parallel composition).  ``stratified``: rows are put in an order where the classes
    interleave evenly, so every client's class shares match the data's to ±1 row
    (this hides the label skew that small clients suffer).  That order reads every label:
    one changed label can move many other records between clients (on Breast Cancer with
    4 clients, up to 278 of the other 545), so no client's data is fixed by its own records
    and parallel composition does not apply; the mechanisms compose all clients instead
    (:data:`SPLIT_CERTIFIES`).
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


#: What the distributed mechanisms certify with each client split (``mechanisms --json``, the views).
SPLIT_CERTIFIES = {
    "random": ("the worst client's ε: a seeded permutation of positions decides which client holds a "
               "record, so replacing one record changes one client's data (parallel composition)"),
    "stratified": ("all clients composed, each with the sensitivity of a whole client's mean gradient "
                   "(2G): the label-stratified order reads every label, so one changed record can move "
                   "records between every pair of clients; at the same ε this needs about √m·n_j times "
                   "the noise of a random split"),
}


def _client_parts(split: str):
    def parts(X, y, seed):
        return partition(y, client_sizes(len(y), 4, 4.0), seed, need_both_classes=False, split=split)
    return parts


for _split in SPLITS:
    record_split(f"clients ({_split})", record_independent=_split == "random",
                 certifies=SPLIT_CERTIFIES[_split])(_client_parts(_split))
