"""Work started ahead in a second process while this one does other work: what the shipped tunings'
searches spent, recomputed (:func:`~dpcore.experiments.tune.shipped_tuning` with ``spent=True``: pure
accounting, about 35 s of one core on Adult), which "Prepare for class" needs last and a 2-core machine
can do beside the lesson's runs.

The second process leaves nothing but the verification marks of the rows it checked in the cache
folder (:mod:`dpcore.certify_marks`, signed with this user's key): the reader in this process then finds
them and does not check those rows again.  Nothing it says is trusted otherwise: a row it did not mark
(it failed, was killed, or the marks cannot be kept) is checked here as before, and a file it refused is
refused here too, with the same one-line reason.

Run as ``python -m dpcore.experiments.ahead DATA_DIR DATASET:MODEL …`` (what :class:`SpentAhead` starts).
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Sequence

from .tune import shipped_tuning

__all__ = ["SpentAhead"]

_LOG = logging.getLogger(__name__)


class SpentAhead:
    """The tunings ``pairs`` ((dataset, model)) of the data folder ``data_dir`` checked for what their
    searches spent, in a second process: :meth:`start` starts it (once), :meth:`wait` waits for its end
    (``True`` when it ended well; the caller then reads the tunings as usual, from the marks)."""

    def __init__(self, data_dir, pairs: Sequence[tuple[str, str]]):
        self.data_dir, self.pairs = data_dir, list(pairs)
        self._proc: subprocess.Popen | None = None

    def start(self) -> str:
        if self._proc is None and self.pairs:
            args = [sys.executable, "-m", __name__, "" if self.data_dir is None else os.fspath(self.data_dir),
                    *(f"{d}:{m}" for d, m in self.pairs)]
            try:
                self._proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL)
            except OSError as exc:  # no second process here: the reader checks every row itself
                _LOG.info("could not start the tunings' check in a second process (%s)", exc)
        names = ", ".join(f"{d} ({m})" for d, m in self.pairs)
        return f"what the shipped tuning's searches spent, {names}: started in a second process"

    def wait(self) -> bool:
        if self._proc is None:
            return False
        return self._proc.wait() == 0

    def read(self, dataset: str, model: str) -> str:
        """What a tuning's searches spent, read here once the second process has ended (its marks)."""
        self.wait()
        record = shipped_tuning(dataset, model, data_dir=self.data_dir, spent=True)
        return (f"no tuning shipped for {dataset} ({model}): nothing to recompute" if record is None else
                f"what the shipped tuning's {len(record.get('rows', []))} searches spent, {dataset} ({model}): recomputed")


def _main(argv: Sequence[str]) -> int:
    data_dir = argv[0] or None
    status = 0
    for pair in argv[1:]:
        dataset, _, model = pair.partition(":")
        try:
            shipped_tuning(dataset, model, data_dir=data_dir, spent=True)
        except Exception:  # the reader in the first process checks this file again and says why
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
