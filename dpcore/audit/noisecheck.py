"""What an audit checks of the noise it read, each check naming the assumption it tests.

A white-box audit reads the noise every run drew (runs × steps × coordinates, in units of the claimed
scale).  The estimators that read it as Gaussian assume more than a Gaussian shape: the runs are
independent, the steps of a run are independent, and every coordinate has the claimed variance.  Each
of these is checked here on its own, by a test whose level holds whatever the others do:

* **independent runs** – no two runs drew the same noise (a hash of each run's noise);
* **independent steps** – no run drew the same noise vector at two of its steps (a hash of each
  step's), and no correlation across steps: the lag-k products Σ z_t·z_{t+k} (k = 1 … 5) and the
  variance ratio (the whole run's sum against its steps', which sees every lag at once) have mean 0;
* **equal variances** (isotropy) – each coordinate's mean square against the others';
* **Gaussian shape** – skewness and excess kurtosis of each coordinate's noise, standardised by that
  coordinate's own variance (so unequal variances do not read as heavy tails), both 0.

Every statistic is first computed **run by run** and then tested by the spread of its runs' values
(a z-test of their mean with the runs' own standard error).  The runs are independent (the first
check), so each test has its level however the noise within a run depends on itself: noise drawn
once and reused at every step has exactly Gaussian marginals and passes the shape test, as it
should, and is named by the steps' check instead ("reused across steps"), not as "not Gaussian".
A pooled test over every coordinate of every step (the audit's earlier check) counts a reused draw
T times and calls it non-Gaussian by accident.

Levels: a check rejected at :data:`GAUSSIAN_CHECK_LEVEL` hides the estimators that assume it; one
rejected at :data:`FINDING_LEVEL` is a measured finding that refutes the certificate's premise
(Gaussian, independent, isotropic noise of the declared scale), in words that name what broke.
With four checks the chance that correct noise hides an estimator is at most 4·10⁻³; that it
refutes a certificate, 4·10⁻⁹.

References: Jarque & Bera 1980 (the moments' null variances 6/N and 24/N); Lo & MacKinlay 1988 (the
variance-ratio test).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import chi2 as _chi2
from scipy.stats import norm as _norm

__all__ = [
    "FINDING_LEVEL",
    "GAUSSIAN_CHECK_LEVEL",
    "MAX_LAG",
    "NoiseCheck",
    "NoiseMoments",
    "check_noise",
]

#: a check rejected at this level hides the estimators that assume it; below FINDING_LEVEL the noise
#: refutes the certificate's premise
GAUSSIAN_CHECK_LEVEL, FINDING_LEVEL = 1e-3, 1e-9
#: the lags of the steps' correlation test (the variance ratio sees every lag)
MAX_LAG = 5
#: at most this many coordinate groups are kept run by run (wider releases are grouped, j mod 256)
MAX_GROUPS = 256


def _z_test(values: np.ndarray, null_var: float = 0.0) -> tuple[float, float]:
    """(mean, z) of the per-run values' mean against 0, by their own standard error, or by the one
    independent Gaussian noise gives (each value's variance ``null_var``) where that is larger: the
    runs' own spread carries any dependence within a run, the null's keeps the level where the
    values' skewed spread would understate it (a t-ratio of skewed values has a heavy tail)."""
    v = np.asarray(values, dtype=float)
    if v.size < 3:
        return float(v.mean()) if v.size else 0.0, 0.0
    m, sd = float(v.mean()), max(float(v.std(ddof=1)), math.sqrt(max(null_var, 0.0)))
    if sd == 0.0:
        return m, 0.0 if m == 0.0 else math.copysign(math.inf, m)
    return m, m / (sd / math.sqrt(v.size))


def _two_sided(z: float) -> float:
    return float(2.0 * _norm.sf(abs(z))) if math.isfinite(z) else 0.0


@dataclass(frozen=True)
class NoiseCheck:
    """The noise's checks (module docstring): what the estimators that read it as Gaussian assume.

    >>> rng = np.random.default_rng(0)
    >>> ok = check_noise(rng.standard_normal((400, 10, 8)))
    >>> ok.gaussian, ok.independent, ok.steps_independent, ok.isotropic
    (True, True, True, True)
    >>> check_noise(rng.laplace(size=(400, 10, 8))).gaussian
    False
    >>> check_noise(np.repeat(rng.standard_normal((40, 10, 8)), 10, axis=0)).independent
    False
    >>> reused = check_noise(np.repeat(rng.standard_normal((400, 1, 8)), 10, axis=1))   # drawn once a run
    >>> reused.gaussian, reused.steps_independent, reused.reused_runs
    (True, False, 400)
    >>> wide = rng.standard_normal((400, 10, 8)); wide[:, :, 0] *= 1.3
    >>> check_noise(wide).isotropic
    False
    """

    count: int
    skewness: float
    excess_kurtosis: float
    p_value: float  # the Gaussian shape's
    runs: int
    distinct: int
    steps: int = 1
    lag1: float = 0.0  # the lag-1 correlation across steps
    variance_ratio: float = 1.0  # a run's sum's variance over its steps' (1 for independent steps)
    steps_p: float = 1.0  # the steps' independence (lags 1 … MAX_LAG and the variance ratio, Bonferroni)
    reused_runs: int = 0  # runs that drew one noise vector at two of their steps
    variance_min: float = 1.0  # the smallest and largest coordinate's mean square, in claimed variances
    variance_max: float = 1.0
    isotropy_p: float = 1.0

    @property
    def gaussian(self) -> bool:
        return self.p_value >= GAUSSIAN_CHECK_LEVEL

    @property
    def independent(self) -> bool:
        return self.distinct == self.runs

    @property
    def steps_independent(self) -> bool:
        return self.reused_runs == 0 and self.steps_p >= GAUSSIAN_CHECK_LEVEL

    @property
    def isotropic(self) -> bool:
        return self.isotropy_p >= GAUSSIAN_CHECK_LEVEL

    @property
    def passed(self) -> bool:
        """What every estimator that reads the noise as Gaussian assumes: its shape and independent runs."""
        return self.gaussian and self.independent

    @property
    def passed_steps(self) -> bool:
        """What an estimator that pools every step's noise as independent draws assumes too."""
        return self.passed and self.steps_independent

    def _shape_words(self) -> str:
        tail = ("heavy-tailed" if self.excess_kurtosis > 0 else "light-tailed")
        if abs(self.skewness) * math.sqrt(24.0 / 6.0) > abs(self.excess_kurtosis):
            tail = "skewed"
        return (f"the noise is not Gaussian ({tail}: skewness {self.skewness:.3g}, excess kurtosis "
                f"{self.excess_kurtosis:.3g} over {self.count:,} coordinates, p = {self.p_value:.2g})")

    def _steps_words(self) -> str:
        if self.reused_runs:
            return (f"the noise is reused across steps ({self.reused_runs:,} of {self.runs:,} runs drew one noise "
                    f"vector at two of their steps)")
        return (f"the noise is correlated across steps (lag-1 correlation {self.lag1:.3g}, a run's sum's variance "
                f"{self.variance_ratio:.4g}× its steps', p = {self.steps_p:.2g})")

    def _isotropy_words(self) -> str:
        return (f"the noise is anisotropic (coordinates' variances from {self.variance_min:.4g} to "
                f"{self.variance_max:.4g} times the claimed, p = {self.isotropy_p:.2g})")

    def why_not(self) -> str:
        """Why the estimators that read the noise as Gaussian are hidden ("" where they are not)."""
        out = []
        if not self.gaussian:
            out.append(self._shape_words())
        if not self.independent:
            out.append(f"only {self.distinct} of {self.runs} runs drew distinct noise (the runs repeat)")
        return "; ".join(out)

    def why_not_steps(self) -> str:
        """Why an estimator that also pools the steps as independent draws is hidden."""
        out = [self.why_not()] if not self.passed else []
        if not self.steps_independent:
            out.append(self._steps_words())
        return "; ".join(out)

    def findings(self) -> list[str]:
        """Measured facts (each check rejected at FINDING_LEVEL), each naming the broken assumption."""
        out = []
        if self.p_value < FINDING_LEVEL:
            out.append(self._shape_words() + ", which the certificate assumes")
        if self.reused_runs or self.steps_p < FINDING_LEVEL:
            out.append(self._steps_words() + ", which the certificate assumes independent")
        if self.isotropy_p < FINDING_LEVEL:
            out.append(self._isotropy_words() + ", which the certificate assumes equal in every direction")
        return out

    def notes(self) -> list[str]:
        """What the checks saw below the hiding level but above the finding level, in words."""
        out = []
        if FINDING_LEVEL <= self.p_value < GAUSSIAN_CHECK_LEVEL:
            out.append(self._shape_words())
        if not self.reused_runs and FINDING_LEVEL <= self.steps_p < GAUSSIAN_CHECK_LEVEL:
            out.append(self._steps_words())
        if FINDING_LEVEL <= self.isotropy_p < GAUSSIAN_CHECK_LEVEL:
            out.append(self._isotropy_words())
        return out

    def to_dict(self) -> dict:
        return {"coordinates": self.count, "skewness": self.skewness, "excess_kurtosis": self.excess_kurtosis,
                "p_value": self.p_value, "runs": self.runs, "distinct_runs": self.distinct,
                "gaussian": self.gaussian, "independent": self.independent, "steps": self.steps,
                "lag1_correlation": self.lag1, "variance_ratio": self.variance_ratio, "steps_p_value": self.steps_p,
                "reused_runs": self.reused_runs, "steps_independent": self.steps_independent,
                "variance_min": self.variance_min, "variance_max": self.variance_max,
                "isotropy_p_value": self.isotropy_p, "isotropic": self.isotropic}


class NoiseMoments:
    """The noise's statistics run by run, accumulated over an audit's chunks (:class:`NoiseCheck`).

    ``add(noise)``: ``noise`` is (runs, coordinates) — one release a run — or (runs, steps,
    coordinates), in units of the claimed scale; every call has the same steps and coordinates.
    """

    def __init__(self):
        self.runs = 0
        self.steps = None
        self.groups = None
        self.sizes = None  # coordinates per group
        self.per_run: list[np.ndarray] = []  # (runs, 8·G + MAX_LAG + 1) a chunk
        self.hashes: set[bytes] = set()
        self.reused = 0
        self.count = 0

    def _by_group(self, per_coord: np.ndarray) -> np.ndarray:
        G = self.sizes.size
        if G == self.groups.size:
            return per_coord
        return np.stack([per_coord[:, self.groups == g].sum(axis=1) for g in range(G)], axis=1)

    def add(self, noise: np.ndarray) -> None:
        z = np.asarray(noise, dtype=float)
        if z.ndim == 2:
            z = z[:, None, :]
        z = z.reshape(z.shape[0], z.shape[1], -1)
        R, T, p = z.shape
        if self.steps is None:
            self.steps, G = T, min(p, MAX_GROUPS)
            self.groups = np.arange(p) % G
            self.sizes = np.bincount(self.groups, minlength=G).astype(float)
        elif T != self.steps or p != self.groups.size:
            raise ValueError(f"noise of shape {z.shape[1:]} after {(self.steps, self.groups.size)}")
        # Σ_t z^k per run and coordinate group (k = 1 … 4), then the same of one step a run, the step
        # r mod T of the audit's r-th run (independent across runs whatever the steps do)
        cols, zk = [], z
        for power in (1, 2, 3, 4):
            if power > 1:
                zk = zk * z
            cols.append(self._by_group(zk.sum(axis=1)))
        one = z[np.arange(R), (self.runs + np.arange(R)) % T]  # (R, p)
        ok = one
        for power in (1, 2, 3, 4):
            if power > 1:
                ok = ok * one
            cols.append(self._by_group(ok))
        lags = np.zeros((R, MAX_LAG))
        for k in range(1, min(MAX_LAG, T - 1) + 1):
            lags[:, k - 1] = np.einsum("rtj,rtj->r", z[:, :-k], z[:, k:]) / (p * (T - k))
        whole = z.sum(axis=1)  # (R, p): the run's sum over its steps
        ratio = (np.einsum("rj,rj->r", whole, whole) - cols[1].sum(axis=1)) / (T * p)  # Σ_{t≠s} z_t·z_s / (T·p)
        self.per_run.append(np.concatenate([*cols, lags, ratio[:, None]], axis=1))
        for r in range(R):
            self.hashes.add(hashlib.blake2b(np.ascontiguousarray(z[r]).tobytes(), digest_size=16).digest())
        if T > 1:  # a noise vector drawn at two steps of a run: equal projections first, then the rows
            proj = np.sort(z @ np.resize(_PROBE, p), axis=1)
            for r in np.flatnonzero(np.any(np.diff(proj, axis=1) == 0.0, axis=1)):
                if np.unique(z[r], axis=0).shape[0] < T:
                    self.reused += 1
        self.runs += R
        self.count += z.size

    def merge(self, other: "NoiseMoments") -> "NoiseMoments":
        """The statistics of both (the same steps and coordinates), as one."""
        if other.runs == 0:
            return self
        if self.runs == 0:
            return other
        out = NoiseMoments()
        out.steps, out.groups, out.sizes = self.steps, self.groups, self.sizes
        out.per_run = self.per_run + other.per_run
        out.hashes = self.hashes | other.hashes
        out.reused, out.runs, out.count = self.reused + other.reused, self.runs + other.runs, self.count + other.count
        return out

    def check(self) -> NoiseCheck:
        if not self.per_run or self.count < 8:
            return NoiseCheck(self.count, 0.0, 0.0, 1.0, self.runs, len(self.hashes))
        a = np.concatenate(self.per_run, axis=0)
        G, T, R = self.sizes.size, self.steps, self.runs
        s1, s2, s3, s4, o1, o2, o3, o4 = (a[:, k * G:(k + 1) * G] for k in range(8))
        lags, ratio = a[:, 8 * G:8 * G + MAX_LAG], a[:, -1]
        distinct = len(self.hashes)
        if not np.all(np.isfinite(a)):
            return NoiseCheck(self.count, math.nan, math.nan, 0.0, R, distinct, T, steps_p=0.0,
                              reused_runs=self.reused, isotropy_p=0.0)
        n_g = T * self.sizes  # draws a run makes in each group
        var_g = s2.sum(axis=0) / (n_g * R)  # each group's mean square
        if not np.all(var_g > 0):
            return NoiseCheck(self.count, 0.0, 0.0, 1.0, R, distinct, T, reused_runs=self.reused)
        # the shape, each coordinate standardised by its own variance (u = z/√v): the Hermite moments
        # u³ − 3u and u⁴ − 6u² + 3 have mean 0 and variances 6 and 24 under Gaussian noise.  (a) every
        # draw, by the runs' own spread; (b) one step a run, by the null variances (Jarque–Bera)
        sd = np.sqrt(var_g)
        draws = float(n_g.sum())
        skew_r = ((s3 / sd**3).sum(axis=1) - 3 * (s1 / sd).sum(axis=1)) / draws
        kurt_r = ((s4 / var_g**2).sum(axis=1) - 6 * (s2 / var_g).sum(axis=1)) / draws + 3.0
        g1, z1 = _z_test(skew_r, 6.0 / draws)
        g2, z2 = _z_test(kurt_r, 24.0 / draws)
        p_all = float(_chi2.sf(z1 * z1 + z2 * z2, 2)) if math.isfinite(z1 * z1 + z2 * z2) else 0.0
        n_one = R * float(self.sizes.sum())
        h1 = float(((o3 / sd**3).sum() - 3 * (o1 / sd).sum()) / n_one)
        h2 = float(((o4 / var_g**2).sum() - 6 * (o2 / var_g).sum()) / n_one + 3.0)
        p_one = float(_chi2.sf(n_one * (h1 * h1 / 6.0 + h2 * h2 / 24.0), 2))
        shape_p = min(1.0, 2.0 * min(p_all, p_one))
        # the steps: lags 1 … K and the variance ratio, each a z-test of its runs' mean, Bonferroni
        steps_p, lag1, vr = 1.0, 0.0, 1.0
        p = float(self.sizes.sum())
        v = float(var_g @ self.sizes / p)
        if T > 1:
            tests = [_z_test(lags[:, k], v * v / (p * (T - k - 1))) for k in range(min(MAX_LAG, T - 1))]
            tests.append(_z_test(ratio, 2.0 * v * v * (T - 1) / (T * p)))
            steps_p = min(1.0, len(tests) * min(_two_sided(z) for _, z in tests))
            lag1 = tests[0][0] / v
            vr = 1.0 + tests[-1][0] / v
        # equal variances: each group's mean square against the rest's, paired run by run
        iso_p = 1.0
        if G > 1:
            total = s2.sum(axis=1)
            zs = [_z_test(s2[:, g] / n_g[g] - (total - s2[:, g]) / (draws - n_g[g]),
                          2.0 * v * v * (1.0 / n_g[g] + 1.0 / (draws - n_g[g])))[1] for g in range(G)]
            iso_p = min(1.0, G * min(_two_sided(z) for z in zs))
        return NoiseCheck(self.count, g1, g2, shape_p, R, distinct, T, lag1, vr, steps_p, self.reused,
                          float(var_g.min()), float(var_g.max()), iso_p)


#: a fixed random direction: two noise vectors with the same projection on it are compared whole
_PROBE = np.random.default_rng(20261128).standard_normal(4096)


def check_noise(noise) -> NoiseCheck:
    """:class:`NoiseCheck` of ``noise``: (runs, coordinates) or (runs, steps, coordinates), in units of
    the claimed scale."""
    m = NoiseMoments()
    m.add(np.asarray(noise, dtype=float))
    return m.check()
