"""Ways a cache file can be something we did not write, shared by the cache tests (exact
solutions, calibrations, grid results): each must be refused without hanging or filling memory."""

from __future__ import annotations

import os
from pathlib import Path

#: the damages that do not depend on what the file held
SPECIAL = ("fifo", "device", "huge", "deep")


def spoil(path: Path, kind: str, max_bytes: int) -> None:
    """Replace the cache file ``path`` by a FIFO (a reader waits forever), a link to /dev/zero
    (endless bytes), a file one byte over ``max_bytes``, or JSON nested 100,000 deep."""
    text = path.read_text() if kind == "huge" else ""
    if kind in ("fifo", "device"):
        path.unlink()
        os.mkfifo(path) if kind == "fifo" else path.symlink_to("/dev/zero")
    elif kind == "huge":
        path.write_text(" " * (max_bytes + 1) + text)
    elif kind == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    else:
        raise ValueError(f"unknown damage {kind!r}")
