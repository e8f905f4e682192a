"""What :mod:`dpcore.certify.core` and :mod:`dpcore.certify.plans` share: the parameters of a description,
declared once (the command line and the view read these), the accountants a run can come from with
their Rényi orders, the ε(δ) curve's δ's and how every curve is evaluated (:func:`epsilon_curve`: the
running minimum over δ, so no curve turns back), and how an ε is written.

>>> checked_param("delta", 1e-5), checked_param("target_epsilon", None), format_epsilon(float("inf"))
(1e-05, None, '∞')
>>> sorted(ACCOUNTANTS) == sorted(CERTIFY_PARAMS["accountant"].constraint.values)
True
>>> raw = {1e-3: 1.0, 1e-4: 3.0, 1e-5: 2.0}  # a certificate that falls as δ falls: the curve says 2 at 1e-4
>>> [(p["delta"], p["epsilon"], p.get("from_delta")) for p in epsilon_curve(raw, {"epsilon": raw.get})]
[(0.001, 1.0, None), (0.0001, 2.0, {'epsilon': 1e-05}), (1e-05, 2.0, None)]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from ..params import Interval, Options, Param, check

__all__ = [
    "ADD_REMOVE",
    "REPLACE",
    "OPACUS_ORDERS",
    "TF_ORDERS",
    "ACCOUNTANTS",
    "CERTIFY_PARAMS",
    "CURVE_DELTAS",
    "FULL_CURVE_DELTAS",
    "epsilon_curve",
    "lowered_at",
    "checked_param",
    "format_epsilon",
    "format_delta",
    "delta_label",
    "format_noise",
]

ADD_REMOVE, REPLACE = "add-remove", "replace-one"

#: Rényi orders of Opacus' RDPAccountant (opacus/accountants/rdp.py, DEFAULT_ALPHAS)
OPACUS_ORDERS = tuple([1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64)))
#: Rényi orders of TF Privacy's compute_dp_sgd_privacy (compute_dp_sgd_privacy_lib.py)
# TF Privacy 0.9.0's compute_dp_sgd_privacy (benchmarks/bench_certify.py calls it and compares)
TF_ORDERS = tuple([1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 4.5] + list(range(5, 64)) + [128, 256, 512])

#: the accountants a run can come from: (library and method, the analysis, its Rényi orders or None)
ACCOUNTANTS: dict[str, tuple[str, str, tuple | None]] = {
    "opacus-rdp": ("Opacus RDPAccountant (Rényi DP, Poisson sampling, add/remove)", "rdp", OPACUS_ORDERS),
    "opacus-prv": ("Opacus PRVAccountant (privacy random variables: the PLD, add/remove)", "pld", None),
    "opacus-gdp": (("Opacus GaussianAccountant (Gaussian DP by the central limit theorem: an approximation, "
                   "not a bound)"), "clt", None),
    "tf-privacy-rdp": ("TF Privacy compute_dp_sgd_privacy (Rényi DP through dp-accounting, add/remove)", "rdp",
                       TF_ORDERS),
    "jax-privacy": ("JAX Privacy (dp-accounting's RdpAccountant by default, add/remove)", "rdp", None),
    "dp-accounting-pld": ("dp-accounting PLDAccountant (privacy-loss distribution, add/remove)", "pld", None),
}

#: the parameters of a description, declared once (the command line and the view read these)
CERTIFY_PARAMS: dict[str, Param] = {p.name: p for p in [
    Param("mechanism", Options(("dp-sgd", "gaussian", "laplace")), "dp-sgd",
          "dp-sgd: Poisson- or shuffle-sampled Gaussian steps; gaussian / laplace: k plain releases"),
    Param("accountant", Options(tuple(ACCOUNTANTS)), "opacus-rdp", "the library and method the run was accounted with"),
    Param("sampling", Options(("poisson", "shuffled")), "poisson", "how batches were drawn"),
    # (steps end at 1e5: past it, with q near 1, the inverse question takes minutes.)  z below 1e-3 certifies nothing a class would call private; above 1e4 it is ε ≈ 0 anyway
    Param("noise_multiplier", Interval(float, 1e-3, 1e4, "both"), 1.0,
          "noise multiplier z = noise std / clipping norm", 0.3, 20.0, log_scale=True),
    # below q = 1e-6 (a million records a record) the inverse question grows slow; q > 1 is no rate
    Param("sample_rate", Interval(float, 1e-6, 1.0, "both"), 0.01, "sampling rate q (batch / dataset size)",
          1e-5, 1.0, log_scale=True),
    Param("batch_size", Interval(int, 1, 10**9, "both"), 256, "expected batch size", 1, 100_000),
    Param("dataset_size", Interval(int, 1, 10**10, "both"), 60_000, "number of records n", 1, 10**8),
    Param("steps", Interval(int, 1, 10**5, "both"), 1000, "optimisation steps T", 1, 10**5, log_scale=True),
    Param("epochs", Interval(float, 1e-6, 1e5, "both"), None, "epochs (steps = ⌈epochs / q⌉)", 0.01, 1000.0),
    Param("sigma", Interval(float, 1e-6, 1e6, "both"), 1.0, "noise std σ (Gaussian) or scale b (Laplace)",
          0.01, 100.0, log_scale=True),
    Param("sensitivity", Interval(float, 1e-6, 1e6, "both"), 1.0,
          "add/remove sensitivity Δ (L2 for Gaussian, L1 for Laplace); replace-one uses 2Δ", 0.01, 100.0,
          log_scale=True),
    Param("compositions", Interval(int, 1, 10**5, "both"), 1, "number k of releases", 1, 10**5, log_scale=True),
    Param("delta", Interval(float, 1e-100, 1.0, "neither"), 1e-5, "δ", 1e-12, 1e-2, log_scale=True),
    # beyond ε = 100 nothing is private; the inverse there only costs time (the PLD of z ≈ 0.1)
    Param("target_epsilon", Interval(float, 1e-4, 100.0, "both"), None, "the ε the inverse question asks for",
          0.01, 100.0, log_scale=True),
]}

#: the ε(δ) curve's δ's (text), and with --json / ``full=True`` the full list
CURVE_DELTAS = (1e-3, 1e-4, 1e-5, 1e-6, 1e-8, 1e-10)
FULL_CURVE_DELTAS = tuple(10.0 ** (-k / 2) for k in range(2, 31))  # 1e-1 … 1e-15


def epsilon_curve(deltas: Iterable[float], profiles: Mapping[str, Callable[[float], float]], *,
                  running_minimum: bool = True) -> list[dict]:
    """The ε(δ) curve every certificate prints, draws and writes (``certify`` and ``certify --plan``,
    both relations, every route): ``{"delta": δ, name: ε, …}`` for each δ of ``deltas`` (largest
    first) and each ``name ↦ (δ ↦ ε)`` of ``profiles``.

    Each ε is the **running minimum over δ**: the smallest certificate at δ or at any smaller δ' of
    the curve.  Sound because an (ε, δ')-DP mechanism with δ' ≤ δ is (ε, δ)-DP; needed because the
    routes' certificates (a PLD's discretisation, the Rényi conversion's δ-dependence below
    ``PLD_MIN_DELTA``, the route switch itself) can fall as δ falls, and a curve must never turn
    back (0.41 at δ = 1e-12 but 0.34 at 3.2e-13 under replace-one at q = 0.001, z = 4, T = 10⁴).
    A point whose figure is a smaller δ's says so: ``"from_delta": {name: δ'}`` (the largest such
    δ'), for the figures lowered only; a point that is its own δ's certificate has no such field.
    ``running_minimum=False``: the raw certificates (what the tests check the curve against).
    """
    grid = sorted(set(float(d) for d in deltas))  # smallest δ first: the minimum runs from there
    names = list(profiles)
    raw = np.array([[float(profiles[n](d)) for n in names] for d in grid], dtype=float).reshape(len(grid), len(names))
    raw[np.isnan(raw)] = math.inf  # no figure: nothing proven at that δ
    best = np.minimum.accumulate(raw, axis=0) if running_minimum else raw
    curve = []
    for i in range(len(grid) - 1, -1, -1):
        point: dict[str, Any] = {"delta": grid[i]}
        lowered = {}
        for j, name in enumerate(names):
            point[name] = float(best[i, j])
            if best[i, j] < raw[i, j]:  # the certificate of the largest smaller δ that attains it
                lowered[name] = grid[max(k for k in range(i) if raw[k, j] == best[i, j])]
        if lowered:
            point["from_delta"] = lowered
        curve.append(point)
    return curve


def lowered_at(curve: list[dict], delta: float) -> list[str]:
    """A note for each figure of ``curve`` that, at the δ asked for, is a smaller δ's certificate
    (below the headline figure, which is the certificate at δ itself)."""
    point = next((p for p in curve if p["delta"] == delta), None)
    if point is None or "from_delta" not in point:
        return []
    return [f"the ε(δ) curve at δ = {delta:g} shows {'' if name == 'epsilon' else name + ' '}ε = "
            f"{format_epsilon(point[name])}: the certificate at δ = {low:.3g}, which holds at every larger δ "
            "(the curve is the running minimum over δ, docs/certify.md)"
            for name, low in point["from_delta"].items()]


def checked_param(name: str, value: Any, owner: str = "certify") -> Any:
    """``value`` checked against the declaration ``name`` of :data:`CERTIFY_PARAMS` (``None`` stays ``None``)."""
    return None if value is None else check(CERTIFY_PARAMS[name], value, owner)


def format_epsilon(x: float | None) -> str:
    """An ε as the certificates print it (``∞``: nothing proven)."""
    return "∞" if x is None or not math.isfinite(x) else f"{x:.4g}"


def format_delta(delta: float) -> str:
    """A δ as a headline prints it: ``:g`` where that reads back as δ itself, else every digit
    needed (``0.999999``, ``0.9999999999``: never ``1``, which is no δ).

    >>> format_delta(1e-5), format_delta(3e-6), format_delta(0.9999999999)
    ('1e-05', '3e-06', '0.9999999999')
    """
    text = f"{delta:g}"
    return text if float(text) == delta else repr(float(delta))


def format_noise(x: float) -> str:
    """A noise as the inverse question's answer prints it: 4 significant digits rounded **up** (a printed
    noise fed back must still meet the target), ``∞`` for none found, 0 for no noise needed.

    >>> format_noise(0.90201), format_noise(2.0), format_noise(0.0), format_noise(float("inf"))
    ('0.9021', '2', '0', '∞')
    """
    if not math.isfinite(x):
        return "∞"
    if x <= 0:
        return "0"
    unit = 10.0 ** (math.floor(math.log10(x)) - 3)
    up = math.ceil(x / unit - 1e-9) * unit
    while float(f"{up:.4g}") < x:  # the float's own rounding
        up += unit
    return f"{up:.4g}"


def delta_label(delta: float) -> str:
    """A δ as an ε(δ) curve labels it: a power of ten's one digit (``1e-05``), else the fewest digits
    that read back as δ itself, so no label rounds to another δ, nor to 1.

    >>> delta_label(1e-5), delta_label(3.3e-7), delta_label(0.999999)
    ('1e-05', '3.3e-07', '9.99999e-01')
    """
    for digits in range(17):
        text = f"{delta:.{digits}e}"
        if float(text) == delta:
            return text
    return repr(float(delta))
