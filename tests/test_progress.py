"""Issue 41 (item 7) and 42: a time promised in the app is measured on the same work, and once
10 % of it is done it is within 2× of the truth.  Planted timelines on a fake clock: a slow
start-up, tasks of very different cost, a run's loop that starts again; and no number
before enough is known.  Each planted case also computes the formula the app used before on
the same timeline and checks that it misses by more than 2× (the check of the check)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dpcore.experiments.context import Context
from dpcore.experiments.progress import TimeLeft
from dpcore.experiments.run import RunSpec
from dpcore.experiments.sweep import Task, run_tasks, task_cost

ROOT = Path(__file__).resolve().parent.parent


class Clock:
    def __init__(self, t: float = 0.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def _off(estimate: float, truth: float) -> float:
    """How many times too long or too short ``estimate`` is."""
    return max(estimate / truth, truth / estimate)


def _old_grid_formula(spent: float, k: int, n: int) -> float:
    """``progress_reporter`` before: the time spent, extrapolated by the count."""
    return spent * (n - k) / k


def _grid_timeline(startup: float, seconds: list[float]) -> list[float]:
    """When each task of a grid run one after another finishes, after ``startup``."""
    out, t = [], startup
    for s in seconds:
        t += s
        out.append(t)
    return out


def test_a_slow_start_is_not_extrapolated_over_the_rest():
    """20 equal tasks of 1 s after a 30 s start-up (workers starting, data loading, a reference
    solve): once 10 % is done, every estimate is within 2× of the time truly left."""
    n = 20
    finished = _grid_timeline(30.0, [1.0] * n)
    end = finished[-1]
    clock = Clock()
    eta = TimeLeft(clock)
    checked, old_off = 0, []
    for k, t in enumerate(finished, start=1):
        clock.t = t
        left = eta.update(k, n)
        if k / n < 0.1:
            assert left is None  # one task done after 30 s says nothing yet of the rest
            continue
        if k == n:
            continue
        truth = end - t
        assert left is not None and _off(left, truth) <= 2.0, (k, left, truth)
        old_off.append(_off(_old_grid_formula(t, k, n), truth))
        checked += 1
    assert checked == 18  # k = 2 … 19
    # the check of the check: the old count-based formula, on the same timeline, is far off
    assert old_off[0] > 10  # at 10 %: 288 s promised for 18 s
    # the same with the tasks' costs known (all equal): the same estimates
    clock, weighed = Clock(), None
    weighed = TimeLeft(clock)
    for k, t in enumerate(finished, start=1):
        clock.t = t
        left = weighed.update(k, n, work=(k * 7.0, n * 7.0))
        if 0.1 <= k / n < 1:
            assert _off(left, end - t) <= 2.0


def test_tasks_of_very_different_cost_are_weighed_by_their_cost():
    """10 tasks of 0.01 s (output perturbation) then 10 of 5 s (a tuned DP-GD), after a 2 s
    start-up, their costs known: within 2× once 10 % of the *work* is done.  Counting tasks
    instead (the old formula, or this estimate without the costs) promises seconds for
    the last 45."""
    seconds = [0.01] * 10 + [5.0] * 10
    cost = [1.0] * 10 + [500.0] * 10  # the work estimate: proportional, in its own units
    n, total = len(seconds), sum(cost)
    finished = _grid_timeline(2.0, seconds)
    end = finished[-1]
    clock = Clock()
    eta, counted = TimeLeft(clock), TimeLeft(clock)
    done, checked = 0.0, 0
    for k, t in enumerate(finished, start=1):
        clock.t = t
        done += cost[k - 1]
        left = eta.update(k, n, work=(done, total))
        by_count = counted.update(k, n)
        if done / total < 0.1 or k == n:
            continue
        truth = end - t
        assert left is not None and _off(left, truth) <= 2.0, (k, left, truth)
        if checked == 0:  # the first task of 5 s has just finished: 45 s left
            assert _off(_old_grid_formula(t, k, n), truth) > 2.0  # 5.8 s promised
            assert _off(by_count, truth) > 2.0  # counts are fooled, whatever the formula
        checked += 1
    assert checked == 9


def _run_timeline():
    """A single run as Explore trains it: 3 s loading the data, the exact reference's L-BFGS
    (900 iterations, a report every 9, 0.1 s each), 10 s calibrating the noise, then 100
    training steps of 0.5 s.  (time, done, total, label, end of this loop) per report."""
    out = []
    for j in range(1, 101):
        out.append((3.0 + 0.9 * j, 9 * j, 900, "exact reference (L-BFGS)", 93.0))
    for s in range(1, 101):
        out.append((103.0 + 0.5 * s, s, 100, "training", 153.0))
    return out


def test_a_run_that_starts_a_new_loop_times_it_from_its_own_start():
    """The reference solve, then training: each loop's estimate is its own, and the start-up
    before each (the data, the noise's calibration) is not extrapolated over it."""
    clock = Clock()
    eta = TimeLeft(clock)
    loop_start, last, old_off = 0.0, (0.0, 0), []
    for t, done, total, label, loop_end in _run_timeline():
        if done < last[1]:
            loop_start = last[0]  # what run_progress did before: the loop began at the last report
        last = (t, done)
        clock.t = t
        left = eta.update(done, total)
        frac = done / total
        if frac < 0.1:
            assert left is None
            continue
        if done == total:
            continue
        truth = loop_end - t
        assert _off(left, truth) <= 2.0, (label, done, left, truth)
        old_off.append((label, _off((t - loop_start) / frac * (1 - frac), truth)))
    # the check of the check: the old formula counted training's 10 s of calibration as
    # training, three times too long at 10 %
    assert max(off for label, off in old_off if label == "training") > 2.0


def test_the_run_bar_shows_the_measured_estimate(monkeypatch):
    """``run_progress`` (Explore's bar) on the same timeline: a new loop is timed from its own
    start, and the words say whether a number is known yet."""
    sys.path.insert(0, str(ROOT))
    from pages import progress

    shown, clock = [], Clock(0.0)

    class Slot:
        def progress(self, frac, text):
            shown.append(text)

        def empty(self):
            pass

    monkeypatch.setattr(progress.st, "empty", Slot)
    monkeypatch.setattr(progress.time, "perf_counter", clock)
    texts = {}
    with progress.run_progress(after=2.0) as tell:
        for t, done, total, label, _ in _run_timeline():
            clock.t = t
            tell(done, total, label)
            texts[(label, done)] = shown[-1] if shown else None
    assert texts[("exact reference (L-BFGS)", 45)] == "Exact reference (L-BFGS): 45 of 900 · estimating the time left"
    assert texts[("exact reference (L-BFGS)", 90)] == "Exact reference (L-BFGS): 90 of 900 · about 81 s left"
    assert texts[("training", 5)] == "Training: 5 of 100 · estimating the time left"
    assert texts[("training", 10)] == "Training: 10 of 100 · about 45 s left"  # before: 135 s


def test_no_number_before_enough_is_known():
    """Before 10 % of the work, or with nothing measured yet, no number: the bar says it is
    estimating; an estimate is never shown when it is not a finite number."""
    sys.path.insert(0, str(ROOT))
    from pages.common import progress_reporter

    class Bar:
        def progress(self, value, text):
            shown.append((value, text))

    shown = []
    clock = Clock(0.0)
    report = progress_reporter(Bar(), clock=clock)
    clock.t = 30.0
    report(1, 20, "a")  # 5 % after a 30 s start-up
    assert shown[-1] == (0.05, "1/20: a · 30 s so far, estimating the time left")
    clock.t = 31.0
    report(2, 20, "b")  # 10 %: measured from the first task on, 18 s, not 279 s
    assert shown[-1] == (0.1, "2/20: b · 31 s so far, about 18 s left")
    # work in units of cost, as a grid tells it: 9 % of the work is not enough
    clock = Clock(0.0)
    eta = TimeLeft(clock)
    clock.t = 50.0
    assert eta.update(1, 2, work=(1.0, 1000.0)) is None  # half the count, 0.1 % of the work
    # nothing measured: no time has passed, or nothing is done, or nothing to do
    frozen = TimeLeft(Clock(5.0))
    assert frozen.update(5, 10) is None
    idle = TimeLeft(clock)
    clock.t = 60.0
    assert idle.update(0, 10) is None and idle.update(3, 0) is None


def test_a_grid_tells_its_costs_to_a_callback_that_takes_them(tmp_path):
    """``run_tasks`` tells ``work=(done, total)`` in the work budget's units (cached tasks cost
    nothing); a plain three-argument callback hears what it always heard."""
    base = RunSpec(dataset="breast-cancer", model="logreg", iterations=10, repeats=1)
    tasks = [Task(RunSpec(**{**base.to_dict(), "mechanism": m, "epsilon": 1.0}))
             for m in ("output-gaussian", "gradient-dpgd")]
    heard, plain = [], []

    def weighed(done, total, label, work=None):
        heard.append((done, total, work))

    weighed.takes_work = True
    ctx = Context(workers=1, results_dir=tmp_path / "results", erm_dir=tmp_path / "erm", progress=weighed)
    run_tasks(tasks[:1], ctx)
    heard.clear()
    run_tasks(tasks, ctx)  # the first from the cache, the second computed
    costs = [task_cost(t.config) for t in tasks]
    assert heard == [(1, 2, (0.0, costs[1])), (2, 2, (costs[1], costs[1]))]
    run_tasks(tasks, ctx.with_(results_dir=None, progress=lambda done, total, label: plain.append(done)))
    assert plain == [1, 2]


def test_the_cost_of_a_task_is_the_work_budget_estimate():
    base = RunSpec(dataset="adult", model="logreg", repeats=5, epsilon=1.0)
    cheap = task_cost(RunSpec(**{**base.to_dict(), "mechanism": "output-laplace"}))
    dear = task_cost(RunSpec(**{**base.to_dict(), "mechanism": "gradient-dpgd", "iterations": 800}))
    assert 0 < cheap and dear > 300 * cheap  # 801 passes a run against 2
    assert task_cost(RunSpec(**{**base.to_dict(), "mechanism": "no-such-mechanism"})) is None


@pytest.mark.parametrize("share", [0.0, 0.1])
def test_an_estimate_is_the_same_whatever_the_unit_of_cost(share):
    """Costs in any unit give the same estimates (only their ratios matter)."""
    seconds = [0.5, 3.0, 0.5, 3.0, 1.0, 2.0]
    finished = _grid_timeline(4.0, seconds)
    got = []
    for scale in (1.0, 1e9):
        clock = Clock()
        eta = TimeLeft(clock, count_share=share)
        done, out = 0.0, []
        for k, t in enumerate(finished, start=1):
            clock.t = t
            done += seconds[k - 1] * scale
            out.append(eta.update(k, len(seconds), work=(done, sum(seconds) * scale)))
        got.append(out)
    assert got[0] == pytest.approx(got[1])


def test_the_command_lines_single_run_speaks_only_after_two_seconds_then_once_a_second():
    """``dpcore run`` hears its run's steps (and a reference solve's iterations): nothing for a
    quick run, then a line at most every second with the time left, and the last step always."""
    import io

    from dpcore.cli import SlowProgress

    now = [0.0]
    out = io.StringIO()
    report = SlowProgress(clock=lambda: now[0], stream=out)
    for step in range(1, 101):  # 0.05 s a step: 5 s in all
        now[0] = step * 0.05
        report(step, 100, "step")
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[40/100] step (2 s so far, ")  # silent for the first two seconds
    assert lines == ["[40/100] step (2 s so far, about 3 s left)", "[60/100] step (3 s so far, about 2 s left)",
                     "[80/100] step (4 s so far, about 1 s left)", "[100/100] step (5 s so far, done)"]
    quick = io.StringIO()
    fast = SlowProgress(clock=lambda: 0.0, stream=quick)
    fast(1, 1, "step")
    assert quick.getvalue() == ""  # a run under two seconds prints nothing


def test_the_work_before_a_runs_first_step_is_never_a_silent_wait():
    """Issue 43: a calibration or an exact solve before the first step has no step count; the
    heartbeat says the work goes on (after the quiet two seconds, every few seconds without a
    step told), and says nothing once steps are told or when the block ends early."""
    import io
    import time

    from dpcore.cli import SlowProgress

    out = io.StringIO()
    report = SlowProgress(stream=out, quiet=0.05)
    with report.heartbeat("calibrating", every=0.1):
        time.sleep(0.6)  # the accountant, with nothing to count
    lines = out.getvalue().splitlines()
    assert len(lines) >= 2 and all(ln.startswith("[working] calibrating (") for ln in lines), lines
    busy = io.StringIO()
    report = SlowProgress(stream=busy, quiet=10.0)
    with report.heartbeat("calibrating", every=0.05):
        time.sleep(0.3)  # under the quiet seconds: a quick run prints nothing
    assert busy.getvalue() == ""


def test_a_bar_over_parts_moves_while_a_part_runs_and_says_its_cost():
    """PartsBar (Prepare for class): during a part with no report of its own the bar still moves
    (its clock, not the work, drives it), never past 95 % of the running part's estimate, and
    says when a part runs longer than expected; its thread redraws it at least every second."""
    import threading

    from pages.progress import PartsBar

    now = [0.0]
    drawn = []

    class Bar:
        def progress(self, frac, text):
            drawn.append((frac, text))

    bar = PartsBar(Bar(), ["a", "b"], [10.0, 30.0], every=0.05, clock=lambda: now[0])
    bar.part(0)
    now[0] = 5.0
    frac, text = bar.text()
    assert frac == pytest.approx(5 / 40) and "Part 1 of 2: a" in text and "about 35 s left in all" in text
    now[0] = 50.0  # far past its estimate: held at 95 % of the part, and said
    frac, text = bar.text()
    assert frac == pytest.approx(9.5 / 40) and "longer than the 10 s expected" in text
    bar.part(1)
    assert bar.text()[0] == pytest.approx(10 / 40)
    before = len(drawn)
    bar.start()
    threading.Event().wait(0.3)
    bar.stop()
    assert len(drawn) - before >= 3  # redrawn by its thread while nothing else reported
