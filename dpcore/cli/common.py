"""What the command line's commands share (:mod:`dpcore.cli.commands`): reading a file argument and a
``--csv`` file, checking an output before any work and turning an error while writing it into one
line, the progress lines on standard error, and the text of an ε and of "every setting refused".
"""

from __future__ import annotations

import contextlib
import math
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from .parser import CSV_FLAGS, flag_given
from ..datasets import from_csv
from ..datasets.preprocess import pipeline_note
from ..datasets.upload import MAX_UPLOAD_BYTES
from ..exceptions import DPCoreError
from ..experiments.progress import TimeLeft, duration
from ..jsonutil import TooLarge, dumps, read_regular
from ..privacy.core import dp_events_list

__all__ = ["read_input", "user_data", "flag_given", "print_progress", "QUIET_SECONDS", "SlowProgress",
           "mechanism_list", "all_refused", "write_plans", "eps_text", "check_output", "writing"]


def read_input(flag: str, path: str, limit: int, why: str) -> bytes:
    """The bytes of the file ``flag`` names, at most ``limit`` of them read, the one way every file
    argument is read (:func:`~dpcore.jsonutil.read_regular`: a regular file only, opened without
    blocking and checked on its descriptor, so a FIFO, a device such as ``/dev/zero`` or a folder
    is refused at once, never waited on or read forever): a path that is no path, a file that
    cannot be read, or one larger than ``limit`` (``why`` says what that means) is one line
    (exit 2), before anything is parsed."""
    if not path.strip() or "\x00" in path:
        raise DPCoreError(f"{flag} needs a file path, got {path!r}")
    try:
        raw = read_regular(path, limit)
    except TooLarge:
        raise DPCoreError(f"{flag} {path!r} is larger than {limit / 2**20:.3g} MB: {why}") from None
    except ValueError as exc:  # a folder, a FIFO, a device
        raise DPCoreError(f"{flag} {path!r} cannot be read: {exc}") from None
    except OSError as exc:
        raise DPCoreError(f"{flag} {path!r} cannot be read: {exc.strerror or exc}") from None
    if raw is None:
        raise DPCoreError(f"{flag} {path!r} cannot be read: no such file")
    return raw


def user_data(args):
    """The CSV ``--csv`` names, read as the app's upload reads it (:func:`~dpcore.datasets.from_csv`:
    the same validation and limits, never cached), with ``args.dataset`` set to its id; ``None``
    for a registered ``--dataset`` (where a CSV's flags are refused, never dropped)."""
    path = getattr(args, "csv", None)
    if path is None:
        for flag in CSV_FLAGS:
            if flag_given(args, flag):
                raise DPCoreError(f"{flag} describes a CSV file: add --csv PATH, or drop {flag}")
        return None
    if args.label is None:
        raise DPCoreError("--csv needs --label COLUMN: the column to predict")
    raw = read_input("--csv", path, MAX_UPLOAD_BYTES, "the limit the app's upload has too: take a sample of its rows")
    name = args.name if args.name is not None else Path(path).stem
    if not name.strip():
        raise DPCoreError("--name needs some text")
    ds = from_csv(raw, args.label, args.positive_class, task=args.task or "classification",
                  name=name, id="csv:" + name)
    args.dataset = ds.id
    # what the upload noticed (rows dropped, the encoding it fell back to, Excel's separator line):
    # said on standard error once the command succeeds (`note: …`), as the Datasets view shows it
    args.notes = [n for n in ds.notes if n not in (pipeline_note(True), pipeline_note(False))]
    return ds


def print_progress(done: int, total: int, label: str) -> None:
    print(f"[{done}/{total}] {label}", file=sys.stderr, flush=True)


#: a single run reports its progress on standard error once it has lasted this long
QUIET_SECONDS = 2.0


class SlowProgress:
    """A single run's ``progress(done, total, label)`` on standard error, as the app's bar shows it:
    silent for the first :data:`QUIET_SECONDS` (a quick run prints nothing), then at most one line
    a second with the step it is at and the time left (:class:`~dpcore.experiments.progress.TimeLeft`),
    so a minutes-long reference solve or calibration is never a silent wait."""

    def __init__(self, clock=time.perf_counter, stream=None, quiet: float = QUIET_SECONDS):
        self.clock, self.stream, self.quiet = clock, stream, float(quiet)
        self.started, self.last, self.told = clock(), -math.inf, -math.inf
        self.left = TimeLeft(clock)

    def __call__(self, done: int, total: int, label: str) -> None:
        left = self.left.update(done, total)
        now = self.clock()
        self.told = now
        if now - self.started < self.quiet or (now - self.last < 1.0 and done < total):
            return
        self.last = now
        eta = ("done" if done >= total else "estimating the time left" if left is None
               else f"about {duration(left)} left")
        print(f"[{done}/{total}] {label} ({duration(now - self.started)} so far, {eta})",
              file=self.stream or sys.stderr, flush=True)

    @contextlib.contextmanager
    def heartbeat(self, what: str, every: float = 5.0):
        """While the block runs, a line every ``every`` seconds (after :data:`QUIET_SECONDS`) when no
        step has been told for that long: the work before a run's first step (the noise's
        calibration by the accountant, the exact reference's solve) has no step count, but it is
        never a silent wait (issue 43)."""
        stop = threading.Event()

        def beat():
            while not stop.wait(min(every, 1.0)):
                now = self.clock()
                if now - self.started >= self.quiet and now - max(self.told, self.last) >= every:
                    self.last = now
                    print(f"[working] {what} ({duration(now - self.started)} so far)", file=self.stream or sys.stderr,
                          flush=True)

        thread = threading.Thread(target=beat, name="dpcore-heartbeat", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join()


def mechanism_list(text: str | None) -> list[str] | None:
    """``--mechanisms``: comma-separated ids; ``None`` (the flag left out) for the default.  A list
    that names none (``''``, ``',,'``) is refused, never read as "the default"."""
    if text is None:
        return None
    mechs = [m.strip() for m in text.split(",") if m.strip()]
    if not mechs:
        raise DPCoreError(f"--mechanisms names no mechanism (got {text!r}): give comma-separated ids "
                          "(see `dpcore mechanisms`), or leave the flag out for the default ones")
    return mechs


def all_refused(count: int, noun: str, reasons: Sequence[str]) -> DPCoreError:
    """The one line when every one of ``count`` settings (``noun``: setting, candidate, mechanism)
    was refused: how many, and why (the commonest reason, and how many others there were)."""
    ranked = Counter(reasons).most_common()
    if not ranked:
        return DPCoreError(f"no {noun} to run")
    why = ranked[0][0]
    others = f" (and {len(ranked) - 1} other reason{'s' if len(ranked) > 2 else ''})" if len(ranked) > 1 else ""
    if count == 1:
        return DPCoreError(f"the one {noun} was refused: {why}")
    return DPCoreError(f"all {count} {noun}s were refused{others}: {why}")


def write_plans(path: Path, items) -> None:
    """Write (label, plan, δ) items as dp-accounting events (:func:`~dpcore.privacy.core.dp_events_list`);
    a plan the run has not (``None``) is refused in one line, never written empty."""
    missing = [label for label, plan, _ in items if plan is None]
    if missing:
        raise DPCoreError(f"--plan-out: no noise plan to export for {missing[0]} (its mechanism declares none)")
    doc = dp_events_list(items)
    with writing("--plan-out", path):
        path.write_text(dumps(doc, indent=1) + "\n")


def eps_text(v) -> str:
    """An ε for a text line: ∞ for none (``None`` in JSON), else 3 significant digits."""
    return "∞" if v is None or v == float("inf") else f"{v:.3g}"


def check_output(path: str, what: str, *, folder: bool = False) -> Path:
    """Before any work: that ``path`` can take the output ``what`` names, a file or (``folder``) a
    folder.  A missing folder is made with its parents, as the write would; a file must not be a
    folder, must not lie under a file, and is opened for appending (and removed again if this
    made it); a folder must take a file.  Refused in one line (exit 2), not after the work."""
    kind = "folder" if folder else "file"
    if not path.strip() or "\x00" in path:
        raise DPCoreError(f"{what} needs a {kind} path, got {path!r}")
    target = Path(path)
    try:
        if folder and target.exists() and not target.is_dir():
            raise DPCoreError(f"{what} {path!r} is a file, not a folder")
        if not folder and target.is_dir():
            raise DPCoreError(f"{what} {path!r} is a folder: name a file to write")
        home = target if folder else target.parent
        above = next((q for q in (home, *home.parents) if q.exists()), None)
        if above is not None and not above.is_dir():
            raise DPCoreError(f"{what} {path!r} lies under {str(above)!r}, a file, not a folder")
        home.mkdir(parents=True, exist_ok=True)
        if folder:
            with tempfile.NamedTemporaryFile(dir=target, prefix=".dpcore-check-"):
                pass
        else:
            existed = target.exists()
            with open(target, "a"):
                pass
            if not existed:
                target.unlink()
    except OSError as exc:
        raise DPCoreError(f"{what} {path!r} cannot be written: {exc.strerror or exc}") from None
    return target


class writing:
    """Turns an I/O error while writing ``what`` (``path``) into one line (exit 2): a full disk, a
    device that takes nothing (``/dev/full``), a folder that went away."""

    def __init__(self, what: str, path: Any):
        self.what, self.path = what, path

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is not None and isinstance(exc, OSError) and not isinstance(exc, (BrokenPipeError, TimeoutError)):
            where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
            raise DPCoreError(f"could not write {self.what} {str(self.path)!r}: {exc.strerror or exc}{where}") from None
        return False
