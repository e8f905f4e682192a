"""Threat models: what the attacker sees, as the strategies an audit runs (SPEC §5).

:func:`dpcore.audit.core.audit` is one procedure for every threat model: it builds the
audited problem, trains ``trials`` runs a side a chunk at a time and bounds ε from the two
score samples.  What differs between threat models is here, one class each, picked from
one table (:data:`STRATEGIES`, by ``(threat, end_to_end)``):

* :class:`BlackBox` (``threat="black-box"``) – the attacker sees only the released model.
  The runs train on two neighbouring problems, ``D`` and ``D'``
  (:func:`dpcore.audit.canaries.neighbours`), and each release is scored on the canary
  (``score``: its margin or its loss).  Its scores are of no known family, so only the
  direct bound enters the audited ε; a Gaussian-assumption figure is reported beside it,
  labelled (:func:`dpcore.audit.membership.gaussian_assumption`);
* :class:`WhiteBox` (``threat="white-box"``) – the attacker sees every release along the
  way (:mod:`dpcore.audit.whitebox`): the runs train on ``D`` only and the neighbour's shift
  is added at the declared sensitivity.  Its scores may be exact Gaussian shifts or sums of
  Poisson-sampled Gaussian step scores, which the sharper estimators of
  :mod:`dpcore.audit.bounds` use;
* :class:`EndToEnd` (``threat="white-box", end_to_end=True``) – a white-box audit that first
  measures, on a real neighbouring pair with common random numbers, what the record moves
  the first release and how often it is sampled, and scores with that measured shift; a
  finding refutes the certificate.

A strategy is made once per audit (after the budget check) and then asked, in this order:
``problem`` (the ``D`` side: the first run, the δ warning, the record), :meth:`measure`
(before the runs), :meth:`score_chunk` (each chunk), and what its scores allow
(``gaussian``, ``sampled``, ``ceiling_mu``, ``noise_ss``, :meth:`labelled_estimates`,
``shift``, :meth:`record`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..erm import LazySolution
from ..exceptions import ModelError, ParameterError
from ..optim import BatchRNG
from .canaries import canary_scores, make_canary, neighbours, replace_record
from .membership import gaussian_assumption
from .whitebox import ShiftCheck, WhiteBoxScores, measure_shift, white_box_scores

__all__ = ["STRATEGIES", "THREATS", "BlackBox", "EndToEnd", "WhiteBox", "threat_strategy"]

THREATS = ("black-box", "white-box")
#: the end-to-end measurement uses at most this many runs of the D side's seeds
SHIFT_RUNS = 2000


class BlackBox:
    """The attacker sees the released model: runs on ``D`` and on ``D'``, scored on the canary.

    >>> from dpcore.experiments.run import RunSpec, load_problem
    >>> from dpcore.mechanisms import get_mechanism
    >>> cfg = RunSpec(dataset="breast-cancer", model="logreg", mechanism="gradient-dpgd", iterations=10)
    >>> problem = load_problem(cfg)
    >>> attack = BlackBox(get_mechanism(cfg.mechanism), problem, problem.model, cfg, "orthogonal-pair", 1.0,
    ...                   "margin")
    >>> attack.measure(None, 0.05), attack.gaussian, attack.record()["canary"]
    ([], None, 'orthogonal-pair')
    >>> seeds, scores = (np.arange(4), np.arange(4) + 100), (np.zeros(4), np.zeros(4))
    >>> list(attack.score_chunk(seeds, 0, 4, scores))   # one side at a time
    [4, 4]
    >>> attack.labelled_estimates(scores[0], scores[1], 0.0, 0.05) is None   # δ = 0: no Gaussian figure
    True
    """

    threat = "black-box"
    #: black-box scores are of no known family: only the direct bound enters the audited ε
    gaussian: tuple[np.ndarray, np.ndarray] | None = None
    sampled: tuple[float, int, float] | None = None
    ceiling_mu: float | None = None
    noise_ss: tuple[float, int] | None = None
    shift: ShiftCheck | None = None

    def __init__(self, mechanism, problem, model, config, canary: str, canary_label: float, score: str):
        self.mechanism, self.model, self.config = mechanism, model, config
        self.canary_name, self.score = canary, score
        self.canary, self.problem, prime = neighbours(problem, model, config, canary, canary_label)
        mechanism.check(prime, config)
        self.problems = (self.problem, prime)

    def measure(self, seeds, alpha: float) -> list[str]:
        """What is measured before the runs (nothing here); the warnings it gives."""
        return []

    def score_chunk(self, seeds, start: int, stop: int, scores) -> Iterator[int]:
        """Train runs ``start:stop`` of each side and score them into ``scores``; yields the runs
        done after each step (one side at a time here)."""
        for side, problem in enumerate(self.problems):
            out = self.mechanism.run(problem, self.config, BatchRNG(seeds[side][start:stop].tolist()))
            theta = np.asarray(out.theta, dtype=float)
            if theta.shape[0] != stop - start:
                raise ModelError(f"mechanism {self.mechanism.id!r} returned {theta.shape[0]} runs "
                                 f"for {stop - start} seeds")
            scores[side][start:stop] = canary_scores(self.model, theta, self.canary, self.score)
            yield stop - start

    def labelled_estimates(self, s0: np.ndarray, s1: np.ndarray, delta: float, alpha: float) -> tuple | None:
        """Estimates reported beside the audited ε, never part of it: what the runs would show were
        the attack's trade-off Gaussian (a private mechanism, δ > 0), at the audit's full α."""
        if delta > 0 and self.mechanism.private:
            return gaussian_assumption(s0, s1, delta, alpha)
        return None

    def record(self) -> dict[str, Any]:
        """The score and the canary as the result names them."""
        return {"score": self.score, "canary": self.canary_name, "canary_description": self.canary.description,
                "canary_index": self.canary.index, "canary_label": self.canary.y}


class WhiteBox:
    """The attacker sees every release: runs on ``D``, the neighbour's shift added at the declared
    sensitivity and each run scored by the log-likelihood ratio (:func:`white_box_scores`).

    >>> from dpcore.experiments.run import RunSpec, load_problem
    >>> from dpcore.mechanisms import get_mechanism
    >>> cfg = RunSpec(dataset="breast-cancer", model="logreg", mechanism="gradient-dpgd", iterations=10)
    >>> problem = load_problem(cfg)
    >>> attack = WhiteBox(get_mechanism(cfg.mechanism), problem, problem.model, cfg, "auto", 1.0, "margin")
    >>> seeds, scores = (np.arange(4), np.arange(4) + 100), (np.zeros(4), np.zeros(4))
    >>> list(attack.score_chunk(seeds, 0, 4, scores))   # both sides at once
    [8]
    >>> attack.record()["score"], attack.gaussian is not None, attack.sampled   # DP-GD: Gaussian shifts
    ('log-likelihood ratio', True, None)
    >>> attack.noise_ss[1]   # every coordinate of every noisy step of the 8 runs: 8 · 10 · 10
    800
    """

    threat = "white-box"
    shift: ShiftCheck | None = None

    def __init__(self, mechanism, problem, model, config, canary: str, canary_label: float, score: str):
        self.mechanism, self.problem, self.config = mechanism, problem, config
        self.found: WhiteBoxScores | None = None  # the last chunk's scores, and what they are
        self._gauss: tuple[np.ndarray, np.ndarray] | None = None
        self._ss: list[tuple[float, int]] = []  # each chunk's (SS, df) of the noise it read
        self._moments: list = []  # each chunk's power sums and run hashes of that noise

    def measure(self, seeds, alpha: float) -> list[str]:
        """What is measured before the runs (nothing here); the warnings it gives."""
        return []

    def score_chunk(self, seeds, start: int, stop: int, scores) -> Iterator[int]:
        """Score runs ``start:stop`` of both sides into ``scores``; yields the runs done (both sides)."""
        # the attacker's own draws are seeded from this chunk's run seeds (disjoint between chunks
        # and between audits, fixed by the audit's seed): white_box_scores' default
        wb = white_box_scores(self.mechanism, self.problem, self.config, seeds[0][start:stop].tolist(),
                              seeds[1][start:stop].tolist(), shift=self.shift)
        scores[0][start:stop], scores[1][start:stop] = wb.without, wb.with_
        if wb.gaussian is not None:
            if self._gauss is None:
                self._gauss = (np.empty(seeds[0].size), np.empty(seeds[1].size))
            for side in (0, 1):
                self._gauss[side][start:stop] = wb.gaussian[side]
        if wb.noise_ss is not None:
            self._ss.append(wb.noise_ss)
        if wb.noise_moments is not None:
            self._moments.append(wb.noise_moments)
        self.found = wb
        yield 2 * (stop - start)

    @property
    def gaussian(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The scores (or their Gaussian part) whose two distributions are Gaussian shifts symmetric
        about 0, where there are such (the Gaussian-DP estimators apply)."""
        return self._gauss if self.found.gaussian is not None else None

    @property
    def sampled(self) -> tuple[float, int, float] | None:
        """(sampling rate, steps, noise multiplier) where the scores are sums of Poisson-sampled
        Gaussian step scores (the family fit applies)."""
        return self.found.sampled

    @property
    def ceiling_mu(self) -> float | None:
        """The largest Gaussian-DP μ the attack's view can show, were the claim exact."""
        return self.found.ceiling_mu

    @property
    def noise_ss(self) -> tuple[float, int] | None:
        """(SS, df) of every coordinate of the Gaussian noise the attack read, over all runs, in
        units of the claimed variance, where it reads the noise itself (the χ² scale bound applies)."""
        if self.found.noise_ss is None or not self._ss:
            return None
        return float(sum(ss for ss, _ in self._ss)), int(sum(df for _, df in self._ss))

    @property
    def noise(self):
        """The audit's own check of the noise it read (:class:`dpcore.audit.measured.NoiseCheck`: its shape
        and its runs' independence), where it reads the noise itself; None otherwise."""
        if not self._moments:
            return None
        if getattr(self, "_noise", (None,))[0] != len(self._moments):  # computed once per chunk read
            merged = self._moments[0]
            for m in self._moments[1:]:
                merged = merged.merge(m)
            self._noise = (len(self._moments), merged.check())
        return self._noise[1]

    def labelled_estimates(self, s0: np.ndarray, s1: np.ndarray, delta: float, alpha: float) -> tuple | None:
        """None: every white-box estimate that applies is part of the audited ε (the noise check beside it)."""
        return None

    def record(self) -> dict[str, Any]:
        """The score and the "canary" (the attack's view) as the result names them."""
        return {"score": "log-likelihood ratio", "canary": "white-box", "canary_description": self.found.description,
                "canary_index": -1, "canary_label": float("nan")}


class EndToEnd(WhiteBox):
    """White-box, scored with the shift a real neighbouring pair produced (:meth:`measure`).

    >>> from dpcore.experiments.run import RunSpec, load_problem
    >>> from dpcore.mechanisms import get_mechanism
    >>> cfg = RunSpec(dataset="breast-cancer", model="logreg", mechanism="gradient-dpgd", iterations=10)
    >>> problem = load_problem(cfg)
    >>> attack = EndToEnd(get_mechanism(cfg.mechanism), problem, problem.model, cfg, "auto", 1.0, "margin")
    >>> attack.measure((np.arange(20), np.arange(20) + 100), 0.05)   # no finding: nothing to warn of
    []
    >>> attack.shift.runs, attack.shift.exceeds
    (20, False)
    """

    def measure(self, seeds, alpha: float) -> list[str]:
        """Measure the real pair's shift on up to :data:`SHIFT_RUNS` of the ``D`` side's seeds; its
        findings are warnings (and refute the certificate)."""
        self.shift = _measure_shift(self.mechanism, self.problem, self.config,
                                    seeds[0][: min(seeds[0].size, SHIFT_RUNS)].tolist(), alpha)
        return ["end-to-end check: " + finding for finding in self.shift.findings()]


#: the one table of threat strategies, by (threat, end_to_end)
STRATEGIES = {("black-box", False): BlackBox, ("white-box", False): WhiteBox, ("white-box", True): EndToEnd}


def threat_strategy(threat: str, end_to_end: bool) -> type:
    """The strategy class of a (validated) ``threat`` with or without the end-to-end check.

    >>> threat_strategy("black-box", False).__name__, threat_strategy("white-box", True).__name__
    ('BlackBox', 'EndToEnd')
    >>> try:
    ...     threat_strategy("black-box", True)
    ... except ParameterError as e:
    ...     print(e)
    the end-to-end check is a white-box audit: use threat='white-box'
    """
    if not isinstance(end_to_end, bool):
        raise ParameterError(f"end_to_end must be True or False; got {end_to_end!r}")
    if (threat, end_to_end) not in STRATEGIES:
        raise ParameterError("the end-to-end check is a white-box audit: use threat='white-box'")
    return STRATEGIES[threat, end_to_end]


def _measure_shift(mechanism, problem, config, seeds: list[int], alpha: float) -> ShiftCheck:
    """The end-to-end measurement on the opposite pair (one-step runs: the first release of a
    T-step run is the same computation, and the noise cancels between the two sides)."""
    if mechanism.family != "gradient":
        raise ParameterError(f"the end-to-end check runs on noisy-gradient mechanisms; {mechanism.id} "
                             "releases no gradient steps")
    can = make_canary(problem.dataset, "opposite-pair", 1.0, config.seed)
    pair = []
    for x in (can.anti_x, can.x):
        ds = replace_record(problem.dataset, can.index, x, can.y)
        pair.append(dataclasses.replace(problem, dataset=ds, erm=LazySolution(problem.model, ds.X_train,
                                                                               ds.y_train)))
    one_step = dataclasses.replace(config, iterations=1)
    shift = measure_shift(mechanism, pair[0], pair[1], one_step, seeds, alpha)
    if shift is None:
        raise ParameterError(f"the end-to-end check cannot read {mechanism.id}'s releases one step at a time")
    return shift
