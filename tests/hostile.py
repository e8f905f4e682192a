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


#: numbers inside most declared float ranges that break arithmetic written for ordinary ones
SUBNORMAL = ("5e-324", "1e-310", "-5e-324")
#: numbers beyond any declared range, or at the top of one that is open above
HUGE = ("1e300", "1.7976931348623157e308", str(2**62), str(2**64))


def declared_values(constraint) -> list[tuple[str, str, bool]]:
    """(label, text, inside) for a declared numeric range (:class:`dpcore.params.Interval`): each
    end (just inside an open one), just beyond each end, one value well inside, and the
    :data:`SUBNORMAL` and :data:`HUGE` numbers (inside or not, as the range says)."""
    out: list[tuple[str, object, bool]] = []
    kind, low, high = constraint.kind, constraint.low, constraint.high
    for side, end in (("low", low), ("high", high)):
        if end is None:
            continue
        closed = constraint.closed in (("both", "left") if side == "low" else ("both", "right"))
        if kind is int:
            inside = int(end) if closed else int(end) + (1 if side == "low" else -1)
            outside = inside - 1 if side == "low" else inside + 1
        else:
            step = (1 if side == "high" else -1) * max(abs(end) * 1e-9, 1e-300)
            inside = float(end) if closed else float(end) - step
            outside = float(end) + step if closed else float(end)
        out += [(side, inside, True), (f"beyond {side}", outside, False)]
    if low is not None and high is not None:
        mid = (low * high) ** 0.5 if low > 0 else (low + high) / 2
    else:
        mid = (low or 0) * 2 + 1
    out.append(("inside", int(mid) if kind is int else float(mid), True))
    texts = [(label, repr(v), inside) for label, v, inside in out]
    for text in SUBNORMAL + HUGE:
        value = float(text) if kind is float else int(float(text)) if float(text).is_integer() else None
        inside = value is not None and constraint.contains(value)
        texts.append((text if len(text) < 12 else text[:8] + "…", text, inside))
    return texts
