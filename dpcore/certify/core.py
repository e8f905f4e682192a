"""Certify a run described in another library's terms (issue 46).

A DP-SGD run as Opacus, TF Privacy, JAX Privacy or dp-accounting describe it (noise multiplier z,
sampling rate q or batch size / dataset size, steps or epochs, Poisson or shuffled batches, δ), or a
plain composition of Gaussian or Laplace releases, certified side by side:

* ε under **add/remove** one record (the relation those libraries use) and under **replace-one**
  (the project's relation, SPEC §1), both by the tight privacy-loss distribution (PLD) through
  dp-accounting; the replace-one figure of a DP-SGD run is :func:`dpcore.privacy.accounting.sampled_gaussian_epsilon`
  itself, so it is bit-identical to what every mechanism of the project certifies;
* the ε a Rényi-DP accountant gives (dp-accounting's ``RdpAccountant``, the analysis Opacus'
  ``RDPAccountant`` and TF Privacy's ``compute_dp_sgd_privacy`` run), with the orders of the
  library the run came from, and that library's own figure, named;
* the ε(δ) curve, and the inverse question: which noise gives ε = x.

The declarations this shares (:data:`CERTIFY_PARAMS`, :data:`ACCOUNTANTS`, the curve's δ's) live in
:mod:`dpcore.certify.params`; exported noise plans (``certify --plan``: :func:`certify_plans`,
:func:`plan_work` …) are certified by :mod:`dpcore.certify.plans`.  Their names are importable from here.

Shuffled (fixed-size, without replacement) batches: the libraries report the Poisson figure for
them too, which is not a proof (Chua et al. 2024).  The certified figure for shuffled batches uses
no amplification: each record is in at most one batch of an epoch, so E epochs are E Gaussian
releases of the record, μ = √E/z (add/remove) or 2√E/z (replace-one), exact by GDP.

>>> from dpcore import certify_noise
>>> c = certify_noise(noise_multiplier=1.1, sample_rate=256 / 60_000, epochs=60, delta=1e-5)
>>> round(c.add_remove, 2), round(c.replace_one, 2), c.add_remove <= c.rdp
(2.38, 4.23, True)
"""

from __future__ import annotations

import functools
import logging
import math
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import dp_accounting as dpa
import numpy as np
from dp_accounting.pld import privacy_loss_distribution as _pl
from scipy.optimize import brentq

from ..privacy import accounting as acc
from .params import (ACCOUNTANTS, ADD_REMOVE, CERTIFY_PARAMS, CURVE_DELTAS, FULL_CURVE_DELTAS,
                             OPACUS_ORDERS, REPLACE, TF_ORDERS, epsilon_curve, lowered_at)
from .params import checked_param as _v  # the short names the code reads
from .params import delta_label, format_delta
from .params import format_noise as _noise_text
from .params import format_epsilon as _fmt
from ..exceptions import BudgetError, ParameterError
from ..experiments.context import Budget
from ..experiments.run import SECONDS_PER_OPERATION

__all__ = [
    "ACCOUNTANTS",
    "CERTIFY_PARAMS",
    "CURVE_DELTAS",
    "FULL_CURVE_DELTAS",
    "epsilon_curve",
    "Certificate",
    "certify_noise",
    "certify",
    "installed_library_epsilon",
    "clt_gdp_epsilon",
    "dpsgd_profile",
    "rdp_epsilon",
    "ADD_REMOVE",
    "REPLACE",
    "OPACUS_ORDERS",
    "TF_ORDERS",
]

_NR = dpa.NeighboringRelation


# ---------------------------------------------------------------------------
# the routes


def rdp_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float,
                orders: tuple | None = None) -> float:
    """ε (add/remove) of T Poisson-sampled Gaussian steps by dp-accounting's ``RdpAccountant``
    (``orders``: a library's Rényi orders; None: dp-accounting's own)."""
    event = dpa.GaussianDpEvent(noise_multiplier)
    if sample_rate < 1:
        event = dpa.PoissonSampledDpEvent(sample_rate, event)
    accountant = dpa.rdp.RdpAccountant(orders=list(orders) if orders else None,
                                       neighboring_relation=_NR.ADD_OR_REMOVE_ONE)
    quiet = logging.getLogger("absl")  # it warns of each order it drops (large q, small z): not news here
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        accountant.compose(dpa.SelfComposedDpEvent(event, int(steps)))
        return float(accountant.get_epsilon(delta))
    finally:
        quiet.setLevel(level)


def clt_gdp_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float:
    """Opacus' GaussianAccountant: μ = q·√(T(e^{1/z²} − 1)) (Bu, Dong, Long & Su 2020, the CLT for
    Poisson subsampling), ε from μ-GDP.  An approximation: not an upper bound."""
    try:
        mu = sample_rate * math.sqrt(steps * math.expm1(noise_multiplier ** -2))
    except OverflowError:
        return math.inf
    return acc.gdp_epsilon(mu, delta)


def dpsgd_profile(noise_multiplier: float, sample_rate: float, steps: int,
                  relation: str, min_grid: float = 0.0) -> Callable[[float], float]:
    """δ ↦ ε of T Poisson-sampled Gaussian steps under ``relation``, the PLD built once.

    The route of :func:`dpcore.privacy.accounting.sampled_gaussian_epsilon` (the same grid, the same
    unsampled GDP bound as a cap, Rényi DP below ``PLD_MIN_DELTA``), for either relation:
    replace-one reads one step as sensitivity 2 (records ±C), add/remove as sensitivity 1.
    ``min_grid``: a coarser grid (still an upper bound; a calibration to a large ε needs no finer).
    """
    z, q, T = float(noise_multiplier), float(sample_rate), int(steps)
    sens = 1.0 if relation == ADD_REMOVE else 2.0

    def tiny(delta: float) -> float:
        rdp = (rdp_epsilon(z, q, T, delta) if relation == ADD_REMOVE
               else acc.sampled_gaussian_epsilon_rdp(z, q, T, delta))
        return min(acc.gaussian_epsilon(sens, z, T, delta), rdp)

    grid = None if z < acc.PLD_MIN_MULTIPLIER else acc.pld_grid(z, min(q, 1.0), T)
    grid = grid if grid is None or grid >= min_grid else (None if min_grid > 0.5 else min_grid)
    if grid is None:
        def plain(d: float) -> float:
            if acc.never_sampled(q, T) <= d:  # the record is in no batch but with probability ≤ δ
                return 0.0
            if d < acc.PLD_MIN_DELTA:
                return acc.convex_bridge(d, plain(acc.PLD_MIN_DELTA), acc.PLD_MIN_DELTA, tiny)
            return acc.gaussian_epsilon(sens, z, T, d)
        return plain
    if relation == ADD_REMOVE:
        plds = [_add_remove_pld(z, q, T, grid)]
        # a small ε needs a finer grid than the span rule's 1e-3 (pessimistic rounding over T steps
        # can add many grid steps to ε): the coarse PLD's ε at δ = 1e-10 (the curve's far end) sets
        # the scale, the span rule's 2e6 points the floor; both PLDs are upper bounds, the smaller holds
        scale = pld_epsilon(plds[0], 1e-10)
        fine = max(1e-6, min_grid, 1e-4 * scale, (acc.pld_span(z, q, T) or 0.0) / 2e6,
                   _BUILD_SECONDS_PER_POINT * _loss_width(z) / FINE_GRID_SECONDS)  # priced: never minutes
        if fine < grid / 2:
            plds.append(_add_remove_pld(z, q, T, fine))
    else:
        plds = [acc.sampled_gaussian_pld(z / math.sqrt(T), 1.0, grid) if q >= 1
                else acc.sampled_gaussian_pld(z, q, grid).self_compose(T)]

    def eps(delta: float) -> float:
        if acc.never_sampled(q, T) <= delta:  # the record is in no batch but with probability ≤ δ
            return 0.0
        if delta < acc.PLD_MIN_DELTA:  # bridged to the PLD's last trusted point: continuous there
            return acc.convex_bridge(delta, eps(acc.PLD_MIN_DELTA), acc.PLD_MIN_DELTA, tiny)
        return min(acc.gaussian_epsilon(sens, z, T, delta), *(pld_epsilon(p, delta) for p in plds))

    return eps


def pld_epsilon(pld, delta: float) -> float:
    """``pld.get_epsilon_for_delta(delta)``, the same sums in the same order in numpy: dp-accounting's
    own walks its losses one by one in Python (0.6–3 s a δ on a PLD of 2e6 points, which made a curve of
    29 δ's a hang).  Its dense PMFs only; any other falls back to dp-accounting's own.  Equal to it to
    the last bits of ``exp`` (numpy's and the math module's may differ by an ulp): ``tests/test_certify.py``."""
    pmfs = [getattr(pld, "_pmf_remove", None)] + ([] if getattr(pld, "_symmetric", True) else
                                                   [getattr(pld, "_pmf_add", None)])
    if not all(hasattr(p, "_probs") and hasattr(p, "_lower_loss") for p in pmfs):
        return float(pld.get_epsilon_for_delta(delta))
    return max(_dense_epsilon(p, delta) for p in pmfs)


def _dense_epsilon(pmf, delta: float) -> float:
    infinity, probs, step = float(pmf._infinity_mass), np.asarray(pmf._probs, dtype=float), float(pmf._discretization)
    if infinity > delta:
        return math.inf
    n = len(probs)
    if n == 0:
        return 0.0
    upper = (pmf._lower_loss + n - 1) * step
    losses = np.cumsum(np.concatenate(([upper], np.full(n - 1, -step))))  # itertools.count's repeated sums
    p = probs[::-1]
    upper_mass = np.cumsum(np.concatenate(([infinity], p)))  # before the k-th loss: [k]; after it: [k + 1]
    lower_mass = np.cumsum(np.concatenate(([0.0], np.exp(-losses) * p)))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        u, low = upper_mass[:-1], lower_mass[:-1]
        stop = (u > delta) & (low > 0) & (np.log((u - delta) / np.where(low > 0, low, 1.0)) >= losses)
        flat = (upper_mass[1:] >= delta) & (lower_mass[1:] == 0)  # a loss so large that exp(−loss) is 0
    first_stop = int(np.argmax(stop)) if stop.any() else n
    first_flat = int(np.argmax(flat)) if flat.any() else n
    if first_flat < first_stop:
        return max(0.0, float(losses[first_flat]))
    u, low = float(upper_mass[first_stop]), float(lower_mass[first_stop])
    if u <= low + delta:
        return 0.0
    return math.log((u - delta) / low)


def _add_remove_pld(z: float, q: float, T: int, grid: float):
    """T Poisson-sampled Gaussian steps (add/remove) on ``grid``: dp-accounting's pessimistic PLD."""
    if q >= 1:
        return _pl.from_gaussian_mechanism(z / math.sqrt(T), value_discretization_interval=grid,
                                           neighboring_relation=_NR.ADD_OR_REMOVE_ONE)
    return _pl.from_gaussian_mechanism(z, sampling_prob=q, value_discretization_interval=grid,
                                       neighboring_relation=_NR.ADD_OR_REMOVE_ONE).self_compose(T)


def _laplace_profile(scale: float, sensitivity: float, k: int, relation: str) -> Callable[[float], float]:
    """δ ↦ ε of k Laplace releases of scale b and add/remove L1 sensitivity Δ (replace-one: 2Δ):
    the PLD (add/remove, on a grid relative to the pure ε) capped by the pure ε = kΔ/b."""
    sens = sensitivity * (1.0 if relation == ADD_REMOVE else 2.0)
    pure = k * sens / scale
    grid = min(0.05, max(1e-4, pure / 1e5))
    if pure > 1e5:  # the grid would not fit: the pure ε is a bound
        return lambda d: pure
    accountant = dpa.pld.PLDAccountant(_NR.ADD_OR_REMOVE_ONE, value_discretization_interval=grid)
    try:
        accountant.compose(dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(scale / sens), int(k)))
    except ValueError:  # dp-accounting's own grid of δ's out of order (a loss of 1e-6 per release: issue 67's campaign)
        return lambda d: pure  # the pure ε: a bound at every δ

    def eps(d: float) -> float:
        try:
            return min(pure, float(accountant.get_epsilon(d)))
        except ValueError:
            return pure
    return eps


#: seconds per point of dp-accounting's one-step sampled-Gaussian distribution as the add/remove route
#: builds it (measured 1.6e-5 on 2 shared cores: z = 0.0625, q = 3e-5, 1e-2 grid, 0.7 s), rounded up
_BUILD_SECONDS_PER_POINT = 2e-5


#: the most seconds the finer add/remove grid of :func:`dpsgd_profile` may take to build (a smaller q
#: asked for a grid of 1e-6 whose millions of points took minutes: issue 67's campaign, q = 1e-6, z = 0.7)
FINE_GRID_SECONDS = 4.0


def _loss_width(z: float) -> float:
    """The privacy loss's width μ²/2 + 20μ (μ = 1/z) that a one-step distribution spans."""
    mu = 1.0 / z
    return mu * mu / 2 + 20 * mu


def _add_remove_seconds(z: float, min_grid: float) -> float:
    """The estimated seconds of one :func:`dpsgd_profile` (add/remove) at noise multiplier ``z``: its
    one-step distributions' points, the loss width μ²/2 + 20μ (μ = 1/z, the pricer's rule,
    :mod:`dpcore.certify.plans`) over the 1e-2 grid of the span and the grid of the search."""
    if z < acc.PLD_MIN_MULTIPLIER:
        return 0.01  # the closed form
    width = _loss_width(z)
    return _BUILD_SECONDS_PER_POINT * (width / 1e-2 + width / max(acc.PLD_DISCRETIZATION, min_grid))


def _smallest_noise(eps_of: Callable[[float], float], target: float, start: float = 1.0,
                    rtol: float = 1e-6, price: Callable[[float], float] | None = None,
                    allowance: float = math.inf, what: str = "the noise") -> float:
    """Smallest noise s (to ``rtol``, rounded up) with ``eps_of(s) ≤ target`` (ε falls as the noise
    grows): Brent's method on log ε(log s); the answer is always a noise whose ε was checked.
    ``price``: the estimated seconds of ``eps_of(s)``; the search refuses (:class:`BudgetError`,
    one line) before an evaluation that would take it past ``allowance`` seconds in all."""
    spent = [0.0]
    plain_eps_of = eps_of

    def eps_of(s: float) -> float:  # noqa: F811 (priced, then run)
        if price is not None:
            cost = price(s)
            if spent[0] + cost > allowance:
                raise BudgetError(f"certify: finding {what} for ε = {target:g} needs the privacy-loss distribution "
                                  f"at a noise of {s:.3g}, about {cost:.0f} s more after {spent[0]:.0f} s, past the work "
                                  f"budget's {allowance:.0f} s (DPCORE_WORK_BUDGET): ask for a smaller target ε "
                                  "or a larger δ, or raise the budget")
            spent[0] += cost
        return plain_eps_of(s)

    @functools.cache
    def excess(log_s: float) -> float:
        e = eps_of(math.exp(log_s))
        return 1e6 if not math.isfinite(e) else (-1e6 if e <= 0 else math.log(e) - math.log(target))

    lo = hi = math.log(start)
    reach = math.log(1e12)  # searched within 10¹² times the start either way (a scale of the question's own:
    while excess(hi) > 0:  # a sensitivity of 10⁶ needs σ of 10¹² for a small ε, issue 67's campaign)
        lo, hi = hi, hi + math.log(4.0)
        if hi > math.log(start) + reach:
            return math.inf
    while excess(lo) <= 0:
        lo, hi = lo - math.log(4.0), lo
        if lo < math.log(start) - reach:
            return math.exp(hi)
    root = brentq(excess, lo, hi, xtol=rtol / 4, rtol=1e-12)
    for k in (1, 2, 4):  # just above the root: checked, else the bracket's top (checked when bracketed)
        s = math.exp(min(hi, root + k * rtol / 2))
        if eps_of(s) <= target:
            return s
    return math.exp(hi)


def _figure(value: float | None, route: str, delta: float) -> tuple[float | None, list[str]]:
    """A route's ε as a figure, or ``None`` with a note saying why it is none: an ε below 0 or NaN
    states no guarantee (a Rényi conversion ρ(α) − (log δ + log α)/(α − 1) + log(1 − 1/α), Opacus',
    falls below 0 as δ nears 1, where every run is (0, δ)-DP)."""
    if value is None or value >= 0:
        return value, []
    why = ("is undefined (NaN)" if math.isnan(value) else
           f"is {value:.4g}, below 0: no ε is, and a (0, δ) guarantee is not what it computed")
    return None, [f"{route} gives no figure at δ = {format_delta(delta)}: its ε {why}"
                  + (" (its conversion from Rényi DP goes below 0 as δ nears 1)"
                     if value < 0 and delta > 0.5 else "")]


# ---------------------------------------------------------------------------
# the certificate


@dataclass(frozen=True, kw_only=True)
class Certificate:
    """What :func:`certify_noise` finds.  ε's are floats (``inf``: nothing proven).

    Attributes
    ----------
    mechanism : str
        ``"dp-sgd"``, ``"gaussian"`` or ``"laplace"``; ``description`` its parameters as read.
    delta : float
        The δ the ε's are stated at.
    add_remove, replace_one : float
        The tight (PLD) ε under each neighbouring relation.
    rdp : float
        The Rényi-DP route's ε (dp-accounting), an upper bound on ``add_remove``.
    accountant, library, library_epsilon : str, str, float
        The library the run came from and the ε it reports, recomputed here.
    curve : list
        ε(δ) at other δ's, largest δ first, non-increasing as δ falls (:func:`epsilon_curve`: a point
        may be a smaller δ's certificate, named by its ``from_delta``); ``inverse`` the smallest noise
        for a ``target_epsilon``.

    Examples
    --------
    >>> from dpcore import certify_noise
    >>> c = certify_noise(sigma=2.0, mechanism="gaussian", compositions=10, delta=1e-5)
    >>> c.add_remove < c.replace_one, round(c.add_remove, 2)
    (True, 7.51)
    """

    mechanism: str
    description: dict
    delta: float
    add_remove: float
    replace_one: float
    rdp: float
    accountant: str | None
    library: str | None
    library_epsilon: float | None
    curve: list = field(default_factory=list)
    inverse: dict | None = None
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        e = _fmt
        d = self.description
        dp_sgd = self.mechanism == "dp-sgd"
        name = "z" if dp_sgd else ("σ" if self.mechanism == "gaussian" else "b")  # the noise each one has
        noise = d["noise_multiplier" if dp_sgd else "sigma"]
        noise = f"{name} = {noise:g}" if noise is not None else f"{name} to be found (below)"
        if dp_sgd:
            head = (f"DP-SGD: {noise}, q = {d['sample_rate']:.4g}, T = {d['steps']} steps "
                    f"({d['epochs']:.4g} epoch{'' if d['epochs'] == 1 else 's'}, {d['sampling']} batches), "
                    f"δ = {format_delta(self.delta)}")
        else:
            head = (f"{self.mechanism}: {d['compositions']} release{'s' if d['compositions'] != 1 else ''}, "
                    f"{noise}, Δ = {d['sensitivity']:g}, δ = {format_delta(self.delta)}")
        lines = [head]
        if not noise.endswith("(below)"):  # a noise given: its certificate (without one, only the inverse)
            lines.append(f"{'':34} {'add/remove':>12} {'replace-one':>12}")
            lines.append(f"{'ε certified (PLD, tight)':34} {e(self.add_remove):>12} {e(self.replace_one):>12}")
            rdp = "no figure" if self.rdp is None else e(self.rdp)
            lines.append(f"{'ε by Rényi DP (dp-accounting)':34} {rdp:>12} {'':>12}")
            if self.library:
                lib = "no figure" if self.library_epsilon is None else e(self.library_epsilon)
                lines.append(f"{'as ' + self.accountant + ' reports':34} {lib:>12} {'':>12}")
                lines.append(f"  ({self.library})")
        if self.curve:
            lines.append("ε(δ):  " + "   ".join(f"δ={delta_label(c['delta'])}: {e(c[ADD_REMOVE])} / {e(c[REPLACE])}"
                                                for c in self.curve))
        if self.inverse:
            inv = self.inverse
            lines.append(f"for ε = {inv['target_epsilon']:g} at δ = {format_delta(self.delta)}: {inv['what']} "
                         f"{_noise_text(inv[ADD_REMOVE])} (add/remove), {_noise_text(inv[REPLACE])} (replace-one)")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)



def certify_noise(noise_multiplier: float | None = None, *, sample_rate: float | None = None,
                  steps: int | None = None, epochs: float | None = None, batch_size: int | None = None,
                  dataset_size: int | None = None, sampling: str = "poisson", delta: float = 1e-5,
                  accountant: str = "opacus-rdp", mechanism: str = "dp-sgd", sigma: float | None = None,
                  sensitivity: float = 1.0, compositions: int = 1, target_epsilon: float | None = None,
                  full_curve: bool = False) -> Certificate:
    """Certify a DP-SGD run (or k Gaussian / Laplace releases) as another library describes it.

    Parameters
    ----------
    noise_multiplier : float, optional
        DP-SGD's z (noise standard deviation over the clipping norm).
    sample_rate, batch_size, dataset_size : float, int, int, optional
        The rate q, as ``sample_rate`` or as ``batch_size`` / ``dataset_size``.
    steps, epochs : int, float, optional
        The length, as steps or as epochs (steps = ⌈epochs / q⌉).
    sampling : str
        ``"poisson"`` or ``"shuffled"``.
    delta : float
        The δ to state ε at.
    accountant : str
        The library the run came from (``"opacus-rdp"``, …): its own figure is recomputed beside ours.
    mechanism : str
        ``"dp-sgd"``, ``"gaussian"`` or ``"laplace"``.
    sigma, sensitivity, compositions : float, float, int
        A plain composition: ``compositions`` releases of noise ``sigma`` (σ, or the Laplace scale
        b) and add/remove ``sensitivity`` Δ (replace-one: 2Δ, the triangle inequality).
    target_epsilon : float, optional
        Adds the inverse: the smallest noise giving that ε at ``delta`` under each relation
        (without ``noise_multiplier`` / ``sigma``, only that).
    full_curve : bool
        ε at more δ's.

    Returns
    -------
    Certificate
        The add/remove and replace-one ε's, the Rényi route's, the library's figure, and ε(δ).

    Raises
    ------
    ParameterError
        An invalid description, in one line.

    Examples
    --------
    >>> c = certify_noise(noise_multiplier=1.0, sample_rate=0.01, steps=1000, delta=1e-5, accountant="opacus-rdp")
    >>> c.add_remove < c.replace_one and c.add_remove <= c.rdp <= c.library_epsilon * 1.001
    True
    """
    mechanism = _v("mechanism", mechanism)
    delta = _v("delta", delta)
    target = _v("target_epsilon", target_epsilon)
    deltas = sorted(set(FULL_CURVE_DELTAS if full_curve else CURVE_DELTAS) | {delta}, reverse=True)
    if mechanism == "dp-sgd":
        return _certify_dpsgd(noise_multiplier, sample_rate, steps, epochs, batch_size, dataset_size,
                              _v("sampling", sampling), delta, _v("accountant", accountant), target, deltas,
                              extra={"sigma": sigma, "compositions": None if compositions == 1 else compositions,
                                         "sensitivity": None if sensitivity == 1.0 else sensitivity})
    for name, value in (("noise_multiplier", noise_multiplier), ("sample_rate", sample_rate), ("steps", steps),
                        ("epochs", epochs), ("batch_size", batch_size), ("dataset_size", dataset_size)):
        if value is not None:
            raise ParameterError(f"certify: {name} describes DP-SGD, not a plain {mechanism} composition "
                                 "(give sigma, sensitivity and compositions)")
    return _certify_plain(mechanism, _v("sigma", sigma), _v("sensitivity", sensitivity),
                          _v("compositions", compositions), delta, target, deltas)


def certify(noise_multiplier: float | None = None, sample_rate: float | None = None, **kwargs) -> Certificate:
    """The old spelling of :func:`certify_noise`, kept for one release."""
    warnings.warn("dpcore.certify.core(...) is renamed dpcore.certify_noise(noise_multiplier, sample_rate=..., ...): "
                  "every parameter after the first is keyword-only", DeprecationWarning, stacklevel=2)
    return certify_noise(noise_multiplier, sample_rate=sample_rate, **kwargs)


def installed_library_epsilon(accountant: str, z: float, q: float, steps: int,
                              delta: float) -> tuple[float, str] | None:
    """The ε Opacus' own accountant reports, when Opacus is installed (never a dependency: the
    benchmarks' environment has it), with its name and version; ``None`` otherwise, or for the
    other accountants (TF Privacy's and JAX Privacy's figures are dp-accounting's own code, run
    here with their orders).  An accountant that fails on the setting is ``None`` too."""
    if not accountant.startswith("opacus-"):
        return None
    try:  # optional: Opacus (and PyTorch) only where the benchmarks' environment has them
        import opacus
        from opacus import accountants  # optional, as above
    except Exception:  # not installed, or installed without a working PyTorch
        return None
    cls = {"opacus-rdp": accountants.RDPAccountant, "opacus-prv": accountants.PRVAccountant,
           "opacus-gdp": accountants.GaussianAccountant}[accountant]
    try:
        a = cls()
        a.history = [(float(z), float(q), int(steps))]
        return float(a.get_epsilon(delta)), f"Opacus {getattr(opacus, '__version__', '?')}"
    except Exception:
        return None


def _certify_dpsgd(z, q, steps, epochs, batch, n, sampling, delta, accountant, target, deltas, extra):
    for name, value in extra.items():
        if value is not None:
            raise ParameterError(f"certify: {name} describes a plain composition (mechanism gaussian or laplace), "
                                 "not DP-SGD")
    z = _v("noise_multiplier", z)
    if z is None and target is None:
        raise ParameterError("certify: give the noise multiplier (or a target ε to ask which one meets it)")
    if q is not None and batch is not None:
        raise ParameterError("certify: give the sample rate or the batch size (with the dataset size), not both")
    if (batch is None) != (n is None):
        raise ParameterError("certify: the batch size and the dataset size go together (q = batch / n)")
    if batch is not None:
        batch, n = _v("batch_size", batch), _v("dataset_size", n)
        if batch > n:
            raise ParameterError(f"certify: a batch of {batch} from {n} records is a sampling rate q = "
                                 f"{batch / n:.4g} > 1")
        q = batch / n
    if q is None:
        raise ParameterError("certify: give the sample rate (or the batch size and the dataset size)")
    q = _v("sample_rate", q)
    if (steps is None) == (epochs is None):
        raise ParameterError("certify: give the steps or the epochs (one of them)")
    if steps is None:
        steps = math.ceil(_v("epochs", epochs) / q - 1e-9)
        if not CERTIFY_PARAMS["steps"].constraint.contains(steps):
            raise ParameterError(f"certify: {epochs:g} epochs at q = {q:.4g} are {steps} steps; at most "
                                 f"{CERTIFY_PARAMS['steps'].constraint.high:,} are certified here")
    steps = _v("steps", steps)
    epochs = steps * q
    notes = []
    if sampling == "shuffled":
        # each record is in one batch per (started) epoch: E Gaussian releases, no amplification
        rounds = math.ceil(epochs - 1e-9)
        profiles = {ADD_REMOVE: lambda d, z: acc.gaussian_epsilon(1.0, z, rounds, d),
                    REPLACE: lambda d, z: acc.gaussian_epsilon(2.0, z, rounds, d)}
        notes.append(f"shuffled batches: certified without amplification by sampling ({rounds} epoch"
                     f"{'s' if rounds != 1 else ''}, each record in one batch per epoch, μ-GDP); the libraries report "
                     "the Poisson figure (the RDP and library rows), which is not a proof for shuffled batches")
    else:
        profiles = None
    label, method, orders = ACCOUNTANTS[accountant]
    ar = rp = rdp = lib = math.inf
    curve: list = []
    if z is not None:
        if profiles is None:
            prof = {ADD_REMOVE: dpsgd_profile(z, q, steps, ADD_REMOVE), REPLACE: dpsgd_profile(z, q, steps, REPLACE)}
            ar, rp = prof[ADD_REMOVE](delta), acc.sampled_gaussian_epsilon(z, q, steps, delta)
        else:
            prof = {k: (lambda d, f=f: f(d, z)) for k, f in profiles.items()}
            ar, rp = prof[ADD_REMOVE](delta), prof[REPLACE](delta)
        # at the δ asked for, the curve starts from the headline figures themselves (one value on
        # screen, unless a smaller δ's certificate is lower: the curve is the running minimum over δ)
        curve = epsilon_curve(deltas, {ADD_REMOVE: lambda d: ar if d == delta else prof[ADD_REMOVE](d),
                                       REPLACE: lambda d: rp if d == delta else prof[REPLACE](d)})
        notes += lowered_at(curve, delta)
        rdp = rdp_epsilon(z, q, steps, delta, orders)
        lib = {"rdp": rdp, "clt": clt_gdp_epsilon(z, q, steps, delta),
               "pld": dpsgd_profile(z, q, steps, ADD_REMOVE)(delta) if profiles else ar}[method]
        own = installed_library_epsilon(accountant, z, q, steps, delta)
        if own is not None:
            lib, label = own[0], f"{label}; computed by {own[1]}, installed here"
        elif accountant == "opacus-rdp":
            label += ("; recomputed here (Opacus is not installed): Opacus' own sums for fractional orders can "
                      "give less at large q (by up to 35 %, docs/certify.md)")
        if method == "clt":
            notes.append("Opacus' GDP accountant uses a central-limit approximation: its figure can fall below "
                         "the true ε and certifies nothing")
        rdp, said = _figure(rdp, "the Rényi-DP route (dp-accounting)", delta)
        notes += said
        lib, said = _figure(lib, f"{accountant} ({label.split(';')[0].split(' (')[0]})", delta)
        notes += said
    inverse = None
    if target is not None and profiles is None and acc.never_sampled(q, steps) <= delta:
        # the record is in some batch with probability P ≤ δ: (0, δ)-DP whatever the noise, so no noise
        # is needed (the search for one went toward z → 0 through ever slower distributions)
        inverse = {"target_epsilon": target, "what": "noise multiplier z =", ADD_REMOVE: 0.0, REPLACE: 0.0}
        notes.append(f"any noise multiplier meets ε = {target:g}, even none: a record is in one of the {steps} "
                     f"batch{'es' if steps != 1 else ''} with probability {acc.never_sampled(q, steps):.3g} ≤ "
                     f"δ = {format_delta(delta)}, so the run is (0, δ)-DP whatever its noise")
    elif target is not None:
        if profiles is None and q >= 1:  # no sampling: T Gaussians, exact by μ-GDP for either relation
            solve_ar = _smallest_noise(lambda s: acc.gaussian_epsilon(1.0, s, steps, delta), target, z or 1.0)
            solve_rp = _smallest_noise(lambda s: acc.gaussian_epsilon(2.0, s, steps, delta), target, z or 1.0)
        elif profiles is None:
            budget = Budget.from_environment()
            if budget.error:
                raise ParameterError(budget.error)
            solve_ar = _smallest_noise(lambda s: dpsgd_profile(s, q, steps, ADD_REMOVE, 1e-5 * target)(delta),
                                       target, z or 1.0, price=lambda s: _add_remove_seconds(s, 1e-5 * target),
                                       allowance=budget.work * SECONDS_PER_OPERATION,
                                       what="the noise multiplier (add/remove)")
            solve_rp = acc.calibrate_sampled_gaussian(target, delta, q, steps)
        else:
            solve_ar = _smallest_noise(lambda s: profiles[ADD_REMOVE](delta, s), target, z or 1.0)
            solve_rp = _smallest_noise(lambda s: profiles[REPLACE](delta, s), target, z or 1.0)
        inverse = {"target_epsilon": target, "what": "noise multiplier z =", ADD_REMOVE: solve_ar, REPLACE: solve_rp}
    description = {"noise_multiplier": z, "sample_rate": q, "steps": steps, "epochs": epochs, "sampling": sampling,
                   "batch_size": batch, "dataset_size": n}
    return Certificate(mechanism="dp-sgd", description=description, delta=delta, add_remove=ar, replace_one=rp,
                       rdp=rdp, accountant=accountant, library=label, library_epsilon=None if z is None else lib,
                       curve=curve, inverse=inverse, notes=notes)


def _certify_plain(mechanism, sigma, sens, k, delta, target, deltas):
    if sigma is None and target is None:
        raise ParameterError(f"certify: a {mechanism} composition needs sigma (or a target ε to ask which one meets it)")

    if mechanism == "gaussian":
        def profile(relation, s):
            factor = 1.0 if relation == ADD_REMOVE else 2.0
            return lambda d: acc.gaussian_epsilon(factor * sens, s, k, d)

        def rdp_of(s):
            a = dpa.rdp.RdpAccountant(neighboring_relation=_NR.ADD_OR_REMOVE_ONE)
            a.compose(dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(s / sens), k))
            return float(a.get_epsilon(delta))
    else:
        def profile(relation, s):
            return _laplace_profile(s, sens, k, relation)

        def rdp_of(s):
            a = dpa.rdp.RdpAccountant(neighboring_relation=_NR.ADD_OR_REMOVE_ONE)
            a.compose(dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(s / sens), k))
            return float(a.get_epsilon(delta))

    ar = rp = rdp = math.inf
    curve: list = []
    notes = ["replace-one sensitivity taken as 2Δ (replacing is removing one record and adding another)"]
    if mechanism == "gaussian":
        notes.append(f"μ-GDP exact: μ = √k·Δ/σ = {math.sqrt(k) * sens / sigma:.6g} (add/remove)"
                     if sigma is not None else "μ-GDP exact: μ = √k·Δ/σ")
    if sigma is not None:
        prof = {r: profile(r, sigma) for r in (ADD_REMOVE, REPLACE)}
        ar, rp = prof[ADD_REMOVE](delta), prof[REPLACE](delta)
        curve = epsilon_curve(deltas, prof)
        notes += lowered_at(curve, delta)
        rdp = rdp_of(sigma)
    inverse = None
    if target is not None:
        scale = sens * (math.sqrt(k) if mechanism == "gaussian" else k)  # the noise of μ = 1 (pure ε = 1)
        inverse = {"target_epsilon": target, "what": "σ =" if mechanism == "gaussian" else "scale b =",
                   ADD_REMOVE: _smallest_noise(lambda s: profile(ADD_REMOVE, s)(delta), target, scale),
                   REPLACE: _smallest_noise(lambda s: profile(REPLACE, s)(delta), target, scale)}
    description = {"sigma": sigma, "sensitivity": sens, "compositions": k}
    return Certificate(mechanism=mechanism, description=description, delta=delta, add_remove=ar, replace_one=rp,
                       rdp=rdp, accountant=None, library=None, library_epsilon=None, curve=curve, inverse=inverse,
                       notes=notes)
