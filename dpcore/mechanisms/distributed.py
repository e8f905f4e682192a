"""Distributed DP-ERM with client-size skew (SPEC §3.7, seed 004).

m parties hold ``n_1..n_m`` records; each runs T local noisy GD steps from a
common start and the server aggregates once: WD-DP weights the parties by
``n_j/n``, the Jayaraman-style baseline averages them (1/m).  The centralised
reference is ``gradient-dpgd`` on the pooled data.
"""

from __future__ import annotations

import math

import numpy as np

from .. import privacy
from ..exceptions import DPCoreError, ParameterError
from ..optim import gradient_descent
from ..params import Interval, Options, Param
from .base import Mechanism, MechanismOutput, declare, register
from .gradient import _bound

__all__ = ["client_sizes", "partition", "DistributedWDDP", "DistributedAvg"]


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
        rng = np.random.default_rng([seed, 404])
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
    rng = np.random.default_rng([seed, 405])
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


class _Distributed(Mechanism):
    family = "distributed"
    settings = ("clients", "skew", "clip_norm")
    options = declare(
        Param("partition", Options(("two-groups", "random")), "two-groups",
              "client sizes: two groups with n_max/n_min = skew (seed 004), or random sizes"),
        Param("min_client_size", Interval(int, 1, None, "both"), None,
              "smallest client for random sizes (default n/(4m))"),
        Param("split", Options(SPLITS), "random",
              "which records each client holds: a random split (the papers'), or stratified by label"))
    models = ("logreg", "linreg", "mlp")
    notion = "(ε, δ)"
    calibrations = ("certified", "published")
    weighting = ""
    privacy_event = ("per client, T Gaussian releases of its mean gradient (replace-one sensitivity "
                     "2G/n_j within the client's own data); clients hold disjoint records, so the "
                     "guarantee is the worst client's (parallel composition)")
    calibration_note = ("Published is one σ for every client (the paper's formula with c), which leaves "
                        "small clients weakly protected; certified calibrates each client for its n_j.")

    def published_sigma(self, G, T, n, sizes, config) -> float:
        raise NotImplementedError

    def weights(self, sizes) -> np.ndarray:
        raise NotImplementedError

    def split(self, problem, config):
        """Client sizes and record indices, drawn from the base seed: the R repeats of a
        batched run share one federation and differ in their noise."""
        m = config.clients or 4
        u = config.skew or 1.0
        mode = config.option("partition")
        sizes = client_sizes(problem.n, m, u, mode=mode, min_size=config.option("min_client_size"),
                             seed=config.seed)
        # A client holding one class is what random splits of skewed federations produce; it is
        # counted (extras), not refused.
        parts = partition(problem.y, sizes, config.seed, need_both_classes=False,
                          split=config.option("split"))
        return sizes, parts

    def client_plan(self, G: float, n_j: int, T: int, sigma: float) -> privacy.NoisePlan:
        return privacy.gaussian(f"a client's mean gradient ({n_j} records), every local step",
                                2.0 * G / n_j, sigma, T)

    def run(self, problem, config, rngs):
        sizes, parts = self.split(problem, config)
        G, clip = _bound(problem, config)
        T, n, delta = config.iterations, problem.n, config.delta
        model = problem.model
        if config.calibration == "published":
            sig = self.published_sigma(G, T, n, sizes, config)
            sigmas = [sig] * len(sizes)
        else:  # each client (ε, δ)-DP for its own records: calibrate its own release
            sigmas = [privacy.calibrate(lambda s, nj=nj: self.client_plan(G, nj, T, s), config.epsilon, delta,
                                        start=2.0 * G / nj) for nj in sizes]
        sigmas = [s * config.noise_scale for s in sigmas]
        w = self.weights(sizes)
        theta0 = problem.start(rngs)
        theta = np.zeros_like(theta0)
        client_plans = []
        for j, idx in enumerate(parts):
            opt = gradient_descent(model, problem.X[idx], problem.y[idx], theta0, iterations=T,
                                   learning_rate=config.learning_rate, rngs=rngs,
                                   noise_std=sigmas[j], clip_norm=clip, trace_points=0)
            theta += w[j] * opt.theta
            client_plans.append(self.client_plan(G, sizes[j], T, sigmas[j]))
        return MechanismOutput(
            theta=theta, sigma=max(sigmas), plan=privacy.parallel(client_plans),
            client_sizes=[int(s) for s in sizes],
            extras={"noise": "Gaussian σ_j on each party's mean gradient, every local step",
                    "client_sigmas": sigmas,
                    "client_epsilons": [privacy.certify(p, delta) for p in client_plans],
                    "weights": w.tolist(), "weighting": self.weighting,
                    "client_sizes_mode": config.option("partition"),
                    "split": config.option("split"),
                    "skew_realised": max(sizes) / min(sizes),
                    "single_class_clients": (sum(len(np.unique(problem.y[idx])) < 2 for idx in parts)
                                             if problem.dataset.task == "classification" else 0)},
        )


@register
class DistributedWDDP(_Distributed):
    """WD-DP (seed 004): local noisy GD per party, aggregation weighted by n_j/n.

    Published (Thm 1): ``σ² = c·G²·T·ln(1/δ)/(n²ε²)`` for every party — which
    lets the small parties' releases leak more: their certified ε_j is reported.
    Certified: ``σ_j = (2G/n_j)·√T·σ_AG(ε, δ)``, each party (ε, δ)-DP for its records.

    References: Kang et al., "Weighted Distributed DP ERM", Alg. 1, Thm 1–3.
    """

    id = "distributed-wddp"
    name = "Weighted distributed DP-ERM (WD-DP)"
    paper = "seed 004: Kang et al., WD-DP (Alg. 1, Thm 1)"
    weighting = "n_j / n"
    description = ("Each party runs T noisy GD steps on its own data; the server averages the models "
                   "weighted by n_j/n.")
    formula = r"\theta = \sum_j \frac{n_j}{n}\theta^{(j)}_T,\quad \sigma^2_{pub} = \frac{c\,G^2T\ln(1/\delta)}{n^2\varepsilon^2}"

    def published_sigma(self, G, T, n, sizes, config):
        return math.sqrt(config.c * G**2 * T * math.log(1 / config.delta) / (n**2 * config.epsilon**2))

    def weights(self, sizes):
        s = np.asarray(sizes, dtype=float)
        return s / s.sum()


@register
class DistributedAvg(_Distributed):
    """Plain averaging of the parties' noisy models (Jayaraman et al. 2018 style), noise for the smallest.

    Published: ``σ² = c·G²·T·ln(1/δ)/((m·n_(1))²ε²)``; certified as WD-DP.

    References: Jayaraman, Wang, Evans & Gu 2018 (NeurIPS); seed 004's baseline.
    """

    id = "distributed-avg"
    name = "Distributed DP-ERM, plain averaging"
    paper = "Jayaraman et al. 2018; seed 004 baseline"
    weighting = "1 / m"
    description = "Each party runs T noisy GD steps; the server takes the plain average of the models."
    formula = r"\theta = \frac1m\sum_j \theta^{(j)}_T,\quad \sigma^2_{pub} = \frac{c\,G^2T\ln(1/\delta)}{(m\,n_{(1)})^2\varepsilon^2}"

    def published_sigma(self, G, T, n, sizes, config):
        m, n1 = len(sizes), min(sizes)
        return math.sqrt(config.c * G**2 * T * math.log(1 / config.delta) / ((m * n1) ** 2 * config.epsilon**2))

    def weights(self, sizes):
        return np.full(len(sizes), 1.0 / len(sizes))


def skew_curve(dataset: str, epsilon: float, delta: float, *, model: str = "logreg", clients: int = 4,
               skews=(1, 2, 4, 8, 16), epsilons=None, iterations: int = 100, repeats: int = 3,
               seed: int = 0, calibration: str = "certified", learning_rate: float = 1.0,
               progress=None, data=None, **config_kw) -> dict:
    """Accuracy and gap against skew u (and ε) for WD-DP, averaging and the centralised DP-GD.

    The data behind the distributed view and seed 004's Figs 1–2: one row per
    (ε, u, method); ``epsilons`` defaults to ``[epsilon]``.  ``data``: a user's
    own :class:`~dpcore.datasets.Dataset` in place of the registered ``dataset``.
    """
    from ..experiment import RunConfig, run

    rows = []
    eps_grid = list(epsilons) if epsilons else [epsilon]
    methods = ("distributed-wddp", "distributed-avg", "gradient-dpgd")
    total = len(skews) * len(methods) * len(eps_grid)
    for k, (eps, u, mech) in enumerate(((e, u, m) for e in eps_grid for u in skews for m in methods), 1):
        central = mech == "gradient-dpgd"
        cfg = RunConfig(dataset=dataset, model=model, mechanism=mech, epsilon=eps, delta=delta,
                        iterations=iterations, repeats=repeats, seed=seed, calibration=calibration,
                        learning_rate=learning_rate, clients=None if central else clients,
                        skew=None if central else float(u), **config_kw)
        row = {"skew": float(u), "epsilon": eps, "mechanism": mech}
        try:
            r = run(cfg, data).to_dict()
            row.update({key: r.get(key) for key in (
                "accuracy_mean", "accuracy_std", "rmse_mean", "gap_mean", "gap_std",
                "epsilon_certified", "client_sizes", "sigma", "seconds")})
        except DPCoreError as exc:
            row["error"] = str(exc)
        rows.append(row)
        if progress:
            progress(k, total, f"ε={eps:g} u={u:g} {mech}")
    return {"dataset": dataset, "model": model, "epsilons": eps_grid, "delta": delta, "clients": clients,
            "iterations": iterations, "repeats": repeats, "calibration": calibration, "rows": rows}
