"""Accessible (issue 68): every view passes axe-core's WCAG 2.0/2.1 A and AA rules with no serious or
critical violation, every chart has a text alternative, and the lesson and Explore work from the
keyboard alone — in a real browser (tests/test_browser.py's server and Chromium).

axe-core is the engine of ``axe-playwright-python`` (requirements-dev.txt pins it; it ships axe's
script, injected into the page).  A violation of a lesser impact (moderate, minor) is printed, not
failed on.  Each view's findings go to ``artifacts/axe/`` (git-ignored) as JSON.
"""

from __future__ import annotations

import json

import pytest
import test_browser
from test_browser import ROOT, VIEWS, browser, server  # noqa: F401  (the module's fixtures: one server, one Chromium)

pytestmark = test_browser.pytestmark

#: the screens every view is checked on (width, height, colour scheme): a laptop or projector and a
#: phone, and the laptop in the dark theme (the page's colours are the theme's: app.py's CSS must hold
#: in both)
SIZES = {"wide": (1400, 900, "light"), "phone": (390, 844, "light"), "dark": (1400, 900, "dark")}
#: the rules run: WCAG 2.0 and 2.1, levels A and AA
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
#: the impacts a test fails on
BLOCKING = ("serious", "critical")

#: the charts in the page (Plotly's, Streamlit's own and the Start view's diagram), those of data
#: (Plotly's and Streamlit's: a table each), the summaries a screen reader reads beside them, and the
#: folded tables of their data
_CHART_TEXT = """() => {
  const main = (sel) => document.querySelectorAll(sel.map(s => '[data-testid="stMain"] ' + s).join(', '));
  return {
    charts: main(['[data-testid="stPlotlyChart"]', '[data-testid="stVegaLiteChart"]', '[data-testid="stGraphVizChart"]']).length,
    plotted: main(['[data-testid="stPlotlyChart"]', '[data-testid="stVegaLiteChart"]']).length,
    summaries: [...main(['.sr-only'])].map(p => p.textContent),
    tables: main(['details.chart-data table']).length,
  };
}"""
#: every Plotly chart in the page drawn
_DRAWN = "[...document.querySelectorAll('[data-testid=\"stPlotlyChart\"]')].every(c => c.querySelector('.main-svg'))"


def axe_violations(page) -> list[dict]:
    """axe-core's violations of :data:`TAGS` in ``page`` as it is now (every impact)."""
    axe = pytest.importorskip("axe_playwright_python.sync_playwright")
    options = {"runOnly": {"type": "tag", "values": TAGS}, "resultTypes": ["violations"]}
    return axe.Axe().run(page, options=options).response["violations"]


def blocking(violations: list[dict]) -> list[dict]:
    return [v for v in violations if v["impact"] in BLOCKING]


def report(violations: list[dict]) -> str:
    """Each violation's rule, impact and what it says, and the selectors of the elements it found."""
    lines = []
    for v in violations:
        lines.append(f"{v['id']} ({v['impact']}): {v['help']} — {len(v['nodes'])} element(s)")
        for node in v["nodes"][:12]:
            why = (node.get("failureSummary") or "").replace("\n", " ")[:200]
            lines.append(f"    {' > '.join(str(t) for t in node['target'])}: {why}")
    return "\n".join(lines)


def _settled(page, text: str) -> None:
    """Wait until the view has drawn ``text`` and its script has finished running (charts, late boxes)."""
    page.get_by_text(text).first.wait_for(timeout=300_000)  # a first opening may compute (Tune: minutes on a new cache)
    page.wait_for_function("!document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=180_000)
    page.wait_for_function(_DRAWN, timeout=60_000)
    page.wait_for_timeout(1500)


def _name(path: str) -> str:
    return (path or "start").replace("?", "").replace("=", "-")


def _checked(page, name: str, presenting: bool = False) -> None:
    """axe-core on ``page`` as it is now (its findings written to artifacts/axe/NAME.json, every
    impact printed) and its charts' text: fails on a serious or critical violation, and on a chart
    without a summary beside it or (but in presenter mode) a chart of data without its table."""
    found = axe_violations(page)
    charts = page.evaluate(_CHART_TEXT)
    for _ in range(40):  # a chart Plotly draws late (a rerun, a resize) is counted once it is there: 20 s at most
        if len(charts["summaries"]) == charts["charts"]:
            break
        page.wait_for_timeout(500)
        charts = page.evaluate(_CHART_TEXT)
    out = ROOT / "artifacts" / "axe"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(
        {"counts": {f"{v['id']} ({v['impact']})": len(v["nodes"]) for v in found},
         "violations": [{"id": v["id"], "impact": v["impact"], "targets": [n["target"] for n in v["nodes"]]}
                        for v in found], "charts": charts}, indent=1, ensure_ascii=False))
    if found:
        print(report(found))
    assert not blocking(found), report(blocking(found))
    assert len(charts["summaries"]) == charts["charts"], charts
    assert all(s.strip() for s in charts["summaries"]), charts
    if charts["plotted"] and not presenting:
        assert charts["tables"] >= 1, charts


#: the screens the default run checks every view on: both sizes of issue 68; the dark theme under ``slow``
#: (tests/tiers.py: each view at each screen is its own contract, none left out by measured cost)
DEFAULT_SIZES = ("wide", "phone")


@pytest.mark.parametrize("size", [pytest.param(s, marks=() if s in DEFAULT_SIZES else pytest.mark.slow) for s in SIZES])
@pytest.mark.parametrize("path", list(VIEWS))
def test_no_serious_accessibility_violation_and_every_chart_described(server, browser, path, size):
    """Every view, opened by its link at each of :data:`SIZES`: no serious or critical axe-core
    violation of WCAG 2.0/2.1 A and AA; every chart drawn has a summary a screen reader reads beside
    it and (but in presenter mode, where a lesson step must fit the screen) its data in a table."""
    width, height, scheme = SIZES[size]
    page = browser.new_page(viewport={"width": width, "height": height}, color_scheme=scheme)
    try:
        page.goto(f"{server}/{path}", timeout=90_000)
        _settled(page, VIEWS[path])
        _checked(page, f"{_name(path)}-{size}", presenting="present=1" in path)
    finally:
        page.close()


@pytest.mark.parametrize("view", list(test_browser._LINKED_RESULTS))
def test_a_computed_result_passes_too(server, browser, view):
    """The views whose result a button computes (test_browser's lecturer's links: small settings),
    once it is drawn, at 1400 × 900: the same checks (their tables, verdicts and charts appear only then)."""
    state, button, drawn = test_browser._LINKED_RESULTS[view]
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.goto(f"{server}/{view}?{state}", timeout=90_000)
        page.get_by_role("button", name=button).first.wait_for(timeout=120_000)
        page.get_by_role("button", name=button).first.click()
        page.get_by_text(drawn).first.wait_for(timeout=240_000)
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 1", timeout=240_000)
        _settled(page, drawn)
        _checked(page, f"{view}-computed")
    finally:
        page.close()


#: a page with one failure axe must find: grey (#bbb) text on white, 1.9:1
_PLANTED = """<!doctype html><html lang="en"><head><title>planted</title></head><body><main>
<h1>A heading</h1><p style="color:{colour};background:#ffffff">Words a reader has to make out.</p>
</main></body></html>"""


def test_the_axe_check_catches_a_planted_contrast_failure_and_passes_a_clean_page(browser):
    """A check of the check: the same small page with its text in #bbb on white is caught
    (color-contrast, serious), and with #333 has no serious or critical violation."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.set_content(_PLANTED.format(colour="#bbbbbb"))
        grey = blocking(axe_violations(page))
        page.set_content(_PLANTED.format(colour="#333333"))
        clean = blocking(axe_violations(page))
    finally:
        page.close()
    assert [v["id"] for v in grey] == ["color-contrast"] and grey[0]["impact"] == "serious", report(grey)
    assert "p" in str(grey[0]["nodes"][0]["target"]), grey[0]["nodes"]
    assert clean == [], report(clean)


# -- the keyboard alone ---------------------------------------------------------------------------

#: the focused element: its text, its role, the label of the widget it belongs to, and whether it is
#: visible on the screen
_FOCUSED = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const widget = el.closest('[data-testid^="st"][data-testid$="Slider"], [data-testid="stSelectbox"], '
                            + '[data-testid="stButton"], [data-testid="stNumberInput"], [data-testid="stRadio"]');
  const label = widget && widget.querySelector('[data-testid="stWidgetLabel"]');
  const r = el.getBoundingClientRect();
  return {text: (el.innerText || el.value || '').trim().slice(0, 80), role: el.getAttribute('role') || el.tagName,
          label: label ? label.innerText.trim() : '', valuetext: el.getAttribute('aria-valuetext') || '',
          seen: r.width > 0 && r.height > 0};
}"""


def _tab_to(page, matches, *, most: int = 80, back: bool = False) -> dict:
    """Press Tab (Shift+Tab: ``back``) until the focused element ``matches``; returns it."""
    for _ in range(most):
        page.keyboard.press("Shift+Tab" if back else "Tab")
        focused = page.evaluate(_FOCUSED)
        if focused and matches(focused):
            assert focused["seen"], f"the focused element is not on the screen: {focused}"
            return focused
    raise AssertionError(f"{most} presses of {'Shift+Tab' if back else 'Tab'} never reached it; last: {focused}")


def _header(page, text: str) -> None:
    page.locator("h2", has_text=text).first.wait_for(timeout=240_000)


def test_the_lessons_steps_with_the_keyboard_alone(server, browser):
    """The lesson from the keyboard alone, no mouse: Tab to "next →" and Enter (step 2), Shift+Tab
    to "← previous" and Space (step 1), Tab to "next →" again and Enter (step 2)."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.goto(f"{server}/lesson", timeout=90_000)
        _header(page, "1. What ε means")
        _settled(page, "1. What ε means")
        is_next = lambda f: f["role"] == "BUTTON" and f["text"] == "next →"  # noqa: E731
        _tab_to(page, is_next)
        page.keyboard.press("Enter")
        _header(page, "2. Noise costs accuracy")
        _settled(page, "2. Noise costs accuracy")
        if not is_next(page.evaluate(_FOCUSED) or {"text": "", "role": ""}):  # the focus stays on the button it pressed
            _tab_to(page, is_next)
        _tab_to(page, lambda f: f["role"] == "BUTTON" and f["text"] == "← previous", back=True)
        page.keyboard.press("Space")
        _header(page, "1. What ε means")
        _settled(page, "1. What ε means")
        _tab_to(page, is_next)
        page.keyboard.press("Enter")
        _header(page, "2. Noise costs accuracy")
        assert "lesson_step=2" in page.url, page.url
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        page.close()


#: the value Explore's "ε target" metric shows
_EPS_TARGET = """() => {
  const m = [...document.querySelectorAll('[data-testid="stMetric"]')].find(m => m.innerText.includes('ε target'));
  const v = m && m.querySelector('[data-testid="stMetricValue"]');
  return v ? v.innerText.trim() : null;
}"""


def test_explore_changes_epsilon_with_the_keyboard_alone(server, browser):
    """Explore from the keyboard alone: Tab to the ε slider, ArrowRight, and the result is computed
    again at the new ε (its "ε target" says so)."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        # a lecturer's small setting (its own T and R: the tuned settings are not applied), so that each new
        # ε or mechanism computes in seconds on a new cache
        page.goto(f"{server}/explore?ex_T=20&ex_R=1", timeout=90_000)
        _settled(page, VIEWS["explore"])
        before = page.evaluate(_EPS_TARGET)
        slider = _tab_to(page, lambda f: f["label"].startswith("ε (privacy budget)") and f["role"] in ("slider", "INPUT"))
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"(before) => {{ const v = ({_EPS_TARGET})(); return v && v !== before; }}", arg=before,
                               timeout=240_000)
        after = page.evaluate(_EPS_TARGET)
        assert after != before, (before, after, slider)
        _settled(page, VIEWS["explore"])
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        page.close()
