"""Work that takes time, shown as it goes: a grid's progress bar and a run's, with the time left
(one estimate for both), and a drawing redrawn while the work runs (a run's loss curve so far)."""

from __future__ import annotations

import contextlib
import math
import threading
import time

import streamlit as st
from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

from dpcore.experiments.context import Context
from dpcore.experiments.progress import TimeLeft, duration
from pages.appstate import app_context
from pages.charts import loss_figure


def progress_reporter(bar, clock=time.perf_counter):
    """A ``progress(done, total, label)`` callback for a ``st.progress`` bar: the count, the last
    configuration and, once the work has run 2 s, the time spent and the time left as
    :func:`time_left` measures it (a grid's ``work``, when it tells it, weighs its configurations)."""
    eta = time_left(clock)

    def report(k: int, n: int, label: str, work: tuple[float, float] | None = None) -> None:
        left = eta.update(k, n, work)
        text = f"{k}/{n}: {label}"
        if eta.spent > 2 and 0 < k < n:
            text += f" · {_duration(eta.spent)} so far, {_left_text(left)}"
        bar.progress(k / n, text=text)

    report.takes_work = True  # a grid tells it each configuration's cost (Context.tell)
    return report


def time_left(clock=time.perf_counter):
    """The pages' one estimate of the time left (:class:`dpcore.experiments.progress.TimeLeft`):
    measured on the work under way, in work rather than counts when a grid knows its tasks'
    costs, the start-up left out, and ``None`` until enough is known."""
    return TimeLeft(clock)


def _left_text(left: float | None) -> str:
    """``about 3 min left``, or, before an estimate is known, ``estimating the time left``."""
    return "estimating the time left" if left is None else f"about {_duration(left)} left"


def live_drawer(draw, every: float = 0.5, after: float = 0.0, clock=time.perf_counter):
    """A callback that redraws ``draw(*what, k)`` (the ``k``-th drawing) into one placeholder
    each time it is called with ``what`` (a study's ``partial(rows)``, a run's
    ``on_trace(steps, trace)``), at most once per ``every`` seconds and not before ``after``
    seconds (by default the first at once), so the first results show while the rest
    computes.  ``.clear()`` removes the drawing once the whole result is shown."""
    slot = st.empty()
    state = {"start": clock(), "last": -math.inf, "count": 0}

    def update(*what) -> None:
        now = clock()
        if len(what[0]) == 0 or now - state["start"] < after or now - state["last"] < every:
            return
        state["last"], state["count"] = now, state["count"] + 1
        with slot.container():
            draw(*what, state["count"])

    update.clear = slot.empty
    return update


def _duration(seconds: float) -> str:
    return duration(seconds)


def with_progress(bar) -> Context:
    """The app's context, reporting each finished configuration on a ``st.progress`` bar."""
    return app_context().with_(progress=progress_reporter(bar))


#: a run shows a progress bar once it has taken this long (shorter ones only a spinner)
PROGRESS_AFTER_SECONDS = 2.0


@contextlib.contextmanager
def run_progress(after: float = PROGRESS_AFTER_SECONDS):
    """A ``progress(done, total, label)`` callback that, once the work has lasted ``after``
    seconds, shows a bar with what it is doing and the time left (:func:`time_left`, the
    estimate the grids' bars show); the bar goes when the work ends."""
    slot = st.empty()
    # a count that starts again is a new loop (training after the reference solve), timed from
    # the last report of the loop before (:func:`time_left`)
    eta = time_left(time.perf_counter)
    last = [-math.inf]  # when the bar last changed

    def progress(done: int, total: int, label: str, work: tuple[float, float] | None = None) -> None:
        left = eta.update(done, total, work)
        now = eta.now
        if eta.spent < after or now - last[0] < 0.2 or total <= 0:
            return
        last[0] = now
        frac = min(1.0, done / total)
        what = label[:1].upper() + label[1:]  # "L-BFGS" stays upper case
        slot.progress(frac, text=f"{what}: {done:,} of {total:,} · {_left_text(left)}")

    progress.takes_work = True

    try:
        yield progress
    finally:
        slot.empty()


#: a run draws its loss curve while it trains once it has taken this long, at most every REDRAW s
CURVE_AFTER_SECONDS = 0.5
CURVE_REDRAW_SECONDS = 0.5


@contextlib.contextmanager
def live_curve(iterations: int, after: float = CURVE_AFTER_SECONDS, every: float = CURVE_REDRAW_SECONDS,
               clock=time.perf_counter):
    """An ``on_trace(steps, trace)`` callback (:class:`~dpcore.experiments.context.Context`) that,
    once a run has trained ``after`` seconds, draws its loss curve so far (every repeat) and
    redraws it as it grows, at most every ``every`` seconds; the drawing goes when the run ends
    (the finished curve is then drawn with the rest).  The first useful picture of a long run
    (the MLP on Adult: within a second, not after eight)."""
    def draw(steps, trace, k) -> None:
        fig = loss_figure({"loss_trace": trace.tolist(), "trace_steps": steps.tolist()},
                          title=f"Training objective so far: step {int(steps[-1])} of {iterations}")
        st.plotly_chart(fig, width="stretch", key=f"live_curve_{k}")

    on_trace = live_drawer(draw, every=every, after=after, clock=clock)
    try:
        yield on_trace
    finally:
        on_trace.clear()


class PartsBar:
    """One bar over work made of named parts whose cost is known beforehand (``estimates``, seconds):
    it moves at least every ``every`` seconds while a part runs (a thread of this script run redraws
    it), so a long part never looks hung.  ``part(k)`` when the k-th begins; ``stop()`` at the end.
    The bar stands at the parts done plus the share of the running part's estimate its time has
    used (never past 95 % of it), and says the part, its time so far against its estimate and the
    time left in all."""

    def __init__(self, bar, names: list[str], estimates: list[float], every: float = 1.0,
                 clock=time.perf_counter):
        self.bar, self.names, self.estimates, self.every, self.clock = bar, names, estimates, every, clock
        self.total = max(sum(estimates), 1e-9)
        self.k, self.started = 0, clock()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._beat, daemon=True, name="prepare-progress")
        add_script_run_ctx(self._thread, get_script_run_ctx())

    def start(self) -> "PartsBar":
        self.draw()
        self._thread.start()
        return self

    def part(self, k: int) -> None:
        with self._lock:
            self.k, self.started = k, self.clock()
        self.draw()

    def text(self) -> tuple[float, str]:
        """(the bar's fraction, its text) now."""
        k, est = self.k, self.estimates[self.k]
        spent = self.clock() - self.started
        done = sum(self.estimates[:k]) + min(spent, 0.95 * est)
        left = sum(self.estimates[k + 1:]) + max(est - spent, 0.0)
        against = (f"{_duration(spent)} of about {_duration(est)}" if spent <= est else
                   f"{_duration(spent)}, longer than the {_duration(est)} expected")
        return (min(done / self.total, 1.0),
                f"Part {k + 1} of {len(self.names)}: {self.names[k]} · {against} · about {_duration(left)} left in all")

    def draw(self) -> None:
        with self._lock:
            frac, text = self.text()
            self.bar.progress(frac, text=text)

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            self.draw()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
