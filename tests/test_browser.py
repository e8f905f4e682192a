"""Every view in a real browser: headless Debian Chromium against the app on 127.0.0.1.

`.ci/run` installs Debian's `chromium` when it is missing; `playwright` (Python) drives
it through ``executable_path`` (no browser download).  The test fails if a view shows a
Streamlit exception or an error box.  Screenshots go to ``artifacts/screenshots/``
(git-ignored).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

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
    "local_central": "Run the trade-off",
    "distributed": "max client ε (certified)",
    "theory": "How each bound scales",
    "audit": "Run the audit",
    "datasets": "Use your own data",
    "glossary": "Neighbouring datasets (replace-one)",
    "lesson": "1. What ε means",
    "?present=1": "A one-minute tour",
}

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (.ci/run installs it)")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
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
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        # Playwright gives every launch a fresh, empty profile (user-data dir).
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.mark.parametrize("path", list(VIEWS))
def test_view_renders_without_errors(server, browser, path):
    shots = ROOT / "artifacts" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{server}/{path}", timeout=90_000)
        page.get_by_text(VIEWS[path]).first.wait_for(timeout=120_000)
        page.wait_for_timeout(1500)  # let late elements (charts, errors) arrive
        name = (path or "start").replace("?", "").replace("=", "-")
        page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
        assert page.locator('[data-testid="stException"]').count() == 0
        errors = page.locator('[data-testid="stAlertContentError"]')
        assert errors.count() == 0, errors.first.inner_text()
    finally:
        page.close()
