"""Shared by the hostile-input tests (test_fuzz, test_fuzz_cli, test_ranges): a time limit that
turns a hang into a failure naming it."""

from __future__ import annotations

import signal
from contextlib import contextmanager


@contextmanager
def time_limit(seconds: float, what: str = "no answer"):
    """Raise ``TimeoutError`` in the main thread after ``seconds`` (SIGALRM)."""
    def _raise(signum, frame):
        raise TimeoutError(f"{what} within {seconds} s (a hang)")

    old = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
