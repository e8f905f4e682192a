"""``dpcore.certify.core`` (issue 46): a DP-SGD run described in another library's terms, certified
under add/remove and replace-one, against second routes: dp-accounting's own accountants, the
μ-GDP closed form written out here, and a check that the hand check catches a wrong answer."""

from __future__ import annotations

import doctest
import importlib
import io
import json
import math
from pathlib import Path
import sys
from contextlib import redirect_stderr, redirect_stdout

import dp_accounting as dpa
import pytest

import dpcore
from dpcore.privacy import accounting as acc
from dpcore.privacy import core as P
from dpcore.certify.params import format_noise
from dpcore.cli.commands import main
from dpcore.exceptions import ParameterError
from fake_opacus import install as install_fake_opacus

cert_mod = importlib.import_module("dpcore.certify")  # the package, whatever dpcore.certify names
cert_core = importlib.import_module("dpcore.certify.core")  # its certify_noise and the routes
NR = dpa.NeighboringRelation

#: (z, q, T, δ): settings quick enough for dp-accounting's own accountant on a fine grid
SETTINGS = [(1.1, 256 / 60_000, 2_000, 1e-5), (0.8, 0.01, 500, 1e-6), (2.0, 0.05, 200, 1e-5), (5.0, 1e-3, 50, 1e-8)]


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["certify", *argv])
    return code, out.getvalue(), err.getvalue()


def test_the_docstrings_run():
    assert doctest.testmod(cert_core).failed == 0
    assert cert_core.__doc__.count(">>>") >= 3  # the three-line example of the issue


@pytest.mark.parametrize("z, q, T, delta", SETTINGS)
def test_add_remove_is_dp_accountings_pld_and_at_most_the_rdp_figure(z, q, T, delta):
    c = dpcore.certify_noise(noise_multiplier=z, sample_rate=q, steps=T, delta=delta)
    # second route: dp-accounting's PLDAccountant, add/remove, on a finer grid than ours (1e-4)
    pld = dpa.pld.PLDAccountant(NR.ADD_OR_REMOVE_ONE, value_discretization_interval=1e-4)
    pld.compose(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), T))
    reference = pld.get_epsilon(delta)
    # both are pessimistic (upper bounds) on different grids (ours: the span rule, finer for a small ε):
    # equal within the discretisation error, 1e-2 relative (the grid's rounding, ~1e-3 of ε a step)
    assert c.add_remove == pytest.approx(reference, rel=1e-2, abs=2e-4), (c.add_remove, reference)
    rdp = dpa.rdp.RdpAccountant(neighboring_relation=NR.ADD_OR_REMOVE_ONE)
    rdp.compose(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), T))
    assert c.add_remove <= rdp.get_epsilon(delta) + 1e-9
    assert c.add_remove <= c.rdp + 1e-9


@pytest.mark.parametrize("z, q, T, delta", SETTINGS)
def test_replace_one_is_the_projects_certificate_and_never_below_add_remove(z, q, T, delta):
    c = dpcore.certify_noise(noise_multiplier=z, sample_rate=q, steps=T, delta=delta)
    assert c.replace_one == acc.sampled_gaussian_epsilon(z, q, T, delta)  # bit-identical
    assert c.replace_one == P.certify(P.sampled_gaussian("g", 1.0, z, q, T), delta)
    assert c.replace_one >= c.add_remove
    for point in c.curve:
        assert point["replace-one"] >= point["add-remove"] - 1e-12
    # the curve's replace-one figures come from one PLD built the way the accountant builds it
    here = next(p for p in c.curve if p["delta"] == delta)
    assert here["replace-one"] == pytest.approx(c.replace_one, rel=1e-7)  # the accountant's no-op identity


def _gdp_delta(mu: float, eps: float) -> float:
    """δ(ε) of μ-GDP written out (Dong, Roth & Su 2019, Cor. 2.13): Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)."""
    phi = lambda x: 0.5 * math.erfc(-x / math.sqrt(2))
    return phi(-eps / mu + mu / 2) - math.exp(eps) * phi(-eps / mu - mu / 2)


def _hand_check(eps: float, mu: float, delta: float) -> bool:
    """ε is the GDP ε of μ at δ: δ(ε) at most δ, and δ(ε − 1e-6) above it (the smallest such ε)."""
    return _gdp_delta(mu, eps) <= delta * (1 + 1e-9) and _gdp_delta(mu, eps * (1 - 1e-6)) > delta


@pytest.mark.parametrize("sigma, sens, k, delta", [(2.0, 1.0, 10, 1e-5), (5.0, 0.5, 100, 1e-6), (1.0, 1.0, 1, 1e-3)])
def test_plain_gaussian_composition_by_hand(sigma, sens, k, delta):
    c = dpcore.certify_noise(mechanism="gaussian", sigma=sigma, sensitivity=sens, compositions=k, delta=delta)
    mu = math.sqrt(k) * sens / sigma
    assert _hand_check(c.add_remove, mu, delta)
    assert _hand_check(c.replace_one, 2 * mu, delta)  # replace-one: 2Δ
    # and dp-accounting's PLD of the same composition, within its discretisation
    pld = dpa.pld.PLDAccountant(NR.ADD_OR_REMOVE_ONE, value_discretization_interval=1e-4)
    pld.compose(dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(sigma / sens), k))
    assert c.add_remove == pytest.approx(pld.get_epsilon(delta), rel=1e-3)
    assert c.add_remove <= c.rdp


def test_the_hand_check_catches_a_wrong_answer():
    mu, delta = math.sqrt(10) / 2.0, 1e-5
    right = dpcore.certify_noise(mechanism="gaussian", sigma=2.0, compositions=10, delta=delta).add_remove
    assert _hand_check(right, mu, delta)
    assert not _hand_check(right * 0.99, mu, delta)  # too small: δ(ε) > δ
    assert not _hand_check(right * 1.01, mu, delta)  # not the smallest
    assert not _hand_check(right, 10 / 2.0, delta)  # a wrong μ (k·Δ/σ, not √k·Δ/σ)
    assert abs(_gdp_delta(1.0, 0.0) - (2 * 0.5 * math.erfc(-0.5 / math.sqrt(2)) - 1)) < 1e-15  # δ(0) = 2Φ(μ/2) − 1


def test_laplace_composition_never_exceeds_the_pure_epsilon():
    c = dpcore.certify_noise(mechanism="laplace", sigma=2.0, sensitivity=1.0, compositions=10, delta=1e-5)
    assert c.add_remove <= 5.0 + 1e-12 and c.replace_one <= 10.0 + 1e-12
    assert c.add_remove < c.replace_one
    one = dpcore.certify_noise(mechanism="laplace", sigma=1.0, compositions=1, delta=1e-5)
    assert one.add_remove == pytest.approx(1.0, abs=2e-3)  # one Laplace release: ε = Δ/b, tight


def test_the_inverse_question_meets_the_target_and_no_less_noise_does():
    c = dpcore.certify_noise(noise_multiplier=1.0, sample_rate=0.01, steps=1000, delta=1e-5, target_epsilon=1.5)
    z_ar, z_rp = c.inverse["add-remove"], c.inverse["replace-one"]
    assert z_ar < z_rp
    assert cert_mod.dpsgd_profile(z_ar, 0.01, 1000, "add-remove")(1e-5) <= 1.5
    assert cert_mod.dpsgd_profile(z_ar * 0.999, 0.01, 1000, "add-remove")(1e-5) > 1.5
    assert acc.sampled_gaussian_epsilon(z_rp, 0.01, 1000, 1e-5) <= 1.5
    assert acc.sampled_gaussian_epsilon(z_rp * 0.999, 0.01, 1000, 1e-5) > 1.5
    g = dpcore.certify_noise(mechanism="gaussian", compositions=4, target_epsilon=1.0, delta=1e-5)
    sigma = g.inverse["add-remove"]
    assert acc.gaussian_epsilon(1.0, sigma, 4, 1e-5) <= 1.0 < acc.gaussian_epsilon(1.0, sigma * 0.999, 4, 1e-5)
    assert g.inverse["replace-one"] == pytest.approx(2 * sigma, rel=1e-5)


def test_batch_and_epochs_say_the_rate_and_the_steps():
    a = dpcore.certify_noise(noise_multiplier=1.1, batch_size=256, dataset_size=60_000, epochs=2, delta=1e-5)
    b = dpcore.certify_noise(noise_multiplier=1.1, sample_rate=256 / 60_000, steps=math.ceil(2 * 60_000 / 256), delta=1e-5)
    assert a.add_remove == b.add_remove and a.description["steps"] == 469


def test_shuffled_batches_are_certified_without_amplification():
    c = dpcore.certify_noise(noise_multiplier=2.0, sample_rate=0.01, steps=1000, sampling="shuffled", delta=1e-5)
    assert c.add_remove == acc.gaussian_epsilon(1.0, 2.0, 10, 1e-5)  # 10 epochs, one release each
    assert c.replace_one == acc.gaussian_epsilon(2.0, 2.0, 10, 1e-5)
    assert c.library_epsilon == c.rdp < c.add_remove  # the libraries' Poisson figure is no proof here
    assert any("shuffled" in n for n in c.notes)


def test_each_accountant_names_its_method():
    seen = {}
    for name, (label, method, _) in cert_mod.ACCOUNTANTS.items():
        c = dpcore.certify_noise(noise_multiplier=1.0, sample_rate=0.01, steps=300, delta=1e-5, accountant=name)
        assert c.library.startswith(label)
        seen[method] = c.library_epsilon
    assert seen["pld"] < seen["rdp"]
    clt = cert_mod.clt_gdp_epsilon(1.0, 0.01, 300, 1e-5)
    assert seen["clt"] == clt and clt < seen["pld"]  # the CLT undershoots the tight figure here


@pytest.mark.parametrize("kwargs, words", [
    ({"noise_multiplier": 1.0, "sample_rate": 1.5, "steps": 10}, "sample_rate"),
    ({"noise_multiplier": -1.0, "sample_rate": 0.1, "steps": 10}, "noise_multiplier"),
    ({"noise_multiplier": 1.0, "sample_rate": 0.1, "steps": 0}, "steps"),
    ({"noise_multiplier": 1.0, "sample_rate": 0.1, "steps": 10, "accountant": "opacus-xyz"}, "accountant"),
    ({"noise_multiplier": 1.0, "sample_rate": 0.1, "batch_size": 10, "dataset_size": 100, "steps": 10}, "not both"),
    ({"noise_multiplier": 1.0, "batch_size": 200, "dataset_size": 100, "steps": 10}, "> 1"),
    ({"noise_multiplier": 1.0, "sample_rate": 0.1, "steps": 10, "epochs": 1}, "one of them"),
    ({"sample_rate": 0.1, "steps": 10}, "noise multiplier"),
    ({"mechanism": "gaussian", "sigma": 1.0, "steps": 10}, "DP-SGD"),
])
def test_invalid_descriptions_are_refused(kwargs, words):
    with pytest.raises(ParameterError, match=words):
        dpcore.certify_noise(**kwargs)


@pytest.mark.parametrize("argv", [
    ["--noise-multiplier", "1", "--sample-rate", "1.5", "--steps", "10"],
    ["--noise-multiplier=-1", "--sample-rate", "0.1", "--steps", "10"],
    ["--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "0"],
    ["--noise-multiplier", "1", "--sample-rate", "0.1", "--steps", "10", "--accountant", "nope"],
    ["--noise-multiplier", "1", "--sample-rate", "0.1", "--batch-size", "10", "--dataset-size", "100", "--steps", "10"],
    ["--mechanism", "gaussian"],
])
def test_the_command_refuses_in_one_line(argv):
    code, out, err = _cli(*argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err


def test_the_command_prints_both_relations_and_the_full_curve_with_json():
    code, out, err = _cli("--noise-multiplier", "1.1", "--sample-rate", "0.01", "--steps", "500",
                          "--accountant", "tf-privacy-rdp", "--target-epsilon", "2")
    assert code == 0, err
    assert "add/remove" in out and "replace-one" in out and "TF Privacy" in out and "for ε = 2" in out
    code, out, err = _cli("--noise-multiplier", "1.1", "--sample-rate", "0.01", "--steps", "500", "--json")
    doc = json.loads(out)
    assert code == 0 and len(doc["curve"]) >= len(cert_mod.FULL_CURVE_DELTAS)
    assert doc["replace_one"] == acc.sampled_gaussian_epsilon(1.1, 0.01, 500, 1e-5)
    code, out, _ = _cli("--mechanism", "gaussian", "--sigma", "2", "--sensitivity", "1", "--compositions", "10")
    assert code == 0 and "μ = √k·Δ/σ = 1.58114" in out


# ---------------------------------------------------------------------------
# NoisePlan.to_dp_events / from_dp_events


def _plans():
    """(mechanism, plan) for every registered mechanism that declares one (the others: listed)."""
    from dpcore.experiments.run import RunSpec, noise_plan
    from dpcore.mechanisms import REGISTRY

    out, none = [], []
    for mid, cls in REGISTRY.items():
        model = "logreg" if "logreg" in cls.models else cls.models[0]
        data = ({"dataset": "breast-cancer"} if model != "linreg"
                else {"dataset": "synthetic-regression", "n": 600, "d": 5})
        calibration = "certified" if "certified" in cls.calibrations else cls.calibrations[0]
        spec = RunSpec(mechanism=mid, model=model, calibration=calibration, epsilon=1.0, delta=1e-6,
                       iterations=20, repeats=1, lam=3e-3, **data)
        try:
            out.append((mid, noise_plan(spec)))
        except NotImplementedError:
            none.append(mid)
    return out, none


PLANS, NO_PLAN = _plans()
#: mechanisms with no plan to export (noise_plan is not implemented for them)
EXPECTED_NO_PLAN = {"non-private", "input-dbdp-if", "distributed-wddp", "distributed-avg"}
#: events dp-accounting's accountants cannot compose (this package's own: pure Gamma-norm noise,
#: a published theorem's (ε, δ), a data-dependent choice): the document says so
UNSUPPORTED = {"output-laplace", "objective-chaudhuri", "objective-gaussian", "local-duchi"}


def test_every_plan_is_covered():
    assert set(NO_PLAN) <= EXPECTED_NO_PLAN and len(PLANS) >= 10


@pytest.mark.parametrize("mid, plan", PLANS, ids=[m for m, _ in PLANS])
def test_export_import_keeps_the_certified_epsilon(mid, plan):
    delta = 1e-6
    doc = json.loads(json.dumps(plan.to_dp_events(delta)))  # through JSON text
    assert doc["format"] == P.DP_EVENTS_FORMAT and doc["version"] == P.DP_EVENTS_VERSION
    assert doc["neighbouring"] == "replace-one" and doc["dp_accounting_relation"] == "REPLACE_ONE"
    back = P.NoisePlan.from_dp_events(doc)
    assert back == plan
    assert P.certify(back, delta) == P.certify(plan, delta) == doc["certified"]["epsilon"]
    assert P.event_from_json(doc["event"]) == plan.event()
    assert doc["dp_accounting_supported"] == (mid not in UNSUPPORTED), mid
    if not doc["dp_accounting_supported"]:
        return
    accountant = dpa.pld.PLDAccountant(NR.REPLACE_ONE, value_discretization_interval=1e-4)
    accountant.compose(P.event_from_json(doc["event"]))
    assert accountant.get_epsilon(delta) == pytest.approx(doc["certified"]["epsilon"], rel=1e-3), mid


def test_a_document_of_another_kind_or_version_is_refused():
    doc = P.gaussian("x", 1.0, 2.0).to_dp_events(1e-5)
    with pytest.raises(ValueError, match="version"):
        P.NoisePlan.from_dp_events({**doc, "version": 99})
    with pytest.raises(ValueError, match="not a"):
        P.NoisePlan.from_dp_events({"format": "something else"})


# ---------------------------------------------------------------------------
# the view (pages/certify.py)


def _view():
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(str(Path(__file__).resolve().parent.parent / "pages" / "certify.py"), default_timeout=180)


def _metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


def test_the_view_shows_both_relations_as_the_package_certifies_them():
    from pages.common import fmt_eps

    at = _view().run()
    assert not at.exception
    c = dpcore.certify_noise(noise_multiplier=1.1, sample_rate=0.004, epochs=60.0, delta=1e-5, full_curve=True)
    shown = _metrics(at)
    assert shown["ε add/remove"] == fmt_eps(c.add_remove) and shown["ε replace-one"] == fmt_eps(c.replace_one)
    assert shown["as opacus-rdp reports"] == fmt_eps(c.library_epsilon)
    (chart,) = at.get("plotly_chart")
    spec = json.loads(chart.proto.spec)
    assert [t["name"] for t in spec["data"] if t.get("showlegend") is not False] == ["add/remove", "replace-one"]
    assert len(spec["data"][0]["x"]) == len(c.curve) and spec["layout"]["xaxis"]["type"] == "log"
    (link,) = [md.value for md in at.markdown if "Open Compare" in md.value]
    assert f"cmp_eps={float(f'{c.replace_one:.3g}'):g}" in link and "cmp_delta=1e-05" in link


def test_the_views_link_reproduces_it_and_the_inverse_question():
    at = _view().run()
    at.selectbox(key="cert_mechanism").set_value("gaussian").run()
    at.checkbox(key="cert_ask").check().run()
    assert not at.exception
    link = {k: at.query_params[k] for k in at.query_params}
    assert link["cert_mechanism"] == "gaussian" and link["cert_ask"] == "true"
    again = _view()
    again.query_params.update(link)
    again.run()
    assert not again.exception and _metrics(again) == _metrics(at)
    (answer,) = [md.value for md in again.markdown if md.value.startswith("**For ε = 1")]
    g = dpcore.certify_noise(mechanism="gaussian", sigma=2.0, compositions=10, target_epsilon=1.0, delta=1e-5)
    assert f"{format_noise(g.inverse['add-remove'])} under add/remove" in answer


def test_the_compare_link_opens_compare_at_that_epsilon():
    import re
    from urllib.parse import parse_qsl, urlsplit

    from streamlit.testing.v1 import AppTest

    at = _view().run()
    (md,) = [m.value for m in at.markdown if "Open Compare" in m.value]
    parts = urlsplit(re.search(r"\]\(([^)]+)\)", md).group(1))
    assert parts.path == "/compare"
    compare = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "pages" / "compare.py"),
                                default_timeout=180)
    compare.query_params.update(dict(parse_qsl(parts.query)))
    compare.run()
    assert not compare.exception
    params = dict(parse_qsl(parts.query))
    assert compare.session_state["cmp_eps"] == params["cmp_eps"]
    assert compare.session_state["cmp_delta"] == float(params["cmp_delta"])


@pytest.mark.parametrize("key, raw", [("cert_q", "2"), ("cert_z", "-1"), ("cert_delta", "1.5"), ("cert_epochs", "0")])
def test_a_links_value_outside_its_declared_range_is_said_and_the_default_used(key, raw):
    """A link may carry any text: a value the declaration refuses is named in a warning and the
    default used (it once became the widget's minimum without a word: q = 2 certified q = 1e-6)."""
    at = _view()
    at.query_params[key] = raw
    at.run()
    assert not at.exception and not at.error
    assert any(f"The link's {key} = " in w.value and "the default" in w.value for w in at.warning)
    default = _view().run()
    assert _metrics(at) == _metrics(default)


# ---------------------------------------------------------------------------
# the originating library's own figure, when it is installed (benchmarks/.venv-peers has Opacus)


def test_an_installed_opacus_reports_its_own_figure_and_is_named(monkeypatch):
    """With Opacus importable, the library row is what its accountant returns for the run's history
    (a stand-in module records the call); without it, the recomputed figure and why it may differ."""

    seen = {}

    def get_epsilon(history, delta):
        seen["history"], seen["delta"] = history, delta
        return 1.2345

    install_fake_opacus(monkeypatch, get_epsilon)
    c = dpcore.certify_noise(noise_multiplier=1.1, sample_rate=0.004, steps=500, delta=1e-5, accountant="opacus-prv")
    assert c.library_epsilon == 1.2345 and "computed by Opacus 9.9, installed here" in c.library
    assert seen == {"history": [(1.1, 0.004, 500)], "delta": 1e-5}
    # the certified figures never come from the library
    assert c.add_remove != 1.2345 and c.replace_one != 1.2345
    # TF Privacy's figure is dp-accounting's code with its orders: never imported
    c = dpcore.certify_noise(noise_multiplier=1.1, sample_rate=0.004, steps=500, delta=1e-5, accountant="tf-privacy-rdp")
    assert c.library_epsilon == cert_mod.rdp_epsilon(1.1, 0.004, 500, 1e-5, cert_mod.TF_ORDERS)
    monkeypatch.setitem(sys.modules, "opacus", None)  # not installed: import fails
    c = dpcore.certify_noise(noise_multiplier=1.1, sample_rate=0.004, steps=500, delta=1e-5, accountant="opacus-rdp")
    assert c.library_epsilon == cert_mod.rdp_epsilon(1.1, 0.004, 500, 1e-5, cert_mod.OPACUS_ORDERS)
    assert "Opacus is not installed" in c.library


def test_tf_privacy_s_orders_are_its_compute_dp_sgd_privacy_s():
    """TF Privacy 0.9.0's compute_dp_sgd_privacy, written out from its source: 1.25 … 4.5 by
    quarters and halves, 5 … 63, then 128, 256, 512."""
    assert cert_mod.TF_ORDERS == (1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 4.5, *range(5, 64), 128, 256, 512)


def test_the_profile_marks_the_delta_asked_for_and_labels_delta_in_powers_of_ten():
    from dpcore.figures.charts import privacy_profile_figure

    c = dpcore.certify_noise(noise_multiplier=1.1, sample_rate=0.004, steps=2000, delta=3e-6)
    fig = privacy_profile_figure(c.curve, 3e-6)
    marked = [t for t in fig.data if t.showlegend is False]
    assert sorted(t.y[0] for t in marked) == sorted([c.add_remove, c.replace_one])
    assert all(t.x[0] == 3e-6 for t in marked) and fig.layout.shapes[0].x0 == 3e-6
    assert "1e-6" in fig.layout.xaxis.ticktext and not any("µ" in t for t in fig.layout.xaxis.ticktext)
    assert [t.name for t in fig.data if t.showlegend is not False] == ["add/remove", "replace-one"]


@pytest.mark.parametrize("z, q, steps", [(1.1, 0.004, 7500), (1.1, 0.004, 15000), (0.8, 0.01, 1000), (2.0, 0.1, 100)])
def test_the_views_privacy_profile_never_rises_with_delta(z, q, steps):
    """Issue 56: the Certify view's ε(δ) at q = 0.004, σ = 1.1, 7,500 steps read 4.61 at δ = 3.2e-12,
    7.32 at 1e-12 and 4.97 at 3.2e-13 under replace-one. An (ε, δ) guarantee holds at every larger
    δ, so a curve that rises with δ states less than is proven at a smaller δ: both relations'
    columns, over the whole curve the view draws (29 δ's from 0.1 to 1e-15), never rise with δ."""
    from dpcore.certify.core import certify_noise as certify_fn

    curve = certify_fn(noise_multiplier=z, sample_rate=q, steps=steps, delta=1e-5, full_curve=True).curve
    curve = sorted(curve, key=lambda c: c["delta"])  # smallest δ first: ε must not grow from here on
    assert len(curve) >= 29
    for relation in ("add-remove", "replace-one"):
        eps = [c[relation] for c in curve]
        assert all(later <= earlier * (1 + 1e-9) for earlier, later in zip(eps, eps[1:])), (relation, eps)


# ---------------------------------------------------------------------------
# every ε(δ) curve is the running minimum over δ: it never turns back


def _assert_never_turns_back(curve: list[dict], names) -> None:
    """Each figure of ``curve`` is non-increasing in δ: from the largest δ to the smallest it never falls
    (exactly: the running minimum leaves no rounding to forgive)."""
    points = sorted(curve, key=lambda p: -p["delta"])
    for name in names:
        eps = [p[name] for p in points]
        assert all(smaller_delta >= larger_delta for larger_delta, smaller_delta in zip(eps, eps[1:])), (name, eps)


def _at(curve: list[dict], delta: float) -> dict:
    return next(p for p in curve if p["delta"] == delta)


USER_CASES = [(4.0, 1e-3, 10_000), (1e-3, 1e-3, 100)]


@pytest.mark.parametrize("z, q, T", USER_CASES)
def test_the_users_curves_no_longer_turn_back(z, q, T):
    """Found by a user: replace-one at q = 0.001, z = 4, T = 10⁴ gave 0.41153 at δ = 1e-12 and 0.33946 at
    3.16e-13 (the PLD, then the Rényi route below PLD_MIN_DELTA); at z = 1e-3 (T = 100) 2.0e8 at 1e-5 and
    5.2e7 at 1e-13 (the unsampled bound, then the Rényi route).  Both are valid bounds; the curve now shows,
    at each δ, the least of them at that δ or below, says which δ it came from, and never turns back."""
    c = dpcore.certify_noise(noise_multiplier=z, sample_rate=q, steps=T, delta=1e-5, full_curve=True)
    _assert_never_turns_back(c.curve, ("add-remove", "replace-one"))
    below = 10 ** -12.5
    low = _at(c.curve, below)["replace-one"]
    assert "from_delta" not in _at(c.curve, below)  # its own δ's certificate ...
    for d in (1e-12, 1e-5) if z < 0.1 else (1e-12,):  # ... shown at the larger δ's where it is less
        point = _at(c.curve, d)
        assert point["replace-one"] == low and point["from_delta"]["replace-one"] == below
    if z == 4.0:
        assert low == pytest.approx(0.33946, abs=1e-5) and _at(c.curve, 1e-9)["replace-one"] < low
    else:
        assert low == pytest.approx(5.15e7, rel=1e-2) and c.replace_one == pytest.approx(2.0e8, rel=1e-2)
        # the headline stays the certificate at δ itself, and a note says why the curve shows less there
        assert any("running minimum" in n and "3.16e-13" in n for n in c.notes)


def test_the_check_of_the_curve_catches_a_curve_that_turns_back():
    """The raw certificates of the user's first case (the same route, no running minimum) do turn back at
    δ = 1e-12: the assertion above fails on them, and holds on the same figures minimised."""
    profile = cert_mod.dpsgd_profile(4.0, 1e-3, 10_000, cert_mod.REPLACE)
    raw = cert_mod.epsilon_curve(cert_mod.FULL_CURVE_DELTAS, {"replace-one": profile}, running_minimum=False)
    assert _at(raw, 1e-12)["replace-one"] == pytest.approx(0.41153, abs=1e-5)
    assert _at(raw, 10 ** -12.5)["replace-one"] == pytest.approx(0.33946, abs=1e-5)
    with pytest.raises(AssertionError):
        _assert_never_turns_back(raw, ("replace-one",))
    same = {"replace-one": lambda d: _at(raw, d)["replace-one"]}
    _assert_never_turns_back(cert_mod.epsilon_curve([p["delta"] for p in raw], same), ("replace-one",))


def _declared(name: str) -> list:
    """A certify parameter's declared ends (closed ones), its widget's ends and its default
    (:data:`dpcore.certify.core.CERTIFY_PARAMS`, the declarations the command line and the view read)."""
    p = cert_mod.CERTIFY_PARAMS[name]
    iv = p.constraint
    ends = [iv.low if iv.closed in ("both", "left") else None, iv.high if iv.closed in ("both", "right") else None]
    return sorted({v for v in (*ends, p.ui_min, p.ui_max, p.default) if v is not None and iv.contains(v)})


def _generated_grid() -> list[tuple]:
    """(route, z, q, T): every declared value of z, q and T at least once under Poisson sampling (the PLD,
    the unsampled bound at z < PLD_MIN_MULTIPLIER, the closed form at q = 1; every full curve crosses to the
    Rényi route below PLD_MIN_DELTA), and one row each, cycled, for shuffled batches (μ-GDP), plain Gaussian
    and Laplace compositions (σ or b = z, k = T) and an exported plan composing a sampled Gaussian with a
    Gaussian and a randomized response (``certify --plan``).  Each curve holds both relations."""
    zs, qs, ts = _declared("noise_multiplier"), _declared("sample_rate"), _declared("steps")
    rows = [(zs[i % len(zs)], qs[i % len(qs)], ts[i % len(ts)]) for i in range(max(map(len, (zs, qs, ts))))]
    others = [(route, *rows[(k + 1) % len(rows)])
              for k, route in enumerate(("shuffled", "gaussian", "laplace", "plan"))]
    return [("poisson", *row) for row in rows] + others


@pytest.mark.parametrize("route, z, q, T", _generated_grid())
def test_every_curve_over_the_declared_ranges_never_turns_back_nor_exceeds_its_certificates(route, z, q, T,
                                                                                               monkeypatch):
    """Every ε(δ) curve, of every route and both relations, over the full δ list the view draws: non-increasing
    in δ, each point at most the raw certificate at its δ, and a point below it is the raw certificate of the
    smaller δ it names (the raw figures recorded from the very routes the curve evaluated)."""
    import dpcore.certify.plans as plans_mod

    raw: dict = {}
    real = cert_mod.epsilon_curve

    def recorded(deltas, profiles, **kwargs):
        def keep(name, f):
            def at(d):
                raw[name, d] = raw[name, d] if (name, d) in raw else f(d)
                return raw[name, d]
            return at
        return real(deltas, {n: keep(n, f) for n, f in profiles.items()}, **kwargs)

    monkeypatch.setattr(cert_core, "epsilon_curve", recorded)
    monkeypatch.setattr(plans_mod, "epsilon_curve", recorded)
    if route in ("poisson", "shuffled"):
        c = dpcore.certify_noise(noise_multiplier=z, sample_rate=q, steps=T, sampling=route, delta=1e-5,
                                 accountant="jax-privacy", full_curve=True)
        names = ("add-remove", "replace-one")
    elif route in ("gaussian", "laplace"):
        c = dpcore.certify_noise(mechanism=route, sigma=z, compositions=T, delta=1e-5, full_curve=True)
        names = ("add-remove", "replace-one")
    else:
        plan = P.compose([P.sampled_gaussian("steps", 1.0, z, q, T), P.gaussian("a sum", 1.0, 4.0)])
        plan = P.NoisePlan(plan.releases + (P.randomized_response("labels", 2.0),))
        c = cert_mod.certify_plan(plan.to_dp_events(1e-5), full_curve=True)
        names = ("epsilon",)
    assert len(c.curve) >= len(cert_mod.FULL_CURVE_DELTAS)
    _assert_never_turns_back(c.curve, names)
    for point in c.curve:
        for name in names:
            assert point[name] <= raw[name, point["delta"]]
            low = point.get("from_delta", {}).get(name)
            if low is None:
                assert point[name] == raw[name, point["delta"]]
            else:
                assert low < point["delta"] and point[name] == raw[name, low]


@pytest.mark.parametrize("z, q, steps", [(1.0, 0.01, 100), (0.5, 0.1, 10), (4.0, 0.001, 1000)])
def test_the_numpy_epsilon_of_a_pld_is_dp_accountings_own(z, q, steps):
    """certify's ε(δ) of a privacy-loss distribution (dpcore.certify.core.pld_epsilon: numpy, the same sums in
    the same order) against dp-accounting's own Python walk over the losses (0.6–3 s a δ on the 2e6 points
    of z = 0.05, which made the campaign's curve a hang): equal to the last bits of exp, at δ's where ε is
    0, finite and ∞, for both relations' distributions; check of the check: the optimistic distribution of
    the same mechanism, a different one, is told apart."""
    import math

    from dp_accounting.pld import privacy_loss_distribution as pl

    from dpcore.privacy import accounting as acc
    from dpcore.certify.core import _add_remove_pld, pld_epsilon

    plds = [_add_remove_pld(z, q, steps, 1e-3), acc.sampled_gaussian_pld(z, q, 1e-3).self_compose(steps)]
    for pld in plds:
        for delta in (0.5, 1e-2, 1e-5, 1e-10, 1e-12, 0.0):
            own, ours = pld.get_epsilon_for_delta(delta), pld_epsilon(pld, delta)
            assert ours == own or (math.isfinite(own) and abs(ours - own) <= 1e-14 * max(1.0, own)), (delta, own, ours)
    optimistic = pl.from_gaussian_mechanism(z, sampling_prob=q, value_discretization_interval=1e-3,
                                            pessimistic_estimate=False).self_compose(steps)
    assert pld_epsilon(optimistic, 1e-5) < pld_epsilon(plds[0], 1e-5)
    assert pld_epsilon(optimistic, 1e-5) == pytest.approx(optimistic.get_epsilon_for_delta(1e-5), rel=1e-14)
