"""The membership test and the verdict: an empirical lower bound on ε (SPEC §5).

A certified ε is a proof; an audited ε is evidence.  An audit runs a mechanism many
times on two neighbouring training sets, ``D`` (without the canary) and ``D'`` (with it;
:mod:`dpcore.audit.canaries`), scores every release by how much it "remembers" the
canary (:mod:`dpcore.audit.threats`), and turns the two score samples into a statistical
test "was the canary in the training set?".  For an (ε, δ)-DP mechanism every such test
has false-positive and false-negative rates with ``FPR + e^ε·FNR ≥ 1 − δ`` and
``FNR + e^ε·FPR ≥ 1 − δ`` (Kairouz, Oh & Viswanath 2015), so upper confidence bounds on
the two rates give a lower confidence bound on ε:

    ε_LB = max( ln((1 − δ − FNR_u)/FPR_u), ln((1 − δ − FPR_u)/FNR_u) ),  floored at 0.

Procedure (Jagielski, Ullman & Oprea 2020), at a confidence level 1 − α:

1. each side's runs are split in half; on the first halves the threshold and
   its direction ("canary present when the score is above / below t") are
   chosen to maximise the bound;
2. on the second halves the false positives (runs on ``D`` judged "canary
   present") and false negatives (runs on ``D'`` judged "absent") are counted;
3. one-sided Clopper–Pearson upper bounds at confidence ``1 − α/2`` each give
   ``FPR_u`` and ``FNR_u``; by the union bound both hold together with
   probability ≥ 1 − α, so ``P(ε_LB > ε_true) ≤ α``.  The threshold was chosen
   on independent runs, so the evaluation counts are honest binomials.

This direct bound assumes nothing about the mechanism.  The audit runs it at its share of
the audit's α (:data:`dpcore.audit.bounds.ALPHA_SHARES`: all of it unless sharper
estimators apply; :func:`dpcore.audit.core.audit` says which).

Verdict.  An audit tests two claims: the target ε (what the calibration
promised) and the certified ε (what the noise that ran provably gives).  The
claim tested is the stronger (smaller) of the two:

* ``"claim not met"`` – ``ε_LB`` exceeds it; ``refuted`` names which claims
  (``"target"``, ``"certified"``) the evidence contradicts.  A refuted
  *certified* ε means a bug or an event of probability ≤ α; :func:`summary` says which it reads as
  (the refutation's size and chance, :func:`refutation_words`) and what a second, independent audit
  said (:func:`confirmation_words`);
* ``"not refuted"`` – otherwise; ``share_of_claim`` (ε_LB / claim) says how close
  the audit's lower bound came to the claim.  An audit only ever gives a lower bound: it can refute a claim,
  never prove one, and a small share is no evidence either way (a thousand runs
  cannot tell ε = 1 from ε = 0.1 by the direct bound);
* ``"no guarantee claimed"`` – the non-private baseline.

References: Jagielski, Ullman & Oprea 2020, "Auditing Differentially Private
Machine Learning: How Private is Private SGD?" (NeurIPS), Alg. 2; Kairouz, Oh &
Viswanath 2015, Thm 2.1; Clopper & Pearson 1934.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from ..exceptions import ParameterError
from ..params import validate
from ..privacy.core import certify
from .bounds import clopper_pearson_upper, effect_size_bound, pooled_error_bound

__all__ = [
    "ESTIMATOR_WORDS",
    "basis_words",
    "NOT_CONFIRMED",
    "SplitHalfCounts",
    "NOT_MET",
    "NOT_REFUTED",
    "NO_GUARANTEE",
    "VERDICTS",
    "MembershipTest",
    "choose_threshold",
    "epsilon_lower_bound",
    "gaussian_assumption",
    "membership_test",
    "privacy_region",
    "roc_points",
    "size_ceiling",
    "summary",
    "chance_words",
    "confirmation_words",
    "confirmed",
    "refutation_words",
    "tradeoff_curve",
    "verdict",
]

NOT_REFUTED, NOT_MET, NO_GUARANTEE = ("not refuted", "claim not met", "no guarantee claimed")
#: the first audit refuted a claim and no second, independent audit confirmed it (or none was run)
NOT_CONFIRMED = "refuted once, not confirmed"
VERDICTS = (NOT_REFUTED, NOT_CONFIRMED, NOT_MET, NO_GUARANTEE)


def _check(name: str, value: Any) -> Any:
    """Validate an audit parameter against its declaration in :data:`dpcore.params.PARAMS`."""
    return validate(name, value, "audit")


def epsilon_lower_bound(fp, n0, fn, n1, delta: float, alpha: float):
    """ε lower bound at confidence 1 − α from a membership test's error counts.

    ``fp`` of ``n0`` runs without the canary were judged "canary present",
    ``fn`` of ``n1`` runs with it were judged "absent".  Each rate gets a
    Clopper–Pearson upper bound at confidence ``1 − α/2`` (union bound: both
    hold together with probability ≥ 1 − α); then

        ε_LB = max(ln((1 − δ − FNR_u)/FPR_u), ln((1 − δ − FPR_u)/FNR_u)),

    floored at 0.  It never grows with fp or fn.  Works elementwise on arrays.

    >>> round(epsilon_lower_bound(0, 500, 0, 500, 1e-5, 0.05), 4)   # a perfect test
    4.9056
    >>> epsilon_lower_bound(250, 500, 250, 500, 1e-5, 0.05)         # a coin flip
    0.0

    References: Kairouz, Oh & Viswanath 2015, Thm 2.1; Jagielski et al. 2020, Alg. 2.
    """
    alpha = _check("alpha", alpha)
    if not 0.0 <= delta < 1.0:  # a statistic: δ = 0 (pure DP) is allowed here
        raise ParameterError(f"delta must be in [0, 1); got {delta!r}")
    conf = 1.0 - alpha / 2.0
    eps = _epsilon_from_uppers(np.asarray(clopper_pearson_upper(fp, n0, conf)),
                               np.asarray(clopper_pearson_upper(fn, n1, conf)), delta)
    return float(eps) if eps.ndim == 0 else eps


def _epsilon_from_uppers(fpr_u: np.ndarray, fnr_u: np.ndarray, delta: float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log(np.maximum(1.0 - delta - fnr_u, 0.0) / fpr_u)
        b = np.log(np.maximum(1.0 - delta - fpr_u, 0.0) / fnr_u)
    return np.maximum(np.maximum(a, b), 0.0)


def choose_threshold(s0: np.ndarray, s1: np.ndarray, delta: float, alpha: float) -> tuple[float, str]:
    """Threshold and direction maximising :func:`epsilon_lower_bound` on (s0, s1).

    ``s0``: scores of runs without the canary, ``s1``: with it.  Candidates are
    every observed score ``t`` in both directions: "above" judges the canary
    present when ``score > t``, "below" when ``score < t``.  Ties in the bound
    go to the smaller balanced error ``FPR + FNR``.
    """
    s0, s1 = np.asarray(s0, float), np.asarray(s1, float)
    alpha = _check("alpha", alpha)
    # Counts are integers: bound every possible count once, then look them up.
    conf = 1.0 - alpha / 2.0
    up0 = np.asarray(clopper_pearson_upper(np.arange(s0.size + 1), s0.size, conf))
    up1 = np.asarray(clopper_pearson_upper(np.arange(s1.size + 1), s1.size, conf))
    best: tuple | None = None
    for direction, sign in (("above", 1.0), ("below", -1.0)):
        a0, a1 = np.sort(sign * s0), np.sort(sign * s1)
        cand = np.unique(np.concatenate([a0, a1]))
        fp = a0.size - np.searchsorted(a0, cand, side="right")  # runs on D with score > t
        fn = np.searchsorted(a1, cand, side="right")  # runs on D' with score ≤ t
        bound = _epsilon_from_uppers(up0[fp], up1[fn], delta)
        err = fp / a0.size + fn / a1.size
        i = np.lexsort((err, -bound))[0]
        key = (float(bound[i]), -float(err[i]))
        if best is None or key > best[0]:
            best = (key, float(sign * cand[i]), direction)
    return best[1], best[2]


def _judge(scores: np.ndarray, threshold: float, direction: str) -> np.ndarray:
    """True where the test says "canary present"."""
    return scores > threshold if direction == "above" else scores < threshold


@dataclass(frozen=True, kw_only=True)
class SplitHalfCounts:
    """What the split-half test counted: the threshold and direction the first halves chose, the errors
    on the second halves and their upper bounds (a test's outcome and an audit's result both carry them)."""

    threshold: float
    direction: str  # "above": canary judged present when score > threshold; "below": <
    false_positives: int
    n_without: int
    false_negatives: int
    n_with: int
    fpr_upper: float
    fnr_upper: float

    def counts(self) -> dict[str, Any]:
        """These fields by name (to carry them over to another result)."""
        return {f.name: getattr(self, f.name) for f in fields(SplitHalfCounts)}


@dataclass(frozen=True, kw_only=True)
class MembershipTest(SplitHalfCounts):
    """Outcome of the split-half test on two score samples (see :func:`membership_test`)."""

    epsilon_lower_bound: float


def membership_test(s0, s1, delta: float, alpha: float) -> MembershipTest:
    """Split-half membership test on scores without (``s0``) and with (``s1``) the canary.

    The first ``⌊N/2⌋`` scores of each sample choose the threshold
    (:func:`choose_threshold`); the rest are counted and bounded with
    :func:`epsilon_lower_bound`.  Runs are i.i.d., so a fixed split is a random one.

    >>> t = membership_test(np.zeros(1000), np.ones(1000), 0.0, 0.05)
    >>> (t.false_positives, t.false_negatives, round(t.epsilon_lower_bound, 4))
    (0, 0, 4.9056)
    """
    s0, s1 = np.asarray(s0, float), np.asarray(s1, float)
    h0, h1 = s0.size // 2, s1.size // 2
    if min(h0, h1) < 1:
        raise ParameterError("the membership test needs at least 2 scores on each side")
    threshold, direction = choose_threshold(s0[:h0], s1[:h1], delta, alpha)
    e0, e1 = s0[h0:], s1[h1:]
    fp = int(np.sum(_judge(e0, threshold, direction)))
    fn = int(np.sum(~_judge(e1, threshold, direction)))
    conf = 1.0 - alpha / 2.0
    return MembershipTest(
        threshold=threshold, direction=direction,
        false_positives=fp, n_without=e0.size, false_negatives=fn, n_with=e1.size,
        fpr_upper=clopper_pearson_upper(fp, e0.size, conf),
        fnr_upper=clopper_pearson_upper(fn, e1.size, conf),
        epsilon_lower_bound=epsilon_lower_bound(fp, e0.size, fn, e1.size, delta, alpha),
    )


def tradeoff_curve(profile, fpr: np.ndarray) -> np.ndarray:
    """The smallest false-negative rate any test can have at each false-positive rate, for a
    mechanism that is (ε_i, δ_i)-DP for every pair of ``profile`` (its privacy profile):
    ``β(α) = max(0, max_i 1 − δ_i − e^{ε_i}α, max_i e^{−ε_i}(1 − δ_i − α))``.

    >>> float(tradeoff_curve([(0.0, 0.0)], np.array([0.3]))[0])   # ε = 0: no test beats chance
    0.7

    References: Kairouz, Oh & Viswanath 2015, Thm 2.1; Dong, Roth & Su 2019, Prop. 2.12.
    """
    fpr = np.asarray(fpr, dtype=float)
    beta = np.zeros_like(fpr)
    for eps, dlt in profile:
        if not math.isfinite(eps):
            continue
        beta = np.maximum(beta, 1.0 - dlt - math.exp(min(eps, 700)) * fpr)
        beta = np.maximum(beta, math.exp(-eps) * (1.0 - dlt - fpr))
    return np.clip(beta, 0.0, 1.0)


def roc_points(s0, s1) -> tuple[np.ndarray, np.ndarray]:
    """Empirical (FPR, TPR) of "canary present when score > t" over every threshold t."""
    s0, s1 = np.sort(np.asarray(s0, float)), np.sort(np.asarray(s1, float))
    t = np.unique(np.concatenate([[-np.inf], s0, s1]))
    fpr = 1.0 - np.searchsorted(s0, t, side="right") / s0.size
    tpr = 1.0 - np.searchsorted(s1, t, side="right") / s1.size
    return fpr, tpr


def verdict(epsilon_lb: float, epsilon_target: float, epsilon_certified: float,
            private: bool = True) -> tuple[str, tuple[str, ...]]:
    """(verdict, refuted claims) for an audit; see the module docstring.

    >>> verdict(3.0, 1.0, 2.4)
    ('claim not met', ('target', 'certified'))
    >>> verdict(1.5, 1.0, 2.4)
    ('claim not met', ('target',))
    >>> verdict(0.6, 1.0, 1.0)
    ('not refuted', ())
    >>> verdict(4.0, math.inf, math.inf, private=False)
    ('no guarantee claimed', ())
    """
    if not private:
        return NO_GUARANTEE, ()
    refuted = tuple(name for name, eps in (("target", epsilon_target), ("certified", epsilon_certified))
                    if epsilon_lb > eps)
    if refuted:
        return NOT_MET, refuted
    return NOT_REFUTED, ()


def size_ceiling(trials: int, delta: float, alpha: float) -> float:
    """The largest direct bound an audit of ``trials`` runs a side can give (a perfect test
    on the counted halves): beyond it, only more runs can show more.

    >>> round(size_ceiling(1000, 1e-5, 0.05), 4)
    4.9056
    """
    half = int(trials) - int(trials) // 2
    return epsilon_lower_bound(0, half, 0, half, delta, alpha)


def verdict_line(rec: dict[str, Any], explained: bool = True) -> str:
    """The verdict as every view writes it: ``Verdict: **…** (refuted: …).``, then (``explained``)
    :func:`summary`."""
    refuted = f" (refuted: {', '.join(rec['refuted'])})" if rec["refuted"] else ""
    if rec["verdict"] == NOT_CONFIRMED:
        refuted = f" ({', '.join(rec.get('refuted_once') or ())})"
    return f"Verdict: **{rec['verdict']}**{refuted}." + (f" {summary(rec)}" if explained else "")


def _claim_names(rec: dict[str, Any], claims) -> str:
    def e(v):
        return "∞" if v is None or v == math.inf else f"{v:.3g}"

    names = {"target": f"the target ε = {e(rec['epsilon_target'])}",
             "certified": f"the certified ε = {e(rec['epsilon_certified'])}"}
    return " and ".join(names[c] for c in claims)


def _only(ref: dict[str, Any] | None, claims) -> dict[str, Any] | None:
    """The refutation's words restricted to some claims."""
    if not ref:
        return None
    kept = {k: v for k, v in ref.get("claims", {}).items() if k in claims}
    return {"claims": kept} if kept else None


def summary(rec: dict[str, Any]) -> str:
    """The one line a student reads: which claim the audit refuted, or how close it came.

    ``rec`` is :meth:`AuditResult.to_dict`.  Infinite ε may be ``inf`` or ``None`` (JSON).  A claim is
    called refuted only when two independent audits refute it (:func:`dpcore.audit.run_audit`)."""
    def e(v):
        return "∞" if v is None or v == math.inf else f"{v:.3g}"

    lb = rec["epsilon_lower_bound"]
    shown = f"ε ≥ {e(lb)}"
    if rec.get("at_size_ceiling"):
        shown = (f"ε ≥ {e(lb)}, the ceiling of an audit of {rec['trials']} runs a side "
                 "(more runs could show more)")
    if rec["verdict"] == NO_GUARANTEE:
        return f"No guarantee claimed; the audit shows {shown}."
    ref = rec.get("refutation")
    once = list(rec.get("refuted_once") or ())
    if rec["verdict"] == NOT_MET:
        line = f"Refuted: {_claim_names(rec, rec['refuted'])}, by two independent audits. The audit shows {shown}."
        mine = _only(ref, rec["refuted"])
        if mine:
            line += " " + refutation_words(mine, rec.get("confidence", 0.95))
        findings = (rec.get("shift_check") or {}).get("findings") or rec.get("findings")
        if findings:
            line += (f" Measured: {'; '.join(findings)}. The certificate does not apply to the noise that ran.")
        if once:
            line += (f" The first audit also refuted {_claim_names(rec, once)}, but the second did not: that "
                     "reads as chance, not as a bug.")
        return line + confirmation_words(rec)
    if rec["verdict"] == NOT_CONFIRMED:
        line = f"Refuted once, not confirmed: the audit shows {shown}, above {_claim_names(rec, once)}."
        mine = _only(ref, once)
        if mine:
            line += " " + refutation_words(mine, rec.get("confidence", 0.95))
        return line + confirmation_words(rec)
    claim = min(v for v in (rec["epsilon_target"], rec["epsilon_certified"]) if v is not None)
    share = rec.get("share_of_claim")
    pct = "" if share is None else f" ({100 * share:.0f} % of the claim ε = {e(claim)})"
    return f"Not refuted{pct}: the audit shows {shown}. An audit can refute a claim, never prove one."


def chance_words(chance: float) -> str:
    """"about 1 audit of 20", "less than 1 audit in a million" … for a refutation's chance.

    >>> chance_words(0.05), chance_words(0.0123), chance_words(3e-9)
    ('about 1 audit of 20', 'about 1 audit of 81', 'less than 1 audit in a million')
    """
    if chance <= 0:
        return "never (a measured fact)"
    if chance < 1e-6:
        return "less than 1 audit in a million"
    return f"about 1 audit of {max(1, round(1 / chance)):,}"


def refutation_words(ref: dict[str, Any], confidence: float = 0.95) -> str:
    """A refutation with its size and its chance: "above the certificate by 0.03 %; a correct
    certificate is refuted this much or more in about 1 audit of 20.", and, where that chance is
    tiny, that this is a bug rather than bad luck.

    >>> refutation_words({"claims": {"certified": {"claim": 2.0, "size": 0.0003, "chance": 0.05, "bug": False,
    ...                   "by": "the audited ε"}}})
    'Above the certificate by 0.03 %; a correct certificate is refuted this much or more in about 1 audit of 20.'
    >>> refutation_words({"claims": {"certified": {"claim": 2.0, "size": 1.2, "chance": 1e-15, "bug": True,
    ...                   "by": "the noise check"}}}).split(";")[0]
    'The noise check is above the certificate by 120 % (2.2×)'
    """
    parts = []
    for name, c in ref.get("claims", {}).items():
        what = "the certificate" if name == "certified" else "the target"
        size = c["size"]
        pct = f"{100 * size:.2g} %" if size < 0.1 else f"{100 * size:.0f} %"
        if size >= 0.5:
            pct += f" ({1 + size:.2g}×)"
        who = "" if c.get("by") in (None, "the audited ε") else c["by"][0].upper() + c["by"][1:] + " is "
        head = f"{who}above {what} by {pct}" if who else f"Above {what} by {pct}"
        if c.get("by") == "a measurement":
            head = f"Measured above {what}"
        correct = "certificate" if name == "certified" else "calibration"
        if c["chance"] <= 0:  # a measured fact: no chance involved
            parts.append(f"{head}: the audit measured the implementation breaking what its plan declares, "
                         f"which a correct {correct} never does: a bug, not bad luck.")
            continue
        line = f"{head}; a correct {correct} is refuted this much or more in {chance_words(c['chance'])}"
        if c.get("bug"):
            line += ": a bug, not bad luck"
        parts.append(line + ".")
    return " ".join(parts)


def confirmation_words(rec: dict[str, Any]) -> str:
    """What the second, independent audit said of a refutation, or that none was run."""
    conf = rec.get("confirmation")
    if rec["verdict"] not in (NOT_MET, NOT_CONFIRMED):
        return ""
    if not conf:
        return (" No second audit was run (it is what confirms a refutation); a single audit refutes a correct "
                "claim about as often as its chance above says.")
    if conf["confirmed"] and not rec.get("refuted_once"):
        return f" Confirmed by a second, independent audit (fresh seed {conf['seed']})."
    if conf["confirmed"]:
        return f" (The second audit: fresh seed {conf['seed']}.)"
    return (f" Not confirmed: a second, independent audit (fresh seed {conf['seed']}) does not refute it, so "
            "this reads as the chance refutation a correct claim gets now and then, not as a bug.")


def confirmed(rec: dict[str, Any]) -> bool:
    """Whether a refutation stands: the verdict is "claim not met", which a second, independent audit
    confirmed (a view turns red only then)."""
    return rec.get("verdict") == NOT_MET


def privacy_region(plan, epsilon_target: float, delta: float, private: bool = True,
                   points: int = 101) -> dict[str, Any]:
    """The region no attack can enter: at each false-positive rate α, the largest true-positive
    rate ``1 − β(α)`` that the certified guarantee (the plan's privacy profile over δ) and the
    target (ε, δ) allow.  An infinite guarantee leaves every point allowed (the region is empty)."""
    fpr = np.concatenate([[0.0], np.geomspace(1e-4, 1.0, points - 1)])
    out: dict[str, Any] = {"fpr": fpr.tolist()}
    if not private:
        out.update(tpr_max_certified=[1.0] * fpr.size, tpr_max_target=None,
                   note="no guarantee: every (FPR, TPR) is possible, the region is empty")
        return out
    deltas = sorted({*np.geomspace(1e-10, 0.5, 16).tolist(), float(delta)})
    profile = [(certify(plan, d), d) for d in deltas]
    if all(math.isinf(e) for e, _ in profile):
        out["tpr_max_certified"] = [1.0] * fpr.size
        out["note"] = "certified ε = ∞: no guarantee, so nothing is excluded (the region is empty)"
    else:
        out["tpr_max_certified"] = (1.0 - tradeoff_curve(profile, fpr)).tolist()
        out["note"] = ("above the certified curve no attack can go (with the certified guarantee); above "
                       "the target curve, none if the target were met. The attack's curve is measured on "
                       "finitely many runs, so it may cross a curve by chance; the audited ε allows for that")
    out["tpr_max_target"] = (1.0 - tradeoff_curve([(epsilon_target, delta)], fpr)).tolist()
    return out


def gaussian_assumption(s0: np.ndarray, s1: np.ndarray, delta: float, alpha: float) -> tuple:
    """Black-box: what the runs would show *if* the attack's trade-off were Gaussian — the
    pooled error at a threshold chosen on the first halves (counted on the second) and the
    effect size of the scores, each at α/2.  Reported beside the direct bound, labelled; never
    part of the audited ε (black-box scores are not exactly Gaussian)."""
    a = alpha / 2
    h0, h1 = s0.size // 2, s1.size // 2
    e0, e1 = s0[h0:], s1[h1:]
    best = None
    for direction, sign in (("above", 1.0), ("below", -1.0)):
        a0, a1 = np.sort(sign * s0[:h0]), np.sort(sign * s1[:h1])
        cand = np.unique(np.concatenate([a0, a1]))
        err = (a0.size - np.searchsorted(a0, cand, side="right")) + np.searchsorted(a1, cand, side="right")
        i = int(np.argmin(err))
        if best is None or err[i] < best[0]:
            best = (int(err[i]), float(sign * cand[i]), direction)
    _, threshold, direction = best
    n = min(e0.size, e1.size)
    e0, e1 = e0[:n], e1[:n]
    fp = int(np.sum(_judge(e0, threshold, direction)))
    fn = int(np.sum(~_judge(e1, threshold, direction)))
    sign = 1.0 if direction == "above" else -1.0
    return (pooled_error_bound(fp, n, fn, n, delta, a), effect_size_bound(sign * s0, sign * s1, delta, a))


#: each estimator of the audited ε in a lecturer's words: its name and what it assumes (``None``: nothing
#: but independent runs); the full assumptions are :data:`dpcore.audit.bounds.ASSUMPTIONS`
ESTIMATOR_WORDS = {
    "direct": ("the attack alone (its two error rates)", None),
    "measured": ("the measured-shift estimator", "Gaussian noise"),
    "pooled-error": ("the pooled-error estimator", "Gaussian noise (a μ-GDP trade-off)"),
    "effect-size": ("the effect-size estimator", "Gaussian scores of one variance on both sides"),
    "sampled-gaussian": ("the sampled-Gaussian estimator", "Poisson-sampled Gaussian noise"),
}


def basis_words(rec: dict[str, Any], short: bool = False) -> str:
    """What the audited ε rests on, in the words every place that shows it uses: the estimator that gave it
    and what that estimator assumes, whether the audit checked it, and, where it is not the attack's own
    error rates, what the assumption-free attack alone shows ("ε ≥ 0.92 by the measured-shift estimator,
    which assumes Gaussian noise (checked: …); the assumption-free attack alone shows ε ≥ 0").
    ``rec``: :meth:`AuditResult.to_dict`; ``short``: what it rests on in a projector's few words (the estimator,
    its assumption and check, the attack's own bound; the headline beside it gives the number)."""
    def e(v):
        return "∞" if v is None or v == math.inf else f"{v:.3g}"

    lb = rec["epsilon_lower_bound"]
    ests = [x for x in rec.get("estimates") or () if x.get("headline", True)]
    best = max(ests, key=lambda x: x["epsilon"], default=None)
    direct = rec.get("epsilon_lower_bound_direct")
    if best is None or best["name"] == "direct" or (direct is not None and direct >= lb):
        if short:
            return "the attack alone, assuming nothing but independent runs"
        return (f"ε ≥ {e(lb)} from the attack alone (its two error rates: {rec.get('false_positives')} false "
                f"positives of {rec.get('n_without')}, {rec.get('false_negatives')} false negatives of "
                f"{rec.get('n_with')}), which assumes nothing but independent runs")
    name, assumes = ESTIMATOR_WORDS.get(best["name"], (f"the {best['name']} estimator", "a model of the noise"))
    noise = rec.get("noise")
    if noise is None:
        checked = "not checked by this audit"
    elif noise.get("gaussian") and noise.get("independent"):
        checked = (f"checked: the {noise.get('coordinates', 0):,} noise numbers the runs drew pass the audit's "
                   "Gaussian-shape test and no two runs drew the same noise")
    else:
        checked = "the audit's own noise check FAILED, so this number may not be a valid bound"
    if short:
        said = ("checked" if noise is not None and noise.get("gaussian") and noise.get("independent")
                else "not checked" if noise is None else "its check FAILED")
        return f"{name} (assumes {assumes}: {said}); the attack alone: ε ≥ {e(direct)}"
    return (f"ε ≥ {e(lb)} by {name}, which assumes {assumes} ({checked}); the assumption-free attack alone "
            f"shows ε ≥ {e(direct)} ({rec.get('false_positives')} false positives of {rec.get('n_without')}, "
            f"{rec.get('false_negatives')} false negatives of {rec.get('n_with')})")
