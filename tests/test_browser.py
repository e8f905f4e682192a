"""Every view in a real browser: headless Debian Chromium against the app on 127.0.0.1.

`.ci/run` installs Debian's `chromium` when it is missing; `playwright` (Python) drives
it through ``executable_path`` (no browser download).  Every view is opened three ways: light
and dark colour scheme at 1400 px, and a 390 px phone.  The test fails if a view shows a
Streamlit exception or an error box, or if the layout check (:data:`LAYOUT_CHECK`) finds a
legend over an axis title, a toolbar over a title, a title or formula cut off, text or a
reference line that does not stand out from the background, or a page wider than the
screen.  Screenshots go to ``artifacts/screenshots/`` (git-ignored).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from tiers import WHOLE

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# url path → a text that appears once the view has rendered its main content
VIEWS = {
    "": "A one-minute tour",
    "explore": "ε certified",
    "compare": "Run comparison",
    "figures": "repeats, computed",
    "tune": "ε for this accuracy",
    "local_central": "Run the trade-off",
    "distributed": "max client ε (certified)",
    "theory": "How each bound scales",
    "audit": "Run the audit",
    "datasets": "Use your own data",
    "glossary": "Neighbouring datasets (replace-one)",
    "certify": "Open Compare at",
    "lesson": "1. What ε means",
    "?present=1": "A one-minute tour",
}

#: (viewport width, prefers-color-scheme) of each way a view is opened
MODES = {"light": (1400, "light"), "dark": (1400, "dark"), "phone": (390, "light")}

#: What a reader would trip over, measured in the page: a list of problems (empty: none).
LAYOUT_CHECK = """() => {
  const problems = [];
  const box = (el) => el ? el.getBoundingClientRect() : null;
  const hit = (a, b) => a && b && a.width > 0 && b.width > 0 && a.left < b.right - 1 && b.left < a.right - 1
                        && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  const lum = (rgb) => {
    const m = (rgb || '').match(/[\\d.]+/g);
    if (!m || m.length < 3) return null;
    const c = m.slice(0, 3).map(v => { v = v / 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  const contrast = (a, b) => (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  const app = document.querySelector('[data-testid="stApp"]') || document.body;
  const bg = getComputedStyle(app).backgroundColor, L = lum(bg);
  document.querySelectorAll('.js-plotly-plot').forEach((plot, i) => {
    const legend = box(plot.querySelector('.legend')), xtitle = box(plot.querySelector('.xtitle'));
    const title = box(plot.querySelector('.gtitle')), modebar = box(plot.querySelector('.modebar'));
    if (hit(legend, xtitle)) problems.push(`chart ${i}: the legend covers the x-axis title`);
    if (hit(title, modebar)) problems.push(`chart ${i}: the toolbar covers the title`);
    if (window.innerWidth <= 640 && hit(legend, modebar)) problems.push(`chart ${i}: the toolbar covers the legend`);
    const frame = plot.getBoundingClientRect();
    if (title && title.width > 0 && (title.left < frame.left - 1 || title.right > frame.right + 1))
      problems.push(`chart ${i}: the title is cut off`);
    plot.querySelectorAll('.xtitle, .ytitle, .annotation').forEach(t => {
      const r = t.getBoundingClientRect();
      if (r.width > 0 && (r.left < frame.left - 1 || r.right > frame.right + 1 || r.top < frame.top - 1
                          || r.bottom > frame.bottom + 1))
        problems.push(`chart ${i}: "${(t.textContent || '').slice(0, 30)}" is cut off`);
    });
    plot.querySelectorAll('.xtitle, .ytitle, .gtitle, .xtick text, .ytick text').forEach(t => {
      const l = lum(getComputedStyle(t).fill);
      if (l !== null && L !== null && contrast(l, L) < 3)
        problems.push(`chart ${i}: text ${getComputedStyle(t).fill} on ${bg}`);
    });
    const full = plot._fullLayout || {};
    // a figure of many panels squeezed (six panels of 30 px on a phone), titles or ticks printed over
    // each other, ticks or legend entries off the screen
    Object.keys(full).filter(k => /^xaxis\\d*$/.test(k) && full[k] && full[k]._length !== undefined).forEach(k => {
      if (full[k]._length < 120) problems.push(`chart ${i}: a panel only ${Math.round(full[k]._length)} px wide`);
    });
    const titles = [...plot.querySelectorAll('.annotation, .g-gtitle')].map(a => a.getBoundingClientRect())
                   .filter(r => r.width > 0);
    for (let a = 0; a < titles.length; a++) for (let b = a + 1; b < titles.length; b++)
      if (hit(titles[a], titles[b])) problems.push(`chart ${i}: two titles print over each other`);
    plot.querySelectorAll('.xaxislayer-above, .yaxislayer-above').forEach(layer => {
      const labels = [...layer.querySelectorAll('text')].filter(t => !(t.getAttribute('transform') || '').includes('rotate'))
                     .map(t => t.getBoundingClientRect()).filter(r => r.width > 0);
      for (let a = 0; a < labels.length; a++) for (let b = a + 1; b < labels.length; b++)
        if (hit(labels[a], labels[b])) { problems.push(`chart ${i}: tick labels print over each other`); return; }
    });
    plot.querySelectorAll('.xtick text, .ytick text, .legendtext').forEach(t => {
      const r = t.getBoundingClientRect();
      if (r.width > 0 && (r.right > window.innerWidth + 1 || r.left < -1))
        problems.push(`chart ${i}: "${(t.textContent || '').slice(0, 20)}" lies off the screen`);
    });
    // plotly's own labels of minor ticks ("2 5" between decades); labels we chose (tickmode array) are values
    Object.keys(full).filter(k => /^[xy]axis\\d*$/.test(k) && full[k] && full[k].type === 'log'
                              && full[k].tickmode !== 'array').forEach(k => {
      const id = k.replace('axis', '');
      plot.querySelectorAll(`.${id}tick text`).forEach(t => {
        if (/^[2-9]$/.test((t.textContent || '').trim()))
          problems.push(`chart ${i}: a log axis labels its minor ticks ("${t.textContent}")`);
      });
    });
    plot.querySelectorAll('.shapelayer path').forEach(p => {
      const l = lum(getComputedStyle(p).stroke);
      if (l !== null && L !== null && contrast(l, L) < 1.5)
        problems.push(`chart ${i}: a reference line ${getComputedStyle(p).stroke} vanishes on ${bg}`);
    });
  });
  const main = document.querySelector('[data-testid="stMain"]') || document.documentElement;
  if (main.scrollWidth > main.clientWidth + 1)
    problems.push(`the page is wider than the screen: ${main.scrollWidth} > ${main.clientWidth}`);
  document.querySelectorAll('.katex-display').forEach((k, i) => {
    if (k.scrollWidth > k.clientWidth + 1 && !['auto', 'scroll'].includes(getComputedStyle(k).overflowX))
      problems.push(`formula ${i} is cut off`);
  });
  return {problems: problems, background: bg, luminance: L};
}"""

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (.ci/run installs it)")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: every outside connection or name lookup of a test server's processes (tests/network_observer)
NETWORK_LOG = Path(tempfile.gettempdir()) / f"dpcore-network-{os.getpid()}.log"


def _observed_env(log: Path = NETWORK_LOG) -> dict:
    """The environment of a process whose every outside connection and lookup is refused and
    written to ``log`` (its sitecustomize), the worker processes it starts included."""
    path = os.pathsep.join([str(ROOT / "tests" / "network_observer"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {"PYTHONPATH": path, "DPCORE_NETWORK_LOG": str(log)}


def _outside_by_server() -> list[str]:
    return NETWORK_LOG.read_text().splitlines() if NETWORK_LOG.exists() else []


@contextlib.contextmanager
def _app_server():
    """A freshly started app on a free port, its network observed (:func:`_observed_env`); yields its URL."""
    port = _free_port()
    env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", **_observed_env(),
           # every deprecation shown once in the server's log, where deprecated_calls reads it
           "PYTHONWARNINGS": "default::DeprecationWarning,default::PendingDeprecationWarning,default::FutureWarning"}
    # The server's log goes to a file, never to an unread pipe: once a pipe's 64 KiB buffer is
    # full, every server thread that logs blocks for good (in a full run, the download's handler
    # was one of them: the "download flake").  The file is printed when the server is stopped.
    log = tempfile.NamedTemporaryFile("w+b", prefix="streamlit-", suffix=".log", delete=False)
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("the Streamlit server did not start within 90 s")
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        text = Path(log.name).read_bytes().decode(errors="replace")
        Path(log.name).unlink(missing_ok=True)
        if "Traceback" in text or "Error" in text:  # shown by pytest with the failing test's output
            print(f"--- the app server's log ({len(text)} characters; last 4000) ---\n{text[-4000:]}")
        deprecated = deprecated_calls(text)
        if deprecated:  # a lecturer's terminal full of "will be removed" (issue 68): the views must move on
            pytest.fail("the app called what Streamlit or Plotly deprecate (the server's log):\n"
                        + "\n".join(deprecated[:10]))


#: a deprecation in a server's log: Streamlit's own notice ("… will be removed after 2025-12-31") or a
#: Python warning of the deprecation kinds
_DEPRECATION = re.compile(r"deprecat|will be removed|FutureWarning", re.IGNORECASE)
#: whose deprecations fail the browser tests: the app's libraries for the page (and the app's own code)
_OURS = re.compile(r"streamlit|plotly|app\.py|pages/|dpcore/", re.IGNORECASE)


def deprecated_calls(log: str) -> list[str]:
    """The lines of a server's ``log`` that report a deprecated Streamlit or Plotly call (a Python
    warning's line names its file; the line after it, its source, is kept with it)."""
    lines = log.splitlines()
    found = []
    for i, line in enumerate(lines):
        if _DEPRECATION.search(line) and (_OURS.search(line) or "`" in line):
            found.append(line.strip() + (" | " + lines[i + 1].strip() if i + 1 < len(lines) else ""))
    return found


def test_check_of_the_check_a_deprecation_in_the_servers_log_is_found():
    """Streamlit's notice and a Python warning from Plotly are found; a clean log and another
    library's deprecation (not the app's to mend) are not."""
    streamlit_notice = ("2026-11-28 10:00:01.123 Please replace `use_container_width` with `width`.\n\n"
                        "`use_container_width` will be removed after 2025-12-31.")
    plotly_warning = ("/venv/lib/python3.11/site-packages/plotly/graph_objs/_figure.py:12: DeprecationWarning: "
                      "titlefont is deprecated\n  fig.update_layout(titlefont=dict(size=9))")
    assert deprecated_calls(streamlit_notice) and deprecated_calls(plotly_warning)
    assert not deprecated_calls("  You can now view your Streamlit app in your browser.\n  URL: http://x")
    assert not deprecated_calls("/venv/lib/python3.11/site-packages/dask/config.py:1: FutureWarning: x is "
                                "deprecated\n  import y")


@pytest.fixture(scope="module")
def server():
    with _app_server() as url:
        yield url


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        # Playwright gives every launch a fresh, empty profile (user-data dir).
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("path", list(VIEWS))
def test_view_renders_readably_without_errors(server, browser, path, mode):
    shots = ROOT / "artifacts" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    width, scheme = MODES[mode]
    page = browser.new_page(viewport={"width": width, "height": 1000}, color_scheme=scheme)
    try:
        page.goto(f"{server}/{path}", timeout=90_000)
        page.get_by_text(VIEWS[path]).first.wait_for(timeout=120_000)
        page.wait_for_timeout(1500)  # let late elements (charts, errors) arrive
        name = (path or "start").replace("?", "").replace("=", "-")
        page.screenshot(path=str(shots / f"{name}-{mode}.png"), full_page=True)
        assert page.locator('[data-testid="stException"]').count() == 0
        errors = page.locator('[data-testid="stAlertContentError"]')
        assert errors.count() == 0, errors.first.inner_text()
        found = _settled_layout(page)
        assert (found["luminance"] < 0.2) == (scheme == "dark"), f"the {scheme} theme did not apply: {found}"
        assert not found["problems"], found["problems"]
    finally:
        page.close()


def _settled_layout(page, seconds: float = 15.0) -> dict:
    """:data:`LAYOUT_CHECK` once the page has settled: checked again every half second until it
    finds no problem, for up to ``seconds``; a problem that lasts that long is a real one.  (Plotly
    lays a chart out again when Streamlit sizes its frame: on a loaded machine a check 1.5 s after
    the text arrived once saw Paper figures' panel titles outside a phone's frame mid-resize, in a
    full CI run; 9 of 9 runs alone passed.)"""
    deadline = time.monotonic() + seconds
    found = page.evaluate(LAYOUT_CHECK)
    while found["problems"] and time.monotonic() < deadline:
        page.wait_for_timeout(500)
        found = page.evaluate(LAYOUT_CHECK)
    return found


def test_the_layout_check_catches_what_it_looks_for(browser):
    """A check of the check: a chart with its legend over the x-axis title, a long title, grey
    text and a reference line on a dark page, and a page wider than a phone."""
    import plotly.graph_objects as go
    import plotly.io as pio

    fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[1, 30, 2], name="a series with a long name"))
    fig.add_hline(y=2, line_color="#222222")
    fig.update_layout(title="a title much too long to fit on a phone screen, so it runs off the edge",
                      xaxis_title="ε", yaxis_type="log", showlegend=True, legend=dict(orientation="h", y=-0.12),
                      paper_bgcolor="#171614",
                      font_color="#2a2a2a", width=360, height=300, margin=dict(t=30, b=30))
    fig.add_annotation(text="a note above the chart", xref="paper", yref="paper", x=0, y=1.6, showarrow=False)
    html = pio.to_html(fig, include_plotlyjs=True, full_html=True).replace(
        "<body>", '<body style="background:#171614"><div style="width:2000px">wide</div>', 1)
    page = browser.new_page(viewport={"width": 390, "height": 800})
    try:
        page.set_content(html)
        page.wait_for_selector(".js-plotly-plot .legend")
        problems = " | ".join(_settled_layout(page, seconds=2.0)["problems"])  # lasting problems: still seen
    finally:
        page.close()
    for said in ("the legend covers the x-axis title", "the title is cut off", "text rgb(42, 42, 42)",
                 '"a note above the chart" is cut off',
                 "reference line", "wider than the screen", "labels its minor ticks"):
        assert said in problems, (said, problems)


def test_the_layout_check_catches_squeezed_panels_and_labels_over_each_other(browser):
    """A check of the check for a phone: a figure of six panels at 390 px (each a few dozen px wide,
    their titles over each other), tick labels forced to print over each other, a legend entry off
    the right edge."""
    import plotly.graph_objects as go
    import plotly.io as pio
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=2, cols=3, subplot_titles=[f"a much longer panel title, number {k}" for k in range(6)])
    for k in range(6):
        fig.add_trace(go.Scatter(x=[1e-9, 1e-1], y=[1, 2], name=f"series {k}"), row=k // 3 + 1, col=k % 3 + 1)
    fig.update_xaxes(type="log", dtick=1, tickangle=0, tickformat=".0e")
    fig.update_layout(width=600, height=500, legend=dict(x=1.02))  # wider than the phone: its legend off it
    page = browser.new_page(viewport={"width": 390, "height": 800})
    try:
        page.set_content(pio.to_html(fig, include_plotlyjs=True, full_html=True))
        page.wait_for_selector(".js-plotly-plot .legend")
        problems = " | ".join(_settled_layout(page, seconds=2.0)["problems"])
    finally:
        page.close()
    for said in ("px wide", "two titles print over each other", "tick labels print over each other",
                 "lies off the screen"):
        assert said in problems, (said, problems)


#: the twin's pages: a figure of three data sets' panels (001-fig4) and one of a regression (003-fig1),
#: whose shipped files verify in seconds, and the lesson's first step (the later ones compute on a fresh
#: server: the audit step alone takes a minute and more)
TWIN_FIGURES, TWIN_STEPS = ("001-fig4", "003-fig1"), (1,)


@WHOLE
@pytest.mark.parametrize("size", [(390, 844), (1400, 900)], ids=["phone", "projector"])
def test_every_paper_figure_and_lesson_step_reads_on_a_phone_and_a_projector(server, browser, size, whole):
    """Every shipped paper figure and every lesson step at 390 × 844 and 1400 × 900: no squeezed
    panel (a chart a panel, one a row on a phone), no titles or tick labels over each other, nothing
    off the screen, and the rest of the layout check (the twin: :data:`TWIN_FIGURES` and
    :data:`TWIN_STEPS`).  Screenshots: artifacts/screenshots/paper-*, lesson-*."""
    from dpcore.experiments.presets import shipped_ids

    shots = ROOT / "artifacts" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    width, height = size
    figures = [p for p in shipped_ids() if whole or p in TWIN_FIGURES]
    assert whole or len(figures) == len(TWIN_FIGURES), figures
    pages = [(f"figures?fig_preset={p}", "repeats, computed", f"paper-{p}") for p in figures]
    pages += [(f"lesson?lesson_step={k}", f"{k}. ", f"lesson-{k}") for k in (range(1, 7) if whole else TWIN_STEPS)]
    failed = {}
    page = browser.new_page(viewport={"width": width, "height": height})
    try:
        for path, text, name in pages:
            page.goto(f"{server}/{path}", timeout=90_000)
            page.get_by_text(text).first.wait_for(timeout=180_000)
            page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 1",
                                   timeout=180_000)
            page.wait_for_timeout(1000)
            page.screenshot(path=str(shots / f"{name}-{width}.png"), full_page=True)
            assert page.locator('[data-testid="stException"]').count() == 0, path
            found = _settled_layout(page)["problems"]
            if found:
                failed[path] = found
    finally:
        page.close()
    assert not failed, failed


def test_a_link_to_a_view_works_on_a_freshly_started_server(browser):
    """Before app.py has ever run, Streamlit serves a view's link with its older page mechanism
    (no navigation, helper modules listed as pages); enter_view sends it through app.py to the
    same view, with the link's settings."""
    with _app_server() as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(f"{url}/theory?th_T=500", timeout=90_000)
            page.get_by_text(VIEWS["theory"]).first.wait_for(timeout=120_000)
            page.wait_for_timeout(1500)
            nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
            assert "Start here" in nav and "common" not in nav, nav
            assert page.url.split("?")[0].endswith("/theory")
            assert "th_T=500" in page.url
        finally:
            page.close()


def _seconds_until(page, condition: str, timeout_s: float = 300.0) -> float:
    """Seconds until the JavaScript ``condition`` holds in the page (polled every 50 ms)."""
    t0 = time.perf_counter()
    page.wait_for_function(condition, timeout=timeout_s * 1000, polling=50)
    return time.perf_counter() - t0


@pytest.mark.parametrize("whole", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["quick", "whole"])
def test_time_from_a_change_to_the_first_drawn_curve(server, browser, capsys, whole):
    """What a lecturer waits for, measured on a real server and printed (issue 31's table): no
    time is asserted, only that the curves arrive.  Compare: "All central mechanisms, Adult",
    from the preset's click to its shipped figure, and (``whole``) from Run comparison to the
    first computed curve on screen and to the whole figure.  Explore with the MLP:
    from opening a new ε (warm server, reference already solved) to its first loss curve (drawn
    while it trains) and to the whole answer (the metrics), on Breast Cancer (and, ``whole``,
    Adult).  The default run keeps the quick half (about 10 s): the whole table is a
    measurement (``-m slow``, or ``benchmarks/bench_live.py``)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    figures = {}
    try:
        page.goto(f"{server}/compare", timeout=90_000)
        page.get_by_text(VIEWS["compare"]).first.wait_for(timeout=120_000)
        t0 = time.perf_counter()
        page.get_by_role("button", name="All central mechanisms, Adult").click()
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 2", timeout=120_000)
        figures["Compare, all central mechanisms on Adult: the preset's shipped figure after the click"] = \
            time.perf_counter() - t0
        if whole:
            page.get_by_role("button", name="Run comparison").click()  # computed here, drawn as it comes
            live = "document.body.innerText.includes('configurations done; the rest join the chart')"
            figures["Compare, all central mechanisms on Adult: first computed curve"] = _seconds_until(page, live)
            figures["Compare, all central mechanisms on Adult: whole figure"] = (
                figures["Compare, all central mechanisms on Adult: first computed curve"] + _seconds_until(
                    page, f"!({live}) && document.querySelectorAll('.js-plotly-plot').length >= 2 && "
                          "!document.querySelector('[data-testid=\"stProgress\"]')"))
        for dataset in ("breast-cancer", "adult") if whole else ("breast-cancer",):
            base = f"{server}/explore?ex_dataset={dataset}&ex_model=mlp&ex_mechanism=gradient-dpgd"
            page.goto(base + "&ex_epsilon=1", timeout=90_000)  # solves (or reads) the exact reference
            page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length > 0", timeout=600_000)
            t0 = time.perf_counter()
            page.goto(base + "&ex_epsilon=2", timeout=90_000)
            page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length > 0", timeout=600_000)
            figures[f"Explore, MLP on {dataset}, a new ε: first loss curve (while training)"] = \
                time.perf_counter() - t0
            page.wait_for_function("document.querySelectorAll('[data-testid=\"stMetric\"]').length >= 4",
                                   timeout=600_000)
            figures[f"Explore, MLP on {dataset}, a new ε: whole answer"] = time.perf_counter() - t0
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        page.close()
    with capsys.disabled():
        print()
        for what, sec in figures.items():
            print(f"  {what}: {sec:.1f} s")


def test_every_lesson_step_fits_a_projector_in_presenter_mode(server, browser):
    """Presenter mode at 1400 × 900 (a projector): each of the six lesson steps shows its whole
    chart without scrolling — the plot's box lies inside the window — and is screenshotted
    (artifacts/screenshots/lesson-step-K-present.png)."""
    shots = ROOT / "artifacts" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        for k in range(1, 7):
            page.goto(f"{server}/lesson?present=1&lesson_step={k}", timeout=90_000)
            page.locator("h2", has_text=f"{k}. ").first.wait_for(timeout=120_000)
            chart = page.locator(".js-plotly-plot .main-svg").first
            chart.wait_for(timeout=240_000)
            page.wait_for_timeout(1000)
            page.screenshot(path=str(shots / f"lesson-step-{k}-present.png"))
            box = page.locator(".js-plotly-plot").first.bounding_box()
            assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 900, (k, box)
            assert page.evaluate("window.scrollY") == 0
            assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        page.close()


#: the screen position of the first point of the first trace whose name holds ``needle``, in any chart
_POINT_OF = """(needle) => {
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    const i = (gd.data || []).findIndex(t => (t.name || '').includes(needle));
    if (i < 0) continue;
    gd.scrollIntoView({block: 'center'});
    const t = gd._fullData[i], L = gd._fullLayout;
    const xa = L[(t.xaxis || 'x').replace('x', 'xaxis')], ya = L[(t.yaxis || 'y').replace('y', 'yaxis')];
    const r = gd.querySelector('.main-svg').getBoundingClientRect();
    return {x: r.left + xa._offset + xa.d2p(t.x[0]), y: r.top + ya._offset + ya.d2p(t.y[0])};
  }
  return null;
}"""


def test_compare_shows_what_the_tuning_search_spent_on_hover(server, browser):
    """Compare's first preset, tuned: each tuned curve is drawn again, dashed, at the ε its whole
    search spent; hovering a point of it says so (the screenshot keeps the hover label:
    artifacts/screenshots/compare-epsilon-spent-hover.png)."""
    shots = ROOT / "artifacts" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{server}/compare", timeout=90_000)
        page.get_by_text(VIEWS["compare"]).first.wait_for(timeout=120_000)
        page.get_by_role("button", name="All central mechanisms, Adult").click()
        # drawn once what each search spent is recomputed, after the page (about a minute on a new cache)
        page.wait_for_function("[...document.querySelectorAll('.js-plotly-plot')].some(g => (g.data || [])"
                               ".some(t => (t.name || '').includes('search paid')))", timeout=300_000)
        point = page.evaluate(_POINT_OF, "search paid")
        assert point is not None
        page.wait_for_timeout(300)
        point = page.evaluate(_POINT_OF, "search paid")  # where it is once scrolled into view
        page.mouse.move(point["x"] - 3, point["y"] - 3)
        page.mouse.move(point["x"], point["y"])
        label = page.locator(".hoverlayer .hovertext").first
        label.wait_for(timeout=10_000)
        page.wait_for_timeout(300)
        page.screenshot(path=str(shots / "compare-epsilon-spent-hover.png"))
        text = label.text_content()
        assert "the whole search spent ε" in text and "accuracy = " in text, text  # the axis's words
    finally:
        page.close()


def _download(page, name: str) -> str:
    """Click the download button ``name`` once the view has finished running, and the path of the
    file it gives.  A button drawn by a run that a rerun then replaces can swallow the click (the
    flake of a full run on a loaded machine: 60 s waiting for a download that never started), so
    the click waits for the app to be idle, and a click that starts nothing is made once more on
    the button as drawn then."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout  # the module's optional import

    idle = "!document.querySelector('[data-testid=\"stStatusWidget\"]')"
    enabled = "(n) => [...document.querySelectorAll('button')].some(b => b.innerText.includes(n) && !b.disabled)"
    for attempt in range(2):
        button = page.get_by_role("button", name=name)
        button.wait_for(timeout=120_000)
        page.wait_for_function(idle, timeout=120_000)
        try:  # Streamlit disables every widget while its connection to the server is re-made (a full
            # run on a loaded machine once kept the button disabled past the click's 30 s): wait, else
            # open the page again
            page.wait_for_function(enabled, arg=name, timeout=60_000)
        except PlaywrightTimeout:
            if attempt:
                raise
            page.reload(timeout=90_000)
            continue
        try:
            with page.expect_download(timeout=30_000 if attempt == 0 else 60_000) as got:
                button.click()
            return got.value.path()
        except PlaywrightTimeout:
            if attempt:
                raise
    raise AssertionError("unreachable")


def test_a_plot_downloads_as_a_self_contained_file_written_on_click(server, browser):
    """The plot's HTML download (plotly.js embedded, 4.8 MB) is written when the button is
    clicked, not at every rerun of the view: the click must still give the whole file."""
    import plotly_html

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{server}/explore?ex_dataset=breast-cancer&ex_mechanism=gradient-dpgd", timeout=90_000)
        html = Path(_download(page, "Download plot (HTML)")).read_text()
    finally:
        page.close()
    assert len(html) > 1_000_000  # plotly.js itself is inside: it opens offline
    (fig,) = plotly_html.figures(html)
    assert "Training objective" in plotly_html.title(fig) and fig["data"]


# -- nothing leaves the machine, and no Deploy button (issue 41) ---------------------------------

#: the views the outside-request test opens by their links: the start view and three that draw
#: charts, formulas and icons of their own
OFFLINE_VIEWS = ["", "explore", "lesson", "theory"]
#: what counts as this machine
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}


def _is_local(url: str) -> bool:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.scheme in ("data", "blob", "about") or parts.hostname in LOCAL_HOSTS


def _record_outside_requests(context) -> list[str]:
    """Route every request of ``context``'s pages: one to a host other than this machine is
    recorded and aborted (it never leaves), every other one goes on.  Returns the list the
    outside URLs are added to."""
    outside: list[str] = []

    def handler(route):
        url = route.request.url
        if _is_local(url):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    context.route("**/*", handler)
    return outside


#: what the page itself points outside at: its tab icon's address and every resource it loaded
#: (a second net, for anything the browser fetched around the routing)
_PAGE_ADDRESSES = """() => [...document.querySelectorAll('link[rel~="icon"]')].map(l => l.href)
    .concat(performance.getEntriesByType('resource').map(e => e.name))"""


def _open_recording(browser):
    """A new browser context whose every outside request is recorded (and aborted), and a page in
    it whose WebSockets are recorded too; returns (context, page, outside)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    outside = _record_outside_requests(context)
    page = context.new_page()
    page.on("websocket", lambda ws: None if _is_local(ws.url) else outside.append(ws.url))
    return context, page, outside


def test_no_view_requests_anything_outside_the_machine(server, browser):
    """A class may sit behind a firewall, and a student's visit is nobody else's business: the
    start view and three others, each opened by its link, request nothing from any host but
    this machine — no font server for the tab icon (``:material/lock:`` had the browser fetch it
    from fonts.gstatic.com), fonts, images or scripts."""
    context, page, outside = _open_recording(browser)
    try:
        for path in OFFLINE_VIEWS:
            page.goto(f"{server}/{path}", timeout=90_000)
            page.get_by_text(VIEWS[path]).first.wait_for(timeout=120_000)
            page.wait_for_timeout(2000)  # late requests: the tab icon, fonts, a chart's images
            outside += [u for u in page.evaluate(_PAGE_ADDRESSES) if not _is_local(u)]
            assert page.locator('[data-testid="stException"]').count() == 0, path
    finally:
        context.close()
    assert not outside, sorted(set(outside))
    # and the server: nothing it or a worker process did reached for another machine (its start
    # included: Streamlit's external-IP lookup, which .streamlit/config.toml turns off)
    assert not _outside_by_server(), _outside_by_server()


def test_the_servers_network_observer_catches_an_outside_connection_and_lookup(tmp_path):
    """A check of the check: a process started with the observer's environment that connects to an
    outside address and looks up an outside name is refused twice and both are written down; a
    connection to this machine is neither."""
    code = ("import socket\n"
            "for what in (lambda: socket.create_connection(('192.0.2.1', 80), timeout=0.5),\n"
            "             lambda: socket.getaddrinfo('example.com', 443)):\n"
            "    try: what()\n"
            "    except OSError as exc: print('refused:', exc)\n"
            "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)\n"
            "socket.create_connection(s.getsockname(), timeout=1).close()\n")
    log = tmp_path / "network.log"
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, **_observed_env(log)}, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    new = log.read_text().splitlines()
    assert done.stdout.count("refused: blocked by the test's network observer") == 2, done.stdout
    assert any("192.0.2.1" in line for line in new) and any("lookup example.com" in line for line in new)
    assert not any("127.0.0.1" in line for line in new)


def test_the_outside_request_check_catches_an_outside_request(browser):
    """A check of the check: a page that asks the internet for an image, a style sheet and a tab
    icon is caught three times (and the requests are aborted); a request to this machine is not."""
    local = f"http://127.0.0.1:{_free_port()}/nothing-listens-here.png"
    context, page, outside = _open_recording(browser)
    try:
        page.set_content(f'<html><head><link rel="icon" href="https://fonts.gstatic.com/lock.svg">'
                         f'<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">'
                         f'</head><body><img src="https://example.com/x.png"><img src="{local}"></body></html>')
        page.wait_for_timeout(1000)
        outside += [u for u in page.evaluate(_PAGE_ADDRESSES) if not _is_local(u)]
    finally:
        context.close()
    for url in ("https://example.com/x.png", "https://fonts.googleapis.com/css?family=Roboto",
                "https://fonts.gstatic.com/lock.svg"):
        assert url in outside, (url, outside)
    assert local not in outside


def _toolbar_buttons(page, url: str) -> int:
    """The number of Deploy buttons in the start view's toolbar, once its menu is drawn."""
    page.goto(url, timeout=90_000)
    page.get_by_text(VIEWS[""]).first.wait_for(timeout=120_000)
    page.locator('[data-testid="stToolbar"]').first.wait_for(timeout=60_000)
    page.wait_for_timeout(1500)  # the toolbar's buttons arrive after the host's settings
    return page.locator('[data-testid="stAppDeployButton"]').count() + page.get_by_role(
        "button", name="Deploy", exact=True).count()


def test_no_deploy_button_in_the_toolbar(server, browser, monkeypatch):
    """A teaching app offers no "Deploy" (``.streamlit/config.toml``: ``client.toolbarMode =
    "viewer"``).  The check of the check: the same app with the developer's toolbar
    (``STREAMLIT_CLIENT_TOOLBAR_MODE=developer``, which overrides the file) shows the button."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        assert _toolbar_buttons(page, server) == 0
        monkeypatch.setenv("STREAMLIT_CLIENT_TOOLBAR_MODE", "developer")
        with _app_server() as developer:
            page.goto(developer, timeout=90_000)
            page.locator('[data-testid="stAppDeployButton"]').first.wait_for(timeout=120_000)
            assert _toolbar_buttons(page, developer) >= 1
    finally:
        page.close()


# -- smaller, all seen (issue 41): what a projector and a phone must show whole ------------------

#: the bottom (px from the window's top) of the lesson step's settings line and of its "Try it
#: yourself" link, and the window's scroll: the caption's paragraph (its container's box also
#: holds the paragraph's margin, cancelled by a negative one: 22 px of nothing)
_STEP_ENDS = """() => {
  const caption = [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
                    .find(c => c.innerText.startsWith('Settings:'));
  const link = [...document.querySelectorAll('[data-testid="stMain"] a')]
                 .find(a => a.innerText.includes('Try it yourself'));
  const text = caption && caption.querySelector('p');
  return {caption: text ? text.getBoundingClientRect().bottom : null,
          link: link ? link.getBoundingClientRect().bottom : null, scrollY: window.scrollY};
}"""


def test_every_lesson_step_shows_its_settings_and_link_on_a_projector(server, browser):
    """Presenter mode at 1400 × 900: below each of the six steps' header, words and chart, its
    settings line and its "Try it yourself" link are on the screen too, without scrolling (steps
    3, 5 and 6 had them below the window: the chart's height is now what the words leave)."""
    shots = ROOT / "artifacts" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    ends = {}
    try:
        for k in range(1, 7):
            page.goto(f"{server}/lesson?present=1&lesson_step={k}", timeout=90_000)
            page.locator("h2", has_text=f"{k}. ").first.wait_for(timeout=120_000)
            page.locator(".js-plotly-plot .main-svg").first.wait_for(timeout=240_000)
            page.wait_for_timeout(1000)
            page.screenshot(path=str(shots / f"lesson-step-{k}-present.png"))
            ends[k] = page.evaluate(_STEP_ENDS)
            assert page.locator('[data-testid="stException"]').count() == 0, k
    finally:
        page.close()
    for k, end in ends.items():
        assert end["caption"] is not None and end["link"] is not None, (k, end)
        assert end["scrollY"] == 0 and end["caption"] <= 900 and end["link"] <= 900, (k, end)


#: every tick label and chart title of every chart in the page, and whether it lies inside its
#: chart's svg (Plotly draws a label in the margin; a margin too small cuts it at the svg's edge)
_CUT_CHART_TEXT = """() => {
  const cut = [];
  let labels = 0, titles = 0;
  document.querySelectorAll('.js-plotly-plot').forEach((plot, i) => {
    const svg = plot.querySelector('.main-svg').getBoundingClientRect();
    plot.querySelectorAll('.ytick text, .xtick text, .gtitle').forEach(t => {
      const r = t.getBoundingClientRect();
      if (!r.width) return;
      if (t.classList.contains('gtitle')) titles++; else labels++;
      if (r.left < svg.left - 1 || r.right > svg.right + 1 || r.top < svg.top - 1 || r.bottom > svg.bottom + 1)
        cut.push(`chart ${i}: "${t.textContent}" (${Math.round(r.left)}–${Math.round(r.right)} in ` +
                 `${Math.round(svg.left)}–${Math.round(svg.right)})`);
    });
  });
  return {cut: cut, labels: labels, titles: titles};
}"""


def test_the_offline_lesson_file_cuts_no_title_and_no_tick_label(browser, tmp_path):
    """The lesson file (dpcore.report.lesson_html) in Chromium, at a laptop's and a narrow
    window's width: a chart with a long title (step 6's is 246 characters) and y tick labels
    0.80 … 0.95 in the app's small left margin shows every tick label whole and its title whole,
    as page text that wraps.  The check of the check: the same figure written as the file used to
    (Plotly's title, no automargin) is caught cutting both."""
    import plotly.graph_objects as go
    import plotly.io as pio

    from dpcore.figures.charts import legend_above
    from dpcore.report import LessonStep, lesson_html

    long = ("above the certified curve no attack can go (with the certified guarantee); above the target "
            "curve, none if the target were met. The attack's curve is measured on finitely many runs, so it "
            "may cross a curve by chance; the audited ε allows for that")
    fig = go.Figure([go.Scatter(x=[0.1, 1, 10], y=[0.80, 0.87, 0.95], name="DP-GD"),
                     go.Scatter(x=[0.1, 1, 10], y=[0.82, 0.9, 0.93], name="output (Gaussian)")])
    # Plotly's "none" template: like Streamlit's, the default in the app's process (the file's
    # figures are made there), it leaves the axes' automargin off; Plotly's own turns it on
    fig.update_layout(title=long, xaxis_type="log", yaxis_tickformat=".2f", template="none")
    legend_above(fig)  # margins l = r = b = 10: what the app's figures carry
    lesson = tmp_path / "lesson.html"
    lesson.write_text(lesson_html("A lesson", [LessonStep("What an audit shows", "words", fig, "settings",
                                                          "http://10.0.0.7:8501/lesson?lesson_step=6")]))
    before = tmp_path / "before.html"  # as the file was written before: the figure as it is
    before.write_text(pio.to_html(fig, include_plotlyjs=True, full_html=True, default_width="100%",
                                  default_height="520px"))
    for width in (1400, 700):
        page = browser.new_page(viewport={"width": width, "height": 900})
        try:
            page.goto(lesson.as_uri())
            page.wait_for_selector(".js-plotly-plot .ytick text")
            found = page.evaluate(_CUT_CHART_TEXT)
            assert found["labels"] >= 6 and not found["cut"], (width, found)
            title = page.locator(".chart-title")
            assert title.inner_text() == long
            box = title.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= width and box["height"] > 30, (width, box)  # wraps
            page.screenshot(path=str(ROOT / "artifacts" / "screenshots" / f"lesson-file-{width}.png"), full_page=True)
            page.goto(before.as_uri())
            page.wait_for_selector(".js-plotly-plot .ytick text")
            found = page.evaluate(_CUT_CHART_TEXT)
            assert any('"0.80"' in c for c in found["cut"]) and any(long[:20] in c for c in found["cut"]), found
        finally:
            page.close()


#: the first chart's plot area (px), its legend's height, and the formulas that are wider than
#: their box without scrolling
_PHONE_FIT = """() => {
  const plot = document.querySelector('.js-plotly-plot');
  const drag = plot && plot.querySelector('.nsewdrag');
  const legend = plot && plot.querySelector('.legend');
  return {plot: drag ? drag.getBoundingClientRect().height : null,
          legend: legend ? legend.getBoundingClientRect().height : null,
          cut: [...document.querySelectorAll('.katex-display')].filter(k => k.scrollWidth > k.clientWidth + 1
                 && !['auto', 'scroll'].includes(getComputedStyle(k).overflowX)).length,
          formulas: document.querySelectorAll('.katex-display').length};
}"""


def test_a_phone_shows_compares_plot_under_its_legend_and_explores_formula(server, browser):
    """On a phone (390 × 844): Compare's first preset (its rows are shipped: it draws at once)
    keeps at least 300 px of plot under its ten-entry legend (it kept 150: the legend wraps to a
    line per entry, and the chart is now as tall as its legend needs), and Explore's formula is
    whole or scrolls inside itself, never cut at the screen's edge.  Screenshots:
    artifacts/screenshots/compare-preset-phone.png, compare-preset-wide.png, explore-formula-phone.png."""
    shots = ROOT / "artifacts" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    found = {}
    for name, (width, height) in {"phone": (390, 844), "wide": (1400, 900)}.items():
        page = browser.new_page(viewport={"width": width, "height": height})
        try:
            page.goto(f"{server}/compare", timeout=90_000)
            page.get_by_text(VIEWS["compare"]).first.wait_for(timeout=120_000)
            page.get_by_role("button", name="All central mechanisms, Adult").click()
            page.wait_for_function("document.querySelectorAll('.js-plotly-plot .nsewdrag').length >= 2",
                                   timeout=120_000)
            page.wait_for_timeout(1000)
            page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
            page.screenshot(path=str(shots / f"compare-preset-{name}.png"))
            found[name] = page.evaluate(_PHONE_FIT)
            assert not _settled_layout(page)["problems"], name
        finally:
            page.close()
    assert found["phone"]["plot"] >= 300, found
    assert found["wide"]["plot"] >= 300, found
    page = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        page.goto(f"{server}/explore", timeout=90_000)
        page.get_by_text(VIEWS["explore"]).first.wait_for(timeout=120_000)
        page.locator(".katex-display").first.wait_for(timeout=60_000)
        page.wait_for_timeout(1000)
        page.screenshot(path=str(shots / "explore-formula-phone.png"))
        formula = page.evaluate(_PHONE_FIT)
    finally:
        page.close()
    assert formula["formulas"] >= 1 and formula["cut"] == 0, formula


#: each view whose result a button computes: the lecturer's small state, the button's text, and a text
#: that appears once the result is drawn
_LINKED_RESULTS = {
    "compare": ("cmp_T=20&cmp_R=1&cmp_eps=0.5,2&cmp_tuned=false", "Run comparison", "optimality gap against ε"),
    "local_central": ("lc_T=20&lc_R=1", "Run the trade-off", "Test accuracy against local ε"),
    "distributed": ("dist_T=10&dist_R=1", "Sweep the skew", "against skew u"),
    "theory": ("th_T=20&th_dataset=breast-cancer", "Measure (runs the implementing mechanisms)",
               "measured (slope"),
    "audit": ("au_T=5&au_trials=100", "Run the audit", "ε audited"),
}

#: every chart's traces (x and y) on the page, in order
_CHART_DATA = """() => [...document.querySelectorAll('.js-plotly-plot')].map(p =>
    JSON.stringify((p.data || []).map(t => [t.name || '', t.x || [], t.y || []])))"""


@pytest.mark.parametrize("view", list(_LINKED_RESULTS))
def test_a_lecturers_link_shows_the_result_in_a_fresh_browser_at_both_sizes(server, browser, view):
    """The lecturer computes a view's result (its button), copies the address; a student opens it in
    a fresh browser context, on a phone and on a projector, and sees the same charts, trace for
    trace, without pressing anything (pages/links.py:linked_result)."""
    state, button, drawn = _LINKED_RESULTS[view]
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{server}/{view}?{state}", timeout=90_000)
        page.get_by_role("button", name=button).first.wait_for(timeout=120_000)
        page.get_by_role("button", name=button).first.click()
        page.get_by_text(drawn).first.wait_for(timeout=240_000)
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 1", timeout=240_000)
        page.wait_for_timeout(2000)
        link, lecturer = page.url, page.evaluate(_CHART_DATA)
    finally:
        context.close()
    assert "_shown=true" in link, link
    for width, height in ((390, 844), (1400, 900)):
        fresh = browser.new_context(viewport={"width": width, "height": height})
        try:
            student = fresh.new_page()
            student.goto(link, timeout=90_000)
            student.get_by_text(drawn).first.wait_for(timeout=240_000)
            student.wait_for_function(f"document.querySelectorAll('.js-plotly-plot .main-svg').length >= {len(lecturer)}",
                                      timeout=240_000)
            student.wait_for_timeout(2000)
            assert student.evaluate(_CHART_DATA) == lecturer, (view, width)
            assert student.locator('[data-testid="stException"]').count() == 0
        finally:
            fresh.close()
