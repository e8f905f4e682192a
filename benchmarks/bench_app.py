"""App benchmark: Explore latency (computed and cached), the Compare preset, Paper figures
opening each preset from its shipped results, and a load test.

Run: ``python benchmarks/bench_app.py [--skip-compare] [--sessions 10] [--only figures]``
(``--only views --sessions 6``: every view under 6 concurrent sessions, p50/p95 each; ``--only class
[--students 30] [--browsers 6]``: a class after "Prepare for class", p50/p95 per view; ``--only prepare
[--busy]``: "Prepare for class" pressed in Chromium on a new cache folder, timed part by part).  Prints figures;
asserts nothing.  The load test needs Debian ``chromium`` and the ``playwright`` package
(both installed by ``.ci/run`` / requirements-dev); it talks to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def explore_latency() -> None:
    from streamlit.testing.v1 import AppTest

    for mechanism in ("gradient-dpgd", "input-kang"):
        at = AppTest.from_file(str(ROOT / "pages" / "explore.py"), default_timeout=300)
        at.query_params["ex_dataset"] = "adult"
        at.query_params["ex_mechanism"] = mechanism
        at.query_params["ex_T"] = "100"  # the untuned setting this row has always measured
        t = time.perf_counter()
        at.run()
        first = time.perf_counter() - t  # includes loading Adult and its exact ERM
        at.select_slider(key="ex_epsilon").set_value(3.0).run()
        t = time.perf_counter()
        at.select_slider(key="ex_epsilon").set_value(0.5).run()
        computed = time.perf_counter() - t
        t = time.perf_counter()
        at.select_slider(key="ex_epsilon").set_value(3.0).run()
        cached = time.perf_counter() - t
        print(f"Explore on Adult ({mechanism}, T=100, R=5): first view {first:.2f} s (data load + exact ERM), "
              f"new ε computed {computed:.2f} s, cached {cached:.3f} s")


def compare_preset() -> None:
    """The Compare view's "all central mechanisms", run as the view runs it (2 worker
    processes, exact solutions and calibrations kept in a cache folder, as the app's).

    Four figures: fresh worker processes and an empty cache folder (a new machine);
    fresh processes that the page warmed up while it was on screen (``warm_workers``,
    as the view does on every render; the warm-up's own time is printed: the user must
    have looked at the page that long), with the folder the first run filled (the app
    restarted: references and calibrations on disk); the same after the warm-up; and a
    second comparison on the same workers (other repeats).
    """
    import os
    import tempfile

    from joblib.externals.loky import get_reusable_executor

    from dpcore.experiments.context import Context
    from dpcore.experiments.run import RunSpec
    from dpcore.experiments.studies import epsilon_sweep
    from dpcore.mechanisms import REGISTRY
    from dpcore.experiments.sweep import warm_workers

    central = [m for m, c in REGISTRY.items() if c.family in ("output", "objective", "gradient")]
    eps = [0.01, 0.03, 0.1, 0.25, 0.5, 1.0, 3.0, 10.0]
    workers = min(2, os.cpu_count() or 1)
    per_mech: dict[str, float] = {}
    folder = tempfile.mkdtemp(prefix="dpcore-bench-cache-")
    runs = [("cold workers, empty cache folder (a new machine)", 5, False, True),
            ("cold workers, cache folder filled (the app restarted)", 5, False, True),
            ("after the page's warm-up (fresh processes, cache filled)", 5, True, True),
            ("warm workers (second run, other repeats)", 4, False, False)]
    for label, R, warm, fresh in runs:
        base = RunSpec(dataset="adult", repeats=R, iterations=100)
        ctx = Context(workers=workers, erm_dir=folder)
        if fresh:
            get_reusable_executor().shutdown(wait=True)  # the next run starts new processes
        if warm:
            t = time.perf_counter()
            thread = warm_workers(base, ctx)
            if thread is not None:
                thread.join()
            print(f"  page warm-up (in the background while the view is on screen): "
                  f"{time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        rows = epsilon_sweep(base, central, eps, ctx)
        sec = time.perf_counter() - t
        errors = sum("error" in r for r in rows)
        if not per_mech:
            for r in rows:
                per_mech[r["mechanism"]] = per_mech.get(r["mechanism"], 0.0) + r.get("seconds", 0.0)
        print(f"Compare, all {len(central)} central mechanisms × {len(eps)} ε × {R} repeats on Adult, "
              f"{workers} workers, {label}: {sec:.1f} s ({len(rows)} configurations, {errors} refused)")
    print("  compute seconds per mechanism (sum over ε, first run): "
          + ", ".join(f"{m} {s:.1f}" for m, s in sorted(per_mech.items(), key=lambda kv: -kv[1])))


def paper_figures() -> None:
    """Paper figures: open every preset's whole figure from data/results/, cold (the first
    open in this process: the CSVs read and the figure built) and again (from the server's
    st.cache_resource).  Issue #18's goal: under 2 s each."""
    from streamlit.testing.v1 import AppTest

    from dpcore.experiments.presets import PRESETS

    print("Paper figures, each preset opened from its shipped results (goal < 2 s):")
    worst = 0.0
    for preset_id in PRESETS:
        times = []
        for _ in range(2):
            at = AppTest.from_file(str(ROOT / "pages" / "figures.py"), default_timeout=300)
            at.query_params["fig_preset"] = preset_id
            t = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - t)
        shipped = not at.info and not at.exception
        charts = len(at.get("plotly_chart"))
        worst = max(worst, times[0]) if shipped else worst
        print(f"  {preset_id:13s} cold {times[0]:5.2f} s, again {times[1]:5.2f} s  "
              f"{'shipped' if shipped else 'NOT SHIPPED'}, {charts} chart(s)")
    print(f"  slowest cold open: {worst:.2f} s ({'met' if worst < 2 else 'not met'})")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_server() -> tuple[subprocess.Popen, str]:
    """The app on a free local port, once it answers its health check: (process, address)."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port",
                             str(port), "--server.address", "127.0.0.1", "--server.headless", "true"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(180):
        try:
            if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                break
        except OSError:
            time.sleep(0.5)
    return proc, url


async def _sessions(url: str, n: int, rounds: dict[str, list[float]]) -> dict[str, list[float]]:
    """``n`` users, each with a browser of their own (its own cache), open Explore at once, once per
    round, each round with new ε values: the first round on a new server with empty caches, the
    next with the app's scripts in every browser's cache (a student's second visit) and the server's
    data and references warm.  Seconds from the request to the answer on screen, per round."""
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)
        users = [await browser.new_context() for _ in range(n)]

        async def one(k: int, eps_values: list[float]) -> float:
            page = await users[k].new_page()
            t = time.perf_counter()
            await page.goto(f"{url}/explore?ex_epsilon={eps_values[k % len(eps_values)]}", timeout=300_000)
            await page.get_by_text("ε certified").first.wait_for(timeout=300_000)
            elapsed = time.perf_counter() - t
            bad = await page.locator('[data-testid="stException"]').count()
            await page.close()
            if bad:
                raise RuntimeError(f"session {k} shows an exception")
            return elapsed

        out = {}
        for name, eps_values in rounds.items():
            out[name] = list(await asyncio.gather(*(one(k, eps_values) for k in range(n))))
        await browser.close()
        return out


#: ε values of the load test's rounds: the second round's were not asked before, so a warm server
#: computes them (only imports, data, references and workers are warm)
LOAD_ROUNDS = {"cold": [0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.3, 0.5, 2.0, 3.0, 5.0, 7.0],
               "warm": [0.03, 0.07, 0.15, 0.4, 0.7, 1.5, 4.0, 10.0]}  # the slider's other ticks (not 1, the default)


def load_test(n: int) -> dict[str, tuple[float, float]] | None:
    """``n`` sessions at once opening Explore, on a new server with empty browser caches (cold) and
    again with new ε values (warm: see :func:`_sessions`): {round: (p50, p95)} seconds, printed;
    None without Debian chromium."""
    if shutil.which("chromium") is None:
        print("load test skipped: Debian chromium is not installed")
        return None
    proc, url = _start_server()
    out = {}
    try:
        for name, times in asyncio.run(_sessions(url, n, LOAD_ROUNDS)).items():
            out[name] = (statistics.median(times), _p95(times))
            print(f"Load test ({name} server), {n} concurrent sessions opening Explore (breast-cancer) with "
                  f"different ε: p50 {out[name][0]:.2f} s, p95 {out[name][1]:.2f} s, max {max(times):.2f} s, errors 0")
    finally:
        proc.terminate()
    return out


#: every view of the app, by its URL path
VIEWS = ("", "lesson", "explore", "compare", "figures", "tune", "local_central", "distributed", "theory", "audit",
         "datasets", "glossary")

#: the page has content and the script has stopped running (the status widget gone twice, 0.25 s apart)
_SETTLED = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const busy = document.querySelector('[data-testid="stStatusWidget"]');
  const ready = main && main.querySelectorAll('[data-testid="stElementContainer"]').length > 2 && !busy;
  if (!ready) { window.__settled = 0; return false; }
  const now = performance.now();
  if (!window.__settled) { window.__settled = now; return false; }
  return now - window.__settled > 250;
}"""


async def _view_sessions(url: str, n: int, views=VIEWS) -> dict[str, list[float]]:
    """For each view in turn, ``n`` users (each a browser context of its own) open it at once; seconds
    from the request until the view has drawn and its script has stopped (``_SETTLED``)."""
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)
        users = [await browser.new_context() for _ in range(n)]

        async def one(k: int, view: str) -> float:
            page = await users[k].new_page()
            t = time.perf_counter()
            await page.goto(f"{url}/{view}", timeout=300_000)
            await page.wait_for_function(_SETTLED, timeout=300_000, polling=100)
            elapsed = time.perf_counter() - t - 0.25  # the settling wait is not the user's
            bad = await page.locator('[data-testid="stException"]').count()
            await page.close()
            if bad:
                raise RuntimeError(f"session {k} shows an exception on /{view}")
            return elapsed

        out = {}
        for view in views:
            out[view or "start"] = list(await asyncio.gather(*(one(k, view) for k in range(n))))
        await browser.close()
        return out


def _p95(times: list[float]) -> float:
    times = sorted(times)
    return times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]


def views_load_test(n: int) -> None:
    """``n`` sessions at once on every view of one server (the issue's reliability goal: p50/p95
    per view, no session sees another's state): first ``n`` sessions speaking Streamlit's protocol
    (the server's side, :func:`_protocol_sessions`), then ``n`` real browsers, each a separate
    browser context; each twice, the first round on the new server."""
    proc, url = _start_server()
    try:
        print(f"Every view, {n} sessions at once, the server's side (Streamlit's protocol, no browser):")
        for round_name in ("first", "again"):
            for view, samples in asyncio.run(_protocol_sessions(url, n, VIEWS)).items():
                print(f"  {round_name:5s} {view:14s} {_summary(samples)[0]}   "
                      + " ".join(x if isinstance(x, str) else f"{x:.2f}" for x in samples))
        if shutil.which("chromium") is None:
            print("views load test in browsers skipped: Debian chromium is not installed")
            return
        print(f"Every view, {n} concurrent sessions opening it (until drawn and settled):")
        for round_name in ("first", "again"):
            for view, times in asyncio.run(_view_sessions(url, n)).items():
                print(f"  {round_name:5s} {view:14s} p50 {statistics.median(times):6.2f} s   p95 {_p95(times):6.2f} s   "
                      f"max {max(times):6.2f} s")
    finally:
        proc.terminate()


#: what a class opens first, by the lecturer's links (each view's defaults: every student the same
#: settings): the start page, the lesson, one configuration, the Compare and paper-figure presets,
#: and the local-vs-central trade-off
CLASS_VIEWS = ("", "lesson", "explore", "compare", "figures", "local_central")


async def _protocol_session(url: str, view: str, query: str = "") -> float:
    """One session as the browser opens it, without a browser: Streamlit's websocket protocol (a
    ``rerun_script`` BackMsg for the view's page), timed until the server says the script finished.
    Raises if the page shows an exception or the connection drops (a failed sample, never dropped)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    ws = await websocket_connect(HTTPRequest(url.replace("http", "ws", 1) + "/_stcore/stream"),
                                 subprotocols=["streamlit"])
    msg = BackMsg()
    msg.rerun_script.query_string = query
    msg.rerun_script.page_name = view
    t = time.perf_counter()
    await ws.write_message(msg.SerializeToString(), binary=True)
    try:
        while True:
            raw = await ws.read_message()
            if raw is None:
                raise RuntimeError(f"/{view}: the server closed the session")
            fm = ForwardMsg()
            fm.ParseFromString(raw)
            kind = fm.WhichOneof("type")
            if (kind == "delta" and fm.delta.WhichOneof("type") == "new_element"
                    and fm.delta.new_element.WhichOneof("type") == "exception"):
                raise RuntimeError(f"/{view} shows an exception: {fm.delta.new_element.exception.message[:80]}")
            if kind == "script_finished" and fm.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                return time.perf_counter() - t
    finally:
        ws.close()


async def _protocol_sessions(url: str, n: int, views) -> dict[str, list[float | str]]:
    """For each view in turn, ``n`` sessions open it at once: seconds each, or the error's text."""
    out: dict[str, list[float | str]] = {}
    for view in views:
        got = await asyncio.gather(*(_protocol_session(url, view) for _ in range(n)), return_exceptions=True)
        out[view or "start"] = [g if isinstance(g, float) else f"FAILED: {g}" for g in got]
    return out


def _summary(samples: list[float | str]) -> tuple[str, float]:
    """'p50 / p95' of the timed samples and the p95 (∞ when any sample failed)."""
    times = [x for x in samples if isinstance(x, float)]
    failed = len(samples) - len(times)
    if not times:
        return f"all {failed} failed", math.inf
    text = f"{statistics.median(times):.2f} s / {_p95(times):.2f} s" + (f" ({failed} FAILED)" if failed else "")
    return text, (_p95(times) if not failed else math.inf)


def class_load(students: int, browsers: int) -> tuple[dict[str, float], float]:
    """A class on one server after "Prepare for class" (issue 44): a new cache folder, ``python -m
    dpcore prepare`` into it (timed), a new server over that folder, which the lecturer opens once on
    Paper figures (as the app's own Prepare button draws it), then every view of
    :data:`CLASS_VIEWS` opened at once by ``students`` sessions speaking Streamlit's protocol (the
    server's whole work, no browser: a first round on the new server process, then again) and by
    ``browsers`` real browsers.  Prints p50/p95 per view, the verdict p95 ≤ 3 s, every sample and the
    machine's load.  (AppTest on threads is no stand-in for the server here: each instance rescans
    the installed packages' component manifests, 0.23 s, and they swap one global Runtime.)
    Returns each view's p95 (the worse round) and the seconds Prepare took."""
    import os
    import tempfile

    folder = tempfile.mkdtemp(prefix="dpcore-class-")
    os.environ["DPCORE_CACHE_DIR"] = folder  # the prepare command's store and the server's
    load = os.getloadavg()
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dpcore", "prepare"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    prepared = time.perf_counter() - t
    proc, url = _start_server()
    try:
        # the lecturer, before the class, presses "Prepare for class" in the app (or opens Paper figures
        # once): the first figure is drawn in the server's own process, which the command line cannot do
        lecturer = asyncio.run(_protocol_session(url, "figures"))
        rounds = {name: asyncio.run(_protocol_sessions(url, students, CLASS_VIEWS)) for name in ("first", "again")}
        real = None if shutil.which("chromium") is None else asyncio.run(_view_sessions(url, browsers, CLASS_VIEWS))
    finally:
        proc.terminate()
    print(f"A class after Prepare for class (python -m dpcore prepare into a new cache folder: {prepared:.1f} s; "
          f"on the new server, the lecturer opens Paper figures once: {lecturer:.1f} s); "
          f"{os.cpu_count()} cores, load {load[0]:.2f} before, {os.getloadavg()[0]:.2f} after")
    print(f"| view | {students} sessions at once, a new server: p50 / p95 | again | {browsers} real browsers "
          "(after those): p50 / p95 | p95 ≤ 3 s |")
    print("|---|---|---|---|---|")
    for view in CLASS_VIEWS:
        name = view or "start"
        first, p95_first = _summary(rounds["first"][name])
        again, p95_again = _summary(rounds["again"][name])
        shown = "no chromium" if real is None else (f"{statistics.median(real[name]):.2f} s / "
                                                    f"{_p95(real[name]):.2f} s")
        print(f"| {name} | {first} | {again} | {shown} | {'met' if max(p95_first, p95_again) <= 3 else 'NOT met'} |")
    worst = {}
    for view in CLASS_VIEWS:
        name = view or "start"
        worst[name] = max(_summary(rounds["first"][name])[1], _summary(rounds["again"][name])[1])
        for round_name, got in rounds.items():
            print(f"samples {name} ({round_name}): "
                  + " ".join(x if isinstance(x, str) else f"{x:.2f}" for x in got[name]))
        if real is not None:
            print(f"samples {name} (browsers): " + " ".join(f"{x:.2f}" for x in real[name]))
    return worst, prepared


def prepare_in_browser(busy: bool = False) -> float | None:
    """"Prepare for class" as a lecturer presses it (issue 68): a new cache folder, a new server over it,
    the Start view in Chromium at 1400 × 900, the button pressed with the view's defaults (the MLP's
    reference ticked), until the status says "Ready".  ``busy``: another process keeps one core busy the
    whole time.  Prints the wall time, each part as the page reports it, the bar's text sampled every
    second (the longest time it stood still is the figure a lecturer sees as "hung") and the load.
    Returns the wall seconds (``None`` without Debian chromium)."""
    import os
    import re
    import tempfile

    if shutil.which("chromium") is None:
        print("Prepare in a browser skipped: Debian chromium is not installed")
        return None
    from playwright.sync_api import sync_playwright

    os.environ["DPCORE_CACHE_DIR"] = tempfile.mkdtemp(prefix="dpcore-prepare-")  # an empty cache: a new machine
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    load = os.getloadavg()
    proc, url = _start_server()
    samples: list[tuple[float, str]] = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(url, timeout=300_000)
            page.get_by_role("button", name="Prepare for class").wait_for(timeout=300_000)
            t = time.perf_counter()
            page.get_by_role("button", name="Prepare for class").click()
            while True:
                texts = page.locator('[data-testid="stProgress"]').all_inner_texts()
                samples.append((time.perf_counter() - t, texts[0].strip() if texts else ""))
                if page.get_by_text(re.compile(r"^Ready: ")).count():
                    break
                if time.perf_counter() - t > 1800:
                    raise RuntimeError("Prepare for class did not finish in 30 minutes")
                page.wait_for_timeout(1000)
            wall = time.perf_counter() - t
            page.get_by_text(re.compile(r"^Ready: ")).first.click()  # unfold the status: each part's line
            lines = [s for s in page.locator('[data-testid="stExpanderDetails"] p').all_inner_texts()
                     if re.match(r"^\d+/\d+ · ", s)]
            bad = page.locator('[data-testid="stException"]').count()
            browser.close()
    finally:
        proc.terminate()
        if hog is not None:
            hog.terminate()
    if bad:
        raise RuntimeError("the Start view shows an exception after Prepare for class")
    still, last_change, last = 0.0, 0.0, None
    for when, text in samples:
        if text != last:
            still, last_change, last = max(still, when - last_change), when, text
    goal = 90.0 if busy else 30.0  # issue 68: on an idle 2-core machine, and with one core busy
    print(f"Prepare for class in Chromium (Start view, a new cache folder, the MLP's reference ticked"
          f"{', another process keeping one core busy' if busy else ''}): {wall:.1f} s against the goal of "
          f"≤ {goal:.0f} s{'' if busy else ' (on an idle machine)'}: {'met' if wall <= goal else 'NOT met'}; the bar's text stood "
          f"still {still:.1f} s at most; {os.cpu_count()} cores, load {load[0]:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after")
    for line in lines:
        print(f"  {line}")
    print("samples (s: the bar's text): " + " | ".join(f"{w:.0f}: {s[:60]}" for w, s in samples))
    return wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-compare", action="store_true")
    ap.add_argument("--only", default="explore,compare,figures,load", help="comma-separated parts")
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--students", type=int, default=30, help="the class part: sessions on the server's side")
    ap.add_argument("--browsers", type=int, default=6, help="the class part: real browsers")
    ap.add_argument("--busy", action="store_true", help="the prepare part: another process keeps a core busy")
    args = ap.parse_args()
    parts = set(args.only.split(","))
    if "explore" in parts:
        explore_latency()
    if "compare" in parts and not args.skip_compare:
        compare_preset()
    if "figures" in parts:
        paper_figures()
    if "load" in parts:
        load_test(args.sessions)
    if "views" in parts:
        views_load_test(args.sessions)
    if "class" in parts:
        class_load(args.students, args.browsers)
    if "prepare" in parts:
        prepare_in_browser(args.busy)


if __name__ == "__main__":
    main()
