"""A lecturer's walk (issue 68), M8: a non-convex model (the MLP) has no certified exact minimiser, so
every view and the command line call its reference the best loss non-private training found and its gap
L(θ) − L_ref (:func:`dpcore.figures.result.reference_terms`); the convex models keep "exact minimiser" and L*."""

import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qsl

from streamlit.testing.v1 import AppTest

from dpcore.experiments.baselines import Baseline
from dpcore.figures.result import reference_terms
from dpcore.figures.views import compare_figures, loss_figure

ROOT = Path(__file__).resolve().parent.parent
EXPLORE = "ex_dataset=breast-cancer&ex_model={model}&ex_mechanism=gradient-dpsgd&ex_T=5&ex_R=1"


def _explore(model: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "explore.py"), default_timeout=600)
    at.query_params.update(dict(parse_qsl(EXPLORE.format(model=model))))
    return at.run()


def _baseline(model: str) -> Baseline:
    return Baseline(metric="accuracy", value=0.97, lam=1e-3, searched=(1e-3,), guess=0.63, guess_class="1",
                    model=model)


def test_the_words_differ_for_a_non_convex_model():
    assert reference_terms("logreg").gap == "L(θ) − L*"
    assert reference_terms("mlp").gap == "L(θ) − L_ref"
    assert "exact minimiser" in _baseline("logreg").definition()
    mlp = _baseline("mlp").definition()
    assert "the exact minimiser" not in mlp and "a local minimum" in mlp and "not a certified" in mlp
    rows = [{"mechanism": "gradient-dpsgd", "epsilon": e, "gap_mean": 0.1, "model": "mlp"} for e in (0.1, 1.0)]
    assert compare_figures(rows)[1].layout.yaxis.title.text == "L(θ) − L_ref (L_ref of the point's own λ)"
    rows = [{**r, "model": "logreg"} for r in rows]
    assert compare_figures(rows)[1].layout.yaxis.title.text == "L(θ) − L* (L* of the point's own λ)"
    fig = loss_figure({"model": "mlp", "loss_trace": [[0.5], [0.4]], "trace_steps": [0, 1], "loss_star": 0.3,
                       "gap_mean": 0.1, "gap_std": 0.0})
    texts = [a.text for a in fig.layout.annotations]
    assert any(t.startswith("L_ref") for t in texts) and not any(t.startswith("L*") for t in texts)


def test_explore_names_the_mlp_gap_and_reference_as_what_they_are():
    at = _explore("mlp")
    assert not at.exception
    labels = {m.label: m for m in at.metric}
    assert "optimality gap L(θ) − L*" not in labels
    gap = labels["gap to the reference L(θ) − L_ref (the reference's loss)"]
    assert "a local minimum" in gap.help
    accuracy = labels["test accuracy"]
    assert "the exact minimiser" not in accuracy.help and "a local minimum" in accuracy.help
    at = _explore("logreg")
    assert not at.exception
    labels = {m.label: m for m in at.metric}
    assert "optimality gap L(θ) − L*" in labels and "exact minimiser" in labels["test accuracy"].help


def test_the_command_line_names_the_mlp_gap():
    out = subprocess.run([sys.executable, "-m", "dpcore", "run", "--dataset", "breast-cancer", "--model", "mlp",
                          "--mechanism", "gradient-dpsgd", "--iterations", "5", "--repeats", "1"],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "gap to the reference L(θ) − L_ref (the reference's loss)" in out.stdout
    assert "L(θ) − L*" not in out.stdout
