"""How long work still needs: the one estimate behind every progress bar's "time left".

Work tells its caller how far it is with ``progress(done, total, label)`` (a grid: its
finished configurations; a run: its optimiser's steps, after the exact reference's solver
iterations).  :class:`TimeLeft` turns those reports into an estimate of the time left, and
prints none before it has measured enough:

* **measured, on this work**: the rate is progress made over time taken, from the reports of
  the loop under way; nothing is assumed about the machine.
* **work, not counts**, when the caller knows what each task costs (a grid: the work budget's
  estimate of each configuration, :func:`~dpcore.experiments.sweep.task_cost`): a grid whose
  first tasks take milliseconds (output perturbation) and whose last take seconds (a tuned
  DP-GD at T = 800) is not "half done" after its cheap half.  That estimate leaves out what
  every task costs whatever its size (calibrating and certifying its noise, its metrics:
  about a tenth of a second each on Adult), so a task's share of the progress is
  ``1 − COUNT_SHARE`` its share of the work plus :data:`COUNT_SHARE` its share of the count.
* **the start-up is not extrapolated**: the time before the first tasks finish (worker
  processes starting, data loading, a reference solve, the noise's calibration) is no measure
  of the rest.  The rate is also measured over the latter half of the progress made (from the
  last report at or below half of it, at least :data:`MIN_WINDOW_SECONDS` ago: a bundle's
  configurations finish together), which leaves the start-up out once the work is under way;
  the estimate is the smaller of the two: the whole time counts only when it was no slower.
* **a loop that starts again is new work**: when the total changes or the count goes down
  (training after the reference solve), the estimate counts from the last report of the
  loop before, the new loop's start.
* **no number before enough is known**: before :data:`MIN_FRACTION` of the loop's progress,
  or when the estimate is not a finite number, :meth:`TimeLeft.update` returns ``None`` (a
  view says "estimating the time left").

Pure and deterministic: the clock is injected (``tests/test_progress.py`` plants slow
start-ups, uneven tasks and a restarting loop on a fake one).  It never changes a result.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

__all__ = ["TimeLeft", "MIN_FRACTION", "MIN_WINDOW_SECONDS", "COUNT_SHARE", "duration"]

#: no estimate before this share of the loop's progress
MIN_FRACTION = 0.1
#: a rate is measured over at least this many seconds (reports closer together came at once)
MIN_WINDOW_SECONDS = 0.25
#: the share of a grid's progress counted by configurations rather than by their work estimates
COUNT_SHARE = 0.1


class TimeLeft:
    """Seconds left of work reported as ``update(done, total, work)``; ``None`` until known.

    ``work``: ``(done, total)`` in the caller's units of cost (any positive scale), when it
    knows them; else progress is ``done / total``.  ``clock``: seconds (called once at
    construction and once per :meth:`update`, nowhere else).
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter, *, min_fraction: float = MIN_FRACTION,
                 min_window: float = MIN_WINDOW_SECONDS, count_share: float = COUNT_SHARE):
        self.clock = clock
        self.min_fraction = float(min_fraction)
        self.min_window = float(min_window)
        self.count_share = float(count_share)
        self.started = self.now = float(clock())
        self.left: float | None = None  # the last estimate
        self.fraction = 0.0  # progress of the loop under way, 0 to 1
        self._loop: tuple | None = None  # what identifies the loop under way
        self._reports = [(self.started, 0.0)]  # the loop's start, then (time, fraction) of each report

    @property
    def spent(self) -> float:
        """Seconds from the construction to the last report."""
        return self.now - self.started

    def update(self, done: float, total: float, work: tuple[float, float] | None = None) -> float | None:
        """Hear a report; return the estimate of the seconds left (``None``: not known yet)."""
        now = self.now = float(self.clock())
        f, loop = self._progress(done, total, work)
        if loop != self._loop or f < self._reports[-1][1]:
            if self._loop is not None:  # a new loop, begun when the one before last reported
                self._reports = [(self._reports[-1][0], 0.0)]
            self._loop = loop
        self._reports.append((now, f))
        self.fraction = f
        self.left = self._estimate(now, f)
        return self.left

    def _progress(self, done, total, work) -> tuple[float, tuple]:
        if not _positive(total):
            return 0.0, ("no total",)
        count = float(done) / float(total)
        if work is not None and _positive(work[1]) and _finite(work[0]):
            share = self.count_share
            f = (1.0 - share) * float(work[0]) / float(work[1]) + share * count
            loop: tuple = (float(total), float(work[1]))
        else:
            f, loop = count, (float(total),)
        return (min(1.0, max(0.0, f)) if math.isfinite(f) else 0.0), loop

    def _estimate(self, now: float, f: float) -> float | None:
        if f < self.min_fraction:
            return None
        rest = 1.0 - f
        t0, f0 = self._reports[0]
        candidates = []
        if now > t0 and f > f0:  # the whole loop, its start-up included
            candidates.append(rest * (now - t0) / (f - f0))
        half = f0 + (f - f0) / 2
        for t, g in reversed(self._reports[1:-1]):  # the latter half of the progress, no start-up
            if g <= half and now - t >= self.min_window:
                if f > g:
                    candidates.append(rest * (now - t) / (f - g))
                break
        left = min(candidates, default=math.inf)
        return left if math.isfinite(left) else None


def _finite(x) -> bool:
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _positive(x) -> bool:
    return _finite(x) and float(x) > 0


def duration(seconds: float) -> str:
    """A duration as a view prints it: ``"40 s"`` below 90 seconds, else ``"3 min"``."""
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"
