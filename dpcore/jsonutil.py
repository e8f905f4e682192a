"""Strict JSON: no NaN or Infinity tokens; an infinite ε (no guarantee) is ``null``."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def to_jsonable(obj: Any) -> Any:
    """Convert numpy values, dataclasses and non-finite floats for strict JSON."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return to_jsonable(dataclasses.asdict(obj))
    return obj


def dumps(obj: Any, **kwargs: Any) -> str:
    return json.dumps(to_jsonable(obj), allow_nan=False, **kwargs)


def write_atomic(path: str | os.PathLike, obj: Any, **kwargs: Any) -> None:
    """Write strict JSON to ``path`` through a temporary file and ``os.replace``, so a
    reader (or a process killed mid-write) never sees half a file.  The temporary file is
    unique to this call (``mkstemp``), not to the process: the app's sessions are threads of
    one process, and two of them writing one entry must not replace each other's half-written
    file (a process id alone made ``os.replace`` fail in one of them).  The last complete
    write wins; an error leaves no temporary file behind."""
    path = Path(path)
    text = dumps(obj, **kwargs)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # as a plain write would leave it (mkstemp's are private)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


#: a write's temporary file (:func:`write_atomic`) older than this is a killed writer's: a write of the
#: largest entry (:data:`MAX_CACHE_BYTES`) takes well under a second, so ten minutes leaves no live writer
ABANDONED_SECONDS = 600.0


def prune_folder(folder: str | os.PathLike, limit: float, prefix: str = "", suffix: str = ".json") -> int:
    """Keep the files ``<prefix>*<suffix>`` of ``folder`` under ``limit`` bytes in all by removing
    the least recently written first (a removed cache entry is only computed again); returns
    how many went.  A shared, long-running app would otherwise fill its disk.  The temporary files of
    writes to those names (``.<prefix>*<suffix>.*.tmp``, :func:`write_atomic`) count toward the limit, and
    those older than :data:`ABANDONED_SECONDS` (a writer killed mid-write) go first, whatever the total."""
    entries, abandoned = [], []
    now = time.time()
    try:
        with os.scandir(folder) as it:
            for e in it:
                if not e.is_file(follow_symlinks=False):
                    continue
                if e.name.startswith(prefix) and e.name.endswith(suffix):
                    st = e.stat(follow_symlinks=False)
                    entries.append((st.st_mtime, st.st_size, e.path))
                elif e.name.startswith("." + prefix) and e.name.endswith(".tmp") and suffix + "." in e.name:
                    st = e.stat(follow_symlinks=False)
                    (abandoned if st.st_mtime < now - ABANDONED_SECONDS else entries).append(
                        (st.st_mtime, st.st_size, e.path))
    except OSError:
        return 0
    removed = 0
    for _, _, path in abandoned:
        with contextlib.suppress(OSError):
            os.unlink(path)
            removed += 1
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= limit:
            break
        if path.endswith(".tmp"):
            continue  # a live writer's: counted, never removed under it
        try:
            os.unlink(path)
        except OSError:
            continue
        total -= size
        removed += 1
    return removed


#: the largest cache file any reader here accepts (an exact MLP solution is about 0.3 MB)
MAX_CACHE_BYTES = 16 * 2**20


#: what :func:`read_cache_file` returns when there is no file (a file may hold JSON ``null``)
NO_FILE = type("NoFile", (), {"__repr__": lambda self: "NO_FILE"})()


class TooLarge(ValueError):
    """:func:`read_regular`'s refusal of a file over its cap."""


def read_regular(path: str | os.PathLike, max_bytes: int) -> bytes | None:
    """The bytes of ``path``, or ``None`` when there is no file.  Raises ``ValueError`` unless it is a
    regular file of at most ``max_bytes`` (:class:`TooLarge` when it is larger): opened without
    blocking (a FIFO never waits for a writer), checked on the open descriptor (no swap between the
    check and the read), read to the cap only.  Other ``OSError`` s (no permission, a name too long)
    are the caller's to say."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ValueError("a folder, not a file") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ValueError("a folder, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file (a FIFO, a device or a link to one)")
        if st.st_size > max_bytes:
            raise TooLarge(f"{st.st_size:,} bytes, more than its kind's {max_bytes:,}")
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:
            raise TooLarge(f"more than its kind's {max_bytes:,} bytes")
        return data
    finally:
        os.close(fd)



def read_cache_file(path: str | os.PathLike, max_bytes: int = MAX_CACHE_BYTES) -> Any:
    """A JSON document this package wrote to a cache folder, or :data:`NO_FILE` when there is none.

    Raises ``ValueError`` (for the caller to log and recompute) unless ``path`` is a regular
    file of at most ``max_bytes`` holding valid JSON of sane depth (:func:`read_regular`: a FIFO,
    a device or a link to one would hang the reader or fill memory, a huge or deeply nested file
    would exhaust it).
    """
    raw = read_regular(path, max_bytes)
    if raw is None:
        return NO_FILE
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"not JSON ({exc})") from None
