"""An audit's record as every view shows it: the verdict in words a first course reads, red only for a
refutation two independent audits confirm, the measured bugs above the fold, and everything technical
(the estimators, their assumptions, the noise's checks, the refutation's chance) folded below
(:func:`show_verdict`).  The Audit view and the lesson's audit step draw it with this one function, and
the lesson's file writes the same words (:func:`verdict_text`).  No numerical work: the record's
numbers are arranged for display."""

from __future__ import annotations

import math
import re
from typing import Any, Callable

import pandas as pd
import streamlit as st

from dpcore.audit import basis_words, confirmed, verdict_line
from dpcore.audit.membership import NO_GUARANTEE, NOT_CONFIRMED, NOT_MET, chance_words
from pages.charts import plain_markdown
from pages.formatting import fmt_eps

__all__ = ["FOLD", "JARGON", "finding_words", "headline", "noise_check_line", "noise_checks", "show_verdict",
           "show_verdict_box", "show_verdict_details", "verdict_parts", "verdict_text"]

#: the fold's label: above it plain words, below it how the number was got
FOLD = "How the audit got this number"
#: words a first course cannot read: never above the fold (tests/test_audit_view.py checks it)
JARGON = ("pooled-error", "pooled error", "noncentral t", "χ²", "Bonferroni", "Neyman–Pearson", "Neyman-Pearson")


def _claim(name: str, value) -> str:
    return f"the {'target' if name == 'target' else 'certificate'} (ε = {fmt_eps(value)})"


def _claims(res: dict[str, Any], names) -> str:
    values = {"target": res["epsilon_target"], "certified": res["epsilon_certified"]}
    return " and ".join(_claim(n, values[n]) for n in names)


def _how_far(lb: float, claim) -> str:
    """"1.9 times" or "3 % above" a claim, for the first sentence."""
    if claim is None or not math.isfinite(claim) or claim <= 0:
        return "above"
    ratio = lb / claim
    return f"{ratio:.2g} times" if ratio >= 1.5 else f"{100 * (ratio - 1):.2g} % above"


def _shown(res: dict[str, Any]) -> str:
    shown = f"ε ≥ {fmt_eps(res['epsilon_lower_bound'])}"
    if res.get("at_size_ceiling"):
        shown += f", the most {res['trials']:,} runs a side can show"
    return shown


def finding_words(finding: str) -> str:
    """A measured finding in plain words: its measurements in brackets go below the fold (the one word
    before a colon in them stays: "not Gaussian (heavy-tailed)")."""
    def keep(m: re.Match) -> str:
        word = re.match(r"([\w-]+):", m.group(1))
        return f" ({word.group(1)})" if word else ""

    return re.sub(r" \(([^()]*)\)", keep, finding).strip()


def headline(res: dict[str, Any]) -> str:
    """The verdict's first sentences, in plain words: what the audit shows, against which claim, and
    whether two independent audits agree.  ``res``: :meth:`dpcore.audit.AuditResult.to_dict`."""
    lb, target, cert = res["epsilon_lower_bound"], res["epsilon_target"], res["epsilon_certified"]
    shown, verdict = _shown(res), res["verdict"]
    if verdict == NO_GUARANTEE:
        return (f"This mechanism promises no privacy (ε = ∞), so there is nothing to refute; the audit shows "
                f"{shown}.")
    refuted, once = list(res.get("refuted") or ()), list(res.get("refuted_once") or ())
    same = cert is not None and abs(target - cert) <= 0.01 * target  # one claim, said once
    if verdict == NOT_MET and "certified" in refuted:
        ref = ((res.get("refutation") or {}).get("claims") or {}).get("certified") or {}
        if res.get("findings") and not lb > cert:
            line = (f"Two independent audits measured a bug: the implementation does something its privacy proof "
                    f"rules out (below), so the certificate (ε = {fmt_eps(cert)}) does not hold for the noise that "
                    "ran.")
        else:
            claims = (f"what the target and the certificate claim (ε = {fmt_eps(cert)})" if same else
                      f"what the certificate proves (ε = {fmt_eps(cert)})")
            line = (f"Two independent audits both show {shown}, {_how_far(lb, cert)} {claims}: the implementation "
                    "leaks more than its privacy proof allows.")
        chance = ref.get("chance")
        if chance is not None and chance <= 0:  # a measured fact
            line += " A correct implementation never does this: it is a bug, not bad luck."
        elif chance is not None and ref.get("bug"):
            line += (f" A correct implementation is refuted this strongly in {chance_words(chance)}: this is a "
                     "bug, not bad luck.")
        else:
            line += (" Two audits both refute a correct certificate in at most 1 of 1,000 cases: treat it as a "
                     "bug.")
        if "target" in refuted and not same:
            line += f" The target (ε = {fmt_eps(target)}) is not met either."
        return line
    if verdict == NOT_MET:  # the target only
        line = (f"Two independent audits both show {shown}, {_how_far(lb, target)} the target ε = "
                f"{fmt_eps(target)}: the target is not met.")
        if "certified" in once:
            line += (f" The certificate (ε = {fmt_eps(cert)}) is not refuted: only the first audit went above it, "
                     "and the second did not, which reads as chance.")
        elif cert is not None and cert > target:
            line += (f" The certificate (ε = {fmt_eps(cert)}) is not refuted: the noise is what its proof says, "
                     "too little for the target.")
        else:
            line += f" The certificate (ε = {fmt_eps(cert)}) is not refuted."
        return line
    if verdict == NOT_CONFIRMED:
        line = f"The first audit showed {shown}, above {_claims(res, once)}"
        if res.get("confirmation"):
            return line + (", but a second, independent audit did not: that reads as the chance refutation a "
                           "correct claim gets now and then (about 1 audit in 20), not as a bug. Nothing is "
                           "refuted.")
        return line + (". No second audit was run to confirm it, and one audit alone refutes a correct claim about "
                       "1 time in 20: nothing is refuted yet.")
    # not refuted: the claim tested is the smaller of the two
    claim = min(v for v in (target, cert) if v is not None)
    if cert is None or same:
        named = f"ε = {fmt_eps(claim)}"
    else:
        named = f"the {'target' if target < cert else 'certified'} ε = {fmt_eps(claim)}"
    if not lb > 0:
        line = (f"The audit could not tell the two datasets apart: it shows only ε ≥ 0, so it cannot refute "
                f"{named}.")
    else:
        share = res.get("share_of_claim")
        pct = "" if share is None else f" ({100 * share:.0f} % of the claim)"
        line = (f"The audit could not tell the two datasets apart well enough to refute {named}: it shows "
                f"{shown}{pct}.")
    ceiling = res.get("epsilon_attack_ceiling")
    if ceiling is not None and cert is not None and ceiling < 0.99 * cert:
        line += (f" What this attack sees can show at most ε = {fmt_eps(ceiling)}; the rest of the certificate is "
                 "the proof's margin, not the attack's weakness.")
    return line + " An audit can show that a claim is false, never that it is true."


def verdict_parts(res: dict[str, Any], short: bool = False) -> list[str]:
    """The verdict box's paragraphs (Markdown): the plain sentences, what the number rests on (``short``:
    in a projector's few words), each measured bug, the verdict's name as every interface writes it
    (``dpcore.audit.verdict_line``)."""
    parts = [headline(res), f"It rests on {basis_words(res, short=True)}." if short else
             f"What the number rests on: {basis_words(res)}."]  # the estimator and its assumption
    parts += [f"Measured: {plain_markdown(finding_words(f))}." for f in res.get("findings") or ()]
    parts.append(verdict_line(res, explained=False))
    return parts


def verdict_text(res: dict[str, Any], sep: str = "\n\n", short: bool = False) -> str:
    """:func:`verdict_parts` as one text (the lesson's file: one paragraph, ``sep=" "``)."""
    return sep.join(verdict_parts(res, short=short))


def noise_check_line(res: dict[str, Any]) -> str | None:
    """The noise check as the labelled figure it is (neutral, never a verdict), or ``None``."""
    nc = res.get("noise_check")
    if nc is None:
        return None
    said = f"**{plain_markdown(nc['line'][0].upper() + nc['line'][1:])}**"
    if res["epsilon_certified"] is not None:
        said += f" (the certificate says {fmt_eps(res['epsilon_certified'])})"
    return said + ": a check of how much noise ran, not a verdict."


def noise_checks(noise: dict[str, Any]) -> list[dict[str, str]]:
    """The noise's checks as rows of words: what each tests, passed or not, what was measured."""
    def passed(ok) -> str:
        return "passed" if ok else "FAILED"

    runs = noise.get("runs", 0)
    rows = [{"check": "independent runs: no two runs drew the same noise", "result": passed(noise.get("independent")),
             "measured": f"{noise.get('distinct_runs', 0):,} of {runs:,} runs drew different noise"}]
    if noise.get("steps", 1) > 1:
        steps = (f"{noise['reused_runs']:,} runs drew one noise vector at two steps" if noise.get("reused_runs") else
                 f"correlation of neighbouring steps {noise.get('lag1_correlation', 0):.2g}, a run's sum "
                 f"{noise.get('variance_ratio', 1):.3g}× as variable as independent steps', "
                 f"p = {noise.get('steps_p_value', 1):.2g}")
        rows.append({"check": "independent steps: no step reuses or echoes another step's noise",
                     "result": passed(noise.get("steps_independent", True)), "measured": steps})
    rows.append({"check": "equal variances: the noise is as large in every direction",
                 "result": passed(noise.get("isotropic", True)),
                 "measured": f"each coordinate's variance {noise.get('variance_min', 1):.3g}–"
                             f"{noise.get('variance_max', 1):.3g}× the claimed, p = "
                             f"{noise.get('isotropy_p_value', 1):.2g}"})
    rows.append({"check": "Gaussian shape: the noise has a bell curve's tails", "result": passed(noise.get("gaussian")),
                 "measured": f"skewness {noise.get('skewness', 0):.2g}, excess kurtosis "
                             f"{noise.get('excess_kurtosis', 0):.2g} over {noise.get('coordinates', 0):,} numbers, "
                             f"p = {noise.get('p_value', 1):.2g}"})
    return rows


def show_verdict(res: dict[str, Any], numbers: Callable[[], None] | None = None) -> None:
    """The verdict box first (:func:`show_verdict_box`), then the view's ``numbers`` (the three ε's, which
    a phone stacks: the sentence must not fall below them) and :func:`show_verdict_details`."""
    show_verdict_box(res)
    show_verdict_details(res, numbers)


def show_verdict_box(res: dict[str, Any], compact: bool = False) -> None:
    """The verdict box: red only for :func:`dpcore.audit.confirmed` ("claim not met"); "refuted once, not
    confirmed" and "not refuted" in the same neutral colour.  ``compact``: its words in one paragraph (a
    projector's lesson step, where every line counts)."""
    (st.error if confirmed(res) else st.info)(verdict_text(res, sep=" ", short=True) if compact else verdict_text(res))


def show_verdict_details(res: dict[str, Any], numbers: Callable[[], None] | None = None) -> None:
    """Under the box: the view's ``numbers``, the noise check labelled as one, and the fold with how the
    audit got its number."""
    if numbers is not None:
        numbers()
    line = noise_check_line(res)
    if line:
        st.markdown(line)
    with st.expander(FOLD):
        _details(res)


def _details(res: dict[str, Any]) -> None:
    """Below the fold: the verdict in the audit's own terms (the refutation's size and chance, the second
    audit), the estimators and their assumptions, the noise's checks, what was tested."""
    st.markdown(f"**In the audit's own terms.** {verdict_line(res)}")
    ceiling = res.get("epsilon_attack_ceiling")
    if ceiling is not None and res["epsilon_certified"] is not None and ceiling < 0.99 * res["epsilon_certified"]:
        measured = any(e["name"] == "measured" for e in res["estimates"])
        st.metric("the pair's own ε (what these records can show)" if measured
                  else "the attack's own ceiling (ε of the releases it sees)", fmt_eps(ceiling))
        shift = res.get("shift_check") or {}
        if measured and shift.get("declared"):
            st.caption(
                f"The two records this audit trains on move the release by {shift['measured'] / shift['declared']:.2f} "
                f"of the declared sensitivity; that pair's own ε under the noise that ran is {fmt_eps(ceiling)}: "
                "no test on these two records can show more, however many runs. The rest of the certified "
                f"ε = {fmt_eps(res['epsilon_certified'])} pays for the proof's worst case (a shift this pair "
                "does not make; for objective perturbation also its Jacobian term), the proof's slack and not "
                "the attack's weakness.")
        else:
            st.caption(
                f"The attack sees only the Gaussian part of the noise, whose own ε is {fmt_eps(ceiling)}: no test "
                "on these releases can show more, however many runs. The rest of the certified "
                f"ε = {fmt_eps(res['epsilon_certified'])} is what the proof pays for the other terms (the "
                "Jacobian of objective perturbation), the proof's slack and not the attack's weakness.")
    rows = [{"estimator": e["name"], "ε ≥": fmt_eps(e["epsilon"]), "α": f"{e['alpha']:.3g}",
             "in the audited ε": "yes" if e["headline"] else "no (labelled only)",
             "from": e["detail"], "assumes": e["assumption"]} for e in res["estimates"]]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    # the table's cells cut long text (on a phone, most of it): each estimator's source and assumption in full
    st.markdown("\n".join(f"- **{plain_markdown(e['name'])}** (ε ≥ {fmt_eps(e['epsilon'])}): "
                          f"{plain_markdown(e['detail'])}. *Assumes* {plain_markdown(e['assumption'])}."
                          for e in res["estimates"]))
    st.caption(
        "**Estimators.** *Direct* assumes nothing but independent runs: upper confidence bounds on the "
        "test's two error rates give ε by the definition of (ε, δ)-DP. *Measured* (white-box, noisy-gradient "
        "mechanisms) reads the mechanism itself: the shift a pair of real records makes at every step, "
        "measured through the mechanism's own code, the noise scale from every coordinate the runs drew, the "
        "sampling rate as measured; it assumes Gaussian noise and independent runs and the audit checks both. "
        "The *noise check* (labelled, not in the audited ε) is the certificate's formula at the measured noise "
        "and the declared shift. Each estimator runs at its share of α, fixed in advance (most of it on the "
        f"estimator the noise's family makes the strongest), so that the largest holds with confidence "
        f"{res['confidence']:g}. A refutation is shown only when a second, independent audit (a fresh seed, at a "
        "smaller α) refutes the same claim: a correct claim is shown refuted in at most 1 audit of 1,000. "
        + ("Black-box scores are not exactly Gaussian: their Gaussian figure is shown, labelled, and left "
           "out of the audited ε." if res["threat"] == "black-box" else ""))
    if res.get("noise_check") is not None:
        st.caption("The noise check is not an ε of records: it is the certificate's own formula at the noise "
                   "the runs really drew and the *declared* sensitivity, as if a record could move each step by "
                   "all of it (a gradient canary). It is the sharpest test of σ: less noise than the plan says "
                   "shows here first. It never decides the verdict (a correct certificate puts it above itself "
                   "by a hair now and then); whether any pair of records of the data can move that much is what "
                   "the audited ε measures.")
    if res.get("noise"):
        st.markdown("**The noise's checks** (what the measured estimators assume; a check that fails hides them, "
                    "one that fails beyond doubt, p < 10⁻⁹, is a measured bug, shown above):")
        st.table(pd.DataFrame(noise_checks(res["noise"])).set_index("check"))
    for finding in res.get("findings") or ():
        st.caption(f"Measured in full: {plain_markdown(finding)}.")
    dom = res.get("epsilon_domain_ceiling")
    if dom is not None:
        st.caption(f"The data domain allows at most ε = {fmt_eps(dom)} here: no record's gradient is longer than "
                   "the model's bound, which is below the declared clipping norm, so the certificate (and the "
                   "noise check) pay for a shift no pair of records can make.")
    sc = res.get("shift_check")
    if sc is not None:
        st.caption(f"End-to-end check: the real replaced record moved {sc['what']} by up to {sc['measured']:.4g} "
                   f"against a declared {sc['declared']:.4g}"
                   + (" (the declared worst case, reached)" if sc["reached"] else "")
                   + (f"; it was sampled in {sc['included']} of {sc['runs']} measured steps, declared rate "
                      f"{sc['sample_rate']:.3g}" if sc["included"] is not None else "") + ".")
    st.caption(f"What was tested: {res['canary_description']}. {res.get('note') or ''}")
    notes = [w for w in res.get("warnings") or () if not w.startswith("measured: ")]
    if notes:
        st.caption("Noted: " + "; ".join(plain_markdown(w) for w in notes) + ".")
