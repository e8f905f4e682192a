"""Distributed DP-ERM with client-size skew (SPEC §3.7, seed 004).

m parties hold ``n_1..n_m`` records; each runs T local noisy GD steps from a
common start and the server aggregates once: WD-DP weights the parties by
``n_j/n``, the Jayaraman-style baseline averages them (1/m).  The centralised
reference is ``gradient-dpgd`` on the pooled data.
"""

from __future__ import annotations

import math

import numpy as np

from ..privacy import core as privacy
from ..optim import gradient_descent
from ..params import Interval, Options, Param
from ..partition import RECORD_SPLITS, SPLIT_CERTIFIES, SPLITS, client_sizes, partition
from ..theory.formulas import noisy_gd_variance
from .base import Mechanism, MechanismOutput, Stack, declare, register
from .gradient import clipped_records, gradient_bound

__all__ = ["DistributedWDDP", "DistributedAvg"]


class _Distributed(Mechanism):
    family = "distributed"
    settings = ("clients", "skew", "clip_norm")
    options = declare(
        Param("partition", Options(("two-groups", "random")), "two-groups",
              "client sizes: two groups with n_max/n_min = skew (seed 004), or random sizes"),
        Param("min_client_size", Interval(int, 1, None, "both"), None,
              "smallest client for random sizes (default n/(4m))"),
        Param("split", Options(SPLITS), "random",
              "which records each client holds: random (the papers'; certifies the worst client), or "
              "stratified by label (reads every label, so all clients are composed: far more noise)"))
    models = ("logreg", "linreg", "mlp")
    notion = "(ε, δ)"
    calibrations = ("certified", "published")
    weighting = ""
    privacy_event = ("per client, T Gaussian releases of its mean gradient (replace-one sensitivity "
                     "2G/n_j within the client's own data); with the random split clients hold disjoint "
                     "records fixed by their positions, so the guarantee is the worst client's (parallel "
                     "composition); the stratified split reads every label, so there every client's "
                     "releases compose, each with the sensitivity 2G of a whole client's mean gradient")
    calibration_note = ("Published is one σ for every client (the paper's formula with c), which leaves "
                        "small clients weakly protected; certified calibrates each client for its n_j.")

    @classmethod
    def metadata(cls):
        return {**super().metadata(), "certified_by_split": dict(SPLIT_CERTIFIES)}

    def clips_records(self, model, config):
        return clipped_records(self, model, config)

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

    def client_plan(self, G: float, n_j: int, T: int, sigma: float, split: str = "random") -> privacy.NoisePlan:
        """Client j's T releases.  Replace-one moves one record of a client's data when the split
        is record-independent (sensitivity 2G/n_j); a split that reads the data can change
        every record of it (2G, the mean of n_j gradients of norm ≤ G moving anywhere)."""
        if RECORD_SPLITS[f"clients ({split})"].record_independent:
            return privacy.gaussian(f"a client's mean gradient ({n_j} records), every local step",
                                    2.0 * G / n_j, sigma, T)
        return privacy.gaussian(f"a client's mean gradient ({n_j} records, any of which the {split} split "
                                "may change), every local step", 2.0 * G, sigma, T)

    def federation_plan(self, G: float, sizes, T: int, sigmas, split: str) -> privacy.NoisePlan:
        """The worst client (parallel composition) for a record-independent split; otherwise
        every client's releases compose (:data:`~dpcore.partition.SPLIT_CERTIFIES`)."""
        plans = [self.client_plan(G, nj, T, s, split) for nj, s in zip(sizes, sigmas)]
        if RECORD_SPLITS[f"clients ({split})"].record_independent:
            return privacy.parallel(plans)
        return privacy.compose(plans)

    stack_fields = ("epsilon", "learning_rate")

    def client_sigmas(self, problem, config, sizes) -> list[float]:
        """Each client's noise: the paper's one σ (published), or each client (ε, δ)-DP for
        its own records (certified); times ``noise_scale``."""
        G, _ = gradient_bound(problem, config)
        T, delta, split = config.iterations, config.delta, config.option("split")
        if config.calibration == "published":
            sigmas = [self.published_sigma(G, T, problem.n, sizes, config)] * len(sizes)
        elif RECORD_SPLITS[f"clients ({split})"].record_independent:
            sigmas = [privacy.calibrate(lambda s, nj=nj: self.client_plan(G, nj, T, s), config.epsilon, delta,
                                        start=2.0 * G / nj) for nj in sizes]
        else:  # one σ for all: every client's releases compose, each with sensitivity 2G
            sigma = privacy.calibrate(lambda s: self.federation_plan(G, sizes, T, [s] * len(sizes), split),
                                      config.epsilon, delta, start=2.0 * G * math.sqrt(len(sizes)))
            sigmas = [sigma] * len(sizes)
        return [s * config.noise_scale for s in sigmas]

    def run(self, problem, config, rngs):
        return self.run_stack(problem, [config], [rngs])[0]

    def run_stack(self, problem, configs, rngs):
        stack = Stack(configs, rngs)
        first = configs[0]
        sizes, parts = self.split(problem, first)  # the federation does not depend on ε or the step
        G, clip = gradient_bound(problem, first)
        T = first.iterations
        sigmas = [self.client_sigmas(problem, c, sizes) for c in configs]  # [config][client]
        w = self.weights(sizes)
        theta0 = problem.start(stack.rngs)
        theta = np.zeros_like(theta0)
        lr = stack.learning_rate([c.learning_rate for c in configs])
        for j, idx in enumerate(parts):
            opt = gradient_descent(problem.model, problem.X[idx], problem.y[idx], theta0, iterations=T,
                                   learning_rate=lr, rngs=stack.rngs, noise_std=stack.per_run([s[j] for s in sigmas]),
                                   clip_norm=clip, trace_points=0,
                                   progress=_client_progress(problem.progress, j, len(parts)))
            theta += w[j] * opt.theta
        return [self._output(problem, config, sizes, parts, G, w, theta_k, sig)
                for config, theta_k, sig in zip(configs, stack.split(theta), sigmas)]

    def _output(self, problem, config, sizes, parts, G, w, theta, sigmas) -> MechanismOutput:
        split = config.option("split")
        client_plans = [self.client_plan(G, nj, config.iterations, s, split) for nj, s in zip(sizes, sigmas)]
        delta = config.delta
        plan = self.federation_plan(G, sizes, config.iterations, sigmas, split)
        return MechanismOutput(
            theta=theta, sigma=max(sigmas),
            plan=plan,
            # against the server: it sees each client's noisy releases, never a record; under a
            # record-independent split a record is in one client's data, so the server's view is
            # worth that client's ε (the federation's plan); a split that reads the labels lets
            # one record move others between clients, and the server knows the split: nothing
            local_plan=plan if RECORD_SPLITS[f"clients ({split})"].record_independent else None,
            client_sizes=[int(s) for s in sizes],
            extras={"noise": "Gaussian σ_j on each party's mean gradient, every local step",
                    "client_sigmas": sigmas,
                    "client_epsilons": [privacy.certify(p, delta) for p in client_plans],
                    "weights": w.tolist(), "weighting": self.weighting,
                    "client_sizes_mode": config.option("partition"),
                    "split": split, "certified_as": SPLIT_CERTIFIES[split],
                    "skew_realised": max(sizes) / min(sizes),
                    "single_class_clients": (sum(len(np.unique(problem.y[idx])) < 2 for idx in parts)
                                             if problem.dataset.task == "classification" else 0)},
        )


def _client_progress(progress, j: int, clients: int):
    """Client j's steps as a share of all clients' (each trains T steps in turn)."""
    if progress is None:
        return None
    return lambda done, total, label: progress(j * total + done, clients * total, f"client {j + 1}")


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
    short = "WD-DP"
    paper = "seed 004: Kang et al., WD-DP (Alg. 1, Thm 1)"
    weighting = "n_j / n"
    description = ("Each party runs T noisy GD steps on its own data; the server averages the models "
                   "weighted by n_j/n.")
    formula = r"\theta = \sum_j \frac{n_j}{n}\theta^{(j)}_T,\quad \sigma^2_{pub} = \frac{c\,G^2T\ln(1/\delta)}{n^2\varepsilon^2}"

    def published_sigma(self, G, T, n, sizes, config):
        return math.sqrt(noisy_gd_variance(G, T, n, config.epsilon, config.delta, config.c))

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
    short = "plain averaging"
    paper = "Jayaraman et al. 2018; seed 004 baseline"
    weighting = "1 / m"
    description = "Each party runs T noisy GD steps; the server takes the plain average of the models."
    formula = r"\theta = \frac1m\sum_j \theta^{(j)}_T,\quad \sigma^2_{pub} = \frac{c\,G^2T\ln(1/\delta)}{(m\,n_{(1)})^2\varepsilon^2}"

    def published_sigma(self, G, T, n, sizes, config):
        m, n1 = len(sizes), min(sizes)
        return math.sqrt(noisy_gd_variance(G, T, m * n1, config.epsilon, config.delta, config.c))

    def weights(self, sizes):
        return np.full(len(sizes), 1.0 / len(sizes))
