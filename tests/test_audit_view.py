"""The Audit view reads right for a class ("Verdicts a class can trust"): it opens on the measured
white-box audit; its first sentence is plain words, with everything technical below a fold; it is red
only for a refutation two independent audits confirm ("claim not met"), never for one audit's chance
refutation nor for the noise check; a planted bug is red and named one (issue 56 before it)."""

import re
from pathlib import Path

from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Expander

from dpcore.audit import confirmed, run_audit
from dpcore.audit.membership import NOT_CONFIRMED
from dpcore.experiments.run import RunSpec
from pages.auditview import FOLD, JARGON, finding_words

ROOT = Path(__file__).resolve().parent.parent
#: seeds 70–89 of the view's DP-GD at certified ε = 2 (white-box, T = 10, 100 runs a side).  Seed 84 was
#: found by running seeds 0–119 with run_audit(..., confirm=False): it is the one whose first audit
#: refutes the correct target and certificate (by 1.7 %, a chance of about 1 audit in 40) and whose
#: second, independent audit does not, so the window holds the case the rule exists for.  (Seed 69, the
#: old one, no longer refutes since the measured audit bounds the noise along the shift run by run.)
SEEDS = range(70, 90)
UNLUCKY = 84


def _spec(seed: int) -> RunSpec:
    return RunSpec(dataset="breast-cancer", model="logreg", mechanism="gradient-dpgd", epsilon=2.0, delta=1e-5,
                   iterations=10, seed=seed)


def _shown(node, folded: bool = False):
    """(element, whether it is below a fold) for every element of the page, in order."""
    children = getattr(node, "children", None)
    if children is not None and not hasattr(node, "value"):
        for k in sorted(children):
            yield from _shown(children[k], folded or isinstance(node, Expander))
    else:
        yield node, folded


def _words(at: AppTest, folded: bool) -> str:
    """Every text the page shows (Markdown, captions, boxes, metrics) above the fold, or below it."""
    out = []
    for part in (at.main, at.sidebar):
        for el, below in _shown(part):
            if below != folded:
                continue
            kind = type(el).__name__
            if kind in ("Markdown", "Caption", "Error", "Info", "Warning", "Success", "Title", "Header",
                        "Subheader"):
                out.append(el.value)
            elif kind == "Metric":
                out.append(f"{el.label} {el.value}")
    return "\n".join(out)


def _no_jargon_above_the_fold(at: AppTest) -> None:
    above, below = _words(at, folded=False), _words(at, folded=True)
    assert not [w for w in JARGON if w.lower() in above.lower()], above
    assert any(w in below for w in JARGON), below  # the check of the check: the fold holds the estimators' terms
    assert FOLD in [e.label for e in at.main.expander]


def _verdict_boxes(at: AppTest) -> tuple[list[str], list[str]]:
    """(red boxes, neutral boxes) that hold the verdict."""
    return ([e.value for e in at.error if "Verdict: **" in e.value],
            [i.value for i in at.info if "Verdict: **" in i.value])


def test_the_window_holds_an_unconfirmed_refutation_so_the_view_test_can_fail():
    """The check of the check: seed 84's first audit refutes the correct certificate, and the second,
    independent audit does not confirm it."""
    first = run_audit(_spec(UNLUCKY), trials=100, threat="white-box", confirm=False)
    assert first.verdict == NOT_CONFIRMED and "certified" in first.refuted_once, first.verdict
    ref = first.refutation
    assert 0 < ref["size"] < 0.05 and 1e-4 < ref["chance"] <= 0.05 and not ref["bug"], ref
    rec = run_audit(_spec(UNLUCKY), trials=100, threat="white-box").to_dict(scores=False)
    assert rec["verdict"] == NOT_CONFIRMED and rec["confirmation"]["confirmed"] == [] and not confirmed(rec)


def test_the_view_opens_on_the_white_box_audit_and_a_link_keeps_black_box():
    at = AppTest.from_file(str(ROOT / "pages" / "audit.py"), default_timeout=180).run()
    assert not at.exception
    assert at.radio(key="au_threat").value == "white-box"
    assert at.number_input(key="au_T").value == 50 and at.select_slider(key="au_trials").value == 500
    linked = AppTest.from_file(str(ROOT / "pages" / "audit.py"), default_timeout=180)
    linked.query_params["au_threat"] = "black-box"
    linked.run()
    assert not linked.exception and linked.radio(key="au_threat").value == "black-box"
    unknown = AppTest.from_file(str(ROOT / "pages" / "audit.py"), default_timeout=180)
    unknown.query_params["au_threat"] = "grey-box"
    unknown.run()
    assert unknown.radio(key="au_threat").value == "white-box"


def _view() -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "audit.py"), default_timeout=180).run()
    at.select_slider(key="au_epsilon").set_value(2.0).run()
    at.select_slider(key="au_trials").set_value(100).run()
    at.session_state["au_T"] = 10
    return at


def test_the_audit_view_at_a_correct_certificate_is_never_red_and_says_a_chance_refutation_plainly():
    at = _view()
    assert at.radio(key="au_threat").value == "white-box"  # the default: no click needed
    red, once = [], []
    for seed in SEEDS:
        at.session_state["au_seed"] = seed
        at.button(key="au_run").click().run()
        assert not at.exception, seed
        assert {m.label: m.value for m in at.metric}["ε certified"] == "2"
        errors, infos = _verdict_boxes(at)
        red += [seed] if errors else []
        [box] = errors + infos
        assert not box.startswith("Verdict"), box  # plain words first
        if "refuted once, not confirmed" in box:
            assert box.startswith("The first audit showed ε ≥ ") and "not as a bug" in box, box
            assert "Nothing is refuted" in box and box in infos, box
            once.append(seed)
        else:
            assert box.startswith("The audit could not tell the two datasets apart"), box
        # the noise check: a labelled figure in neutral colour, never a verdict
        said = "\n".join(m.value for m in at.markdown)
        assert "**Noise check: the noise that ran certifies at least" in said, seed
        assert not [e for e in at.error if "Verdict: **" not in e.value], seed  # no other red box
        assert not [w for w in at.warning if "Noise check" in w.value or "Verdict" in w.value], seed
        _no_jargon_above_the_fold(at)
    assert red == [] and once == [UNLUCKY], (red, once)


def test_the_leaking_setup_at_seed_0_refutes_the_target_and_not_the_certificate():
    """The reviewer's case: the leaking setup (published c = 0.1, white-box, 1,000 runs a side) at seed 0.
    Both audits refute the target; the noise check lies a hair above the certificate (a chance figure
    that decides nothing), and the red box says the certificate is not refuted."""
    at = AppTest.from_file(str(ROOT / "pages" / "audit.py"), default_timeout=240).run()
    at.button(key="au_leak").click().run()
    at.session_state["au_seed"] = 0
    at.button(key="au_run").click().run()
    assert not at.exception
    rec = at.session_state["au_result"]
    assert rec["refuted"] == ["target"] and rec["noise_check"]["exceeds"], (rec["refuted"], rec["noise_check"])
    errors, infos = _verdict_boxes(at)
    assert not infos and len(errors) == 1, (errors, infos)
    box = errors[0]
    assert box.startswith("Two independent audits both show ε ≥ 8.") and "the target ε = 1: the target is not met" \
        in box, box
    assert "The certificate (ε = 9.17) is not refuted" in box and "refuted: target, certified" not in box, box
    assert box.endswith("Verdict: **claim not met** (refuted: target)."), box
    assert len(at.error) == 1  # the noise check above the certificate is not a second red box
    _no_jargon_above_the_fold(at)


def test_the_view_turns_red_for_a_bug_and_says_it_is_one(monkeypatch):
    """Half the noise hidden from the plan: both audits refute the certificate, the box is red, and its
    first sentence says by how much and that it is a bug, not bad luck."""
    import dpcore.mechanisms.gradient as gradient

    real = gradient.gradient_descent
    monkeypatch.setattr(gradient, "gradient_descent",
                        lambda *a, **kw: real(*a, **dict(kw, noise_std=0.5 * kw["noise_std"])))
    at = _view()
    # a seed no other test audits: the server's memo keeps an audit by its settings (pages.cached.shared_audit),
    # and this one, of the broken mechanism, must neither be read from nor be read by another test
    at.session_state["au_seed"] = 4242
    at.button(key="au_run").click().run()
    assert not at.exception
    errors, infos = _verdict_boxes(at)
    assert not infos and len(errors) == 1, (errors, infos)
    box = errors[0]
    assert box.startswith("Two independent audits both show ε ≥ ") and \
        "times what the target and the certificate claim (ε = 2)" in box, box
    assert re.search(r", (1\.[5-9]|2(\.\d)?) times what", box), box  # its size, as a factor of the claim
    assert "this is a bug, not bad luck" in box, box
    assert "Verdict: **claim not met** (refuted: target, certified)." in box, box
    _no_jargon_above_the_fold(at)


def test_a_measured_finding_is_said_in_plain_words_above_the_fold():
    """A finding's measurements in brackets go below the fold; the word that names what broke stays."""
    assert finding_words("the noise is not Gaussian (heavy-tailed: skewness 0.01, excess kurtosis 3 over 2,000 "
                         "coordinates, p = 1e-12), which the certificate assumes") == \
        "the noise is not Gaussian (heavy-tailed), which the certificate assumes"
    assert finding_words("the noise is reused across steps (400 of 400 runs drew one noise vector at two of their "
                         "steps), which the certificate assumes independent") == \
        "the noise is reused across steps, which the certificate assumes independent"


def test_a_measured_bug_confirmed_by_two_audits_is_said_first_and_named():
    """A finding (noise reused across steps) that two audits measured, with an audited ε below the
    certificate: the first sentence says a bug was measured, the finding follows in plain words, and the
    box names the verdict; no estimator's term comes before the fold."""
    from pages.auditview import verdict_text

    finding = ("the noise is reused across steps (400 of 400 runs drew one noise vector at two of their steps), "
               "which the certificate assumes independent")
    rec = {"epsilon_lower_bound": 0.8, "epsilon_target": 1.0, "epsilon_certified": 1.0, "verdict": "claim not met",
           "refuted": ["certified"], "refuted_once": [], "findings": [finding], "trials": 100, "confidence": 0.95,
           "refutation": {"claims": {"certified": {"claim": 1.0, "by": "a measurement", "size": -0.2, "chance": 0.0,
                                                   "bug": True}}},
           "confirmation": {"seed": 2**31, "confirmed": ["certified"]}}
    text = verdict_text(rec)
    assert text.startswith("Two independent audits measured a bug"), text
    assert "A correct implementation never does this: it is a bug, not bad luck." in text, text
    assert "Measured: the noise is reused across steps, which the certificate assumes independent." in text, text
    assert text.endswith("Verdict: **claim not met** (refuted: certified)."), text
    assert not [w for w in JARGON if w in text] and "400 of 400" not in text, text


def test_output_perturbation_is_audited_on_real_records_and_says_what_the_pair_can_show():
    """Output perturbation's white-box audit measures a pair of records (measured_release): the view
    names that pair's own ε (below the certificate: no pair of unit records reaches Δ_T), not 'the
    Gaussian part of the noise' of the plain audit, and the number is the result's ceiling."""
    at = _view()
    at.selectbox(key="au_mechanism").set_value("output-gaussian").run()
    at.session_state["au_seed"] = 5
    at.button(key="au_run").click().run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert "the pair's own ε (what these records can show)" in metrics, metrics
    assert "the attack's own ceiling (ε of the releases it sees)" not in metrics
    below = _words(at, folded=True)
    share = re.search(r"The two records this audit trains on move the release by (0\.\d\d) of the declared "
                      r"sensitivity; that pair's own ε under the noise that ran is", below)
    assert share and 0.3 < float(share.group(1)) < 1.0, below
    assert "Gaussian part of the noise" not in below
    _no_jargon_above_the_fold(at)
