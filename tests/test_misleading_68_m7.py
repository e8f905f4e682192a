"""A lecturer's walk (issue 68), M7: the audited ε the default white-box audit shows (0.92) comes from the
measured-shift estimator, which assumes Gaussian noise; the assumption-free attack alone shows ε ≥ 0.
Every place that shows the audited ε says which estimator it rests on, its assumption and what the attack
alone shows, in the words of one function (:func:`dpcore.audit.basis_words`)."""

import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qsl

from streamlit.testing.v1 import AppTest

from dpcore.audit import basis_words

ROOT = Path(__file__).resolve().parent.parent


def _page(name: str, link: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / name), default_timeout=900)
    at.query_params.update(dict(parse_qsl(link)))
    return at.run()


def test_the_audit_view_says_what_its_headline_epsilon_rests_on():
    at = _page("audit.py", "au_T=50&au_trials=500&au_shown=true")
    assert not at.exception
    res = at.session_state["au_result"]
    words = basis_words(res)
    assert words.startswith("ε ≥ 0.92 by the measured-shift estimator, which assumes Gaussian noise (checked: ")
    assert words.endswith("the assumption-free attack alone shows ε ≥ 0 (153 false positives of 250, "
                          "84 false negatives of 250)")
    box = [i.value for i in at.info if "it shows ε ≥ 0.92" in i.value]
    assert box and f"What the number rests on: {words}." in box[0]
    audited = [m for m in at.metric if m.label.startswith("ε audited")]
    assert audited and words in audited[0].help


def test_an_audit_from_the_attack_alone_says_so():
    rec = {"epsilon_lower_bound": 0.5, "epsilon_lower_bound_direct": 0.5, "false_positives": 3, "n_without": 250,
           "false_negatives": 40, "n_with": 250, "estimates": [{"name": "direct", "epsilon": 0.5, "headline": True}]}
    assert basis_words(rec).startswith("ε ≥ 0.5 from the attack alone (its two error rates: 3 false positives")


def test_explore_and_the_command_line_say_what_the_audited_epsilon_rests_on():
    at = _page("explore.py", "ex_dataset=breast-cancer&ex_model=logreg&ex_mechanism=gradient-dpgd&ex_T=20&ex_R=1"
                             "&ex_audited=true")
    assert not at.exception
    assert any(m.label == "ε audited (black-box lower bound)" for m in at.metric)
    said = [c.value for c in at.caption if c.value.startswith("ε ≥ ")]
    assert said and ("assumes" in said[0]), said
    out = subprocess.run([sys.executable, "-m", "dpcore", "audit", "--dataset", "breast-cancer", "--mechanism",
                          "gradient-dpgd", "--iterations", "50", "--trials", "500"],
                         capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "what the audited ε rests on: ε ≥ " in out.stdout
