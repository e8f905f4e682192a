"""The package's one cache layer: a memory memo and a disk folder, each with single flight.

Every store of the package is an instance of these two classes, composed by the execution
context (:class:`dpcore.experiments.context.Context`); only *what makes an entry valid* belongs
to the module whose numbers it holds:

========================  =======================================  ============================================
store                     instance                                 an entry read back is used only if …
========================  =======================================  ============================================
exact solutions           ``DiskCache(prefix="erm-")`` + ``Memo``  its loss recomputes and its gradient is that
                          (:class:`dpcore.erm.ReferenceStore`)     of an optimum (:mod:`dpcore.erm`)
noise calibrations        ``DiskCache(prefix="calibration-")``     it re-certifies, without too much noise
                          + ``Memo`` (``CalibrationTable``)        (:mod:`dpcore.privacy.accounting`)
grid results              ``DiskCache()`` (the results folder)     its record has the schema, the ranges and the
                                                                   recomputed certificate (:mod:`~dpcore.experiments.sweep`)
a view's run records      ``Memo`` (:attr:`Context.memo`)          (memory only, in the app's process)
========================  =======================================  ============================================

One rule decides which code an entry belongs to, for cached and shipped files alike: its key
hashes the code that made it (:func:`code_fingerprint`), so a changed solver or mechanism never
reads an old answer, from a cache or from the repository.

What the layer guarantees, whatever it stores:

* **single flight**: while one thread computes a key, another asking for it waits for the result
  (:class:`Memo`); while one process computes a key of a folder, another waits on the key's lock
  file and then reads the entry (:meth:`DiskCache.get_or_make`): thirty students opening one
  link compute it once;
* **atomic, unique writes**: each write goes through its own temporary file and ``os.replace``
  (:func:`dpcore.jsonutil.write_atomic`), so readers never see half an entry and two writers never
  replace each other's temporary file;
* **failures cost only time**: a folder that cannot be written, a torn, forged or foreign file, a FIFO
  in an entry's place — each is logged and the value computed again;
* **bounded size**: a folder is pruned to its byte limit (the oldest entries first), counting the
  temporary files of writers that were killed mid-write, which go once they are provably abandoned
  (:data:`dpcore.jsonutil.ABANDONED_SECONDS`); a key's lock file goes only when unheld
  (:func:`_unlink_unheld`), so pruning never lets two computations of one key overlap.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import logging
import os
import threading
import time
import tokenize
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from .jsonutil import MAX_CACHE_BYTES, NO_FILE, prune_folder, read_cache_file, write_atomic

try:  # POSIX: a lock file per key lets processes take turns; elsewhere threads still do
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["Memo", "DiskCache", "cache_dir", "code_fingerprint"]


def cache_dir() -> Path:
    """Where what the package computes outlives a process (exact solutions, noise calibrations, the
    compiled kernels): ``DPCORE_CACHE_DIR``, else ``~/.cache/dpcore``.  The app and the command line read
    the same folder, so a reference the app solved is not solved again by ``python -m dpcore run``."""
    return Path(os.environ.get("DPCORE_CACHE_DIR") or Path.home() / ".cache" / "dpcore")

#: what a ``check`` passed to :meth:`DiskCache.read` may raise to say "not a valid entry" (``ArithmeticError``:
#: a number the file holds that no float is, ``float(10**400)``'s ``OverflowError``)
INVALID = (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError, ArithmeticError)


class Memo:
    """The last ``size`` results of a function of hashable keys, in memory, with single flight.

    :meth:`get` returns ``compute()`` or its result for the same key when still held.  While
    one thread computes a key, another asking for it waits and reads the result; if the first
    fails, the next asker computes it itself.  A thread asking again for a key it is computing
    computes it (no self-wait).  A pickled copy (sent to a worker process) starts empty.
    """

    def __init__(self, size: int = 32):
        self.size = int(size)
        self._memory: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._flights: dict[Any, tuple[int, threading.Event]] = {}  # key → (computing thread, done)

    def __reduce__(self):
        return (Memo, (self.size,))

    def __repr__(self) -> str:
        return f"Memo(size={self.size}, held={len(self._memory)})"

    def __contains__(self, key) -> bool:
        with self._lock:
            return key in self._memory

    def __len__(self) -> int:
        return len(self._memory)

    def get(self, key, compute: Callable[[], Any]) -> Any:
        me = threading.get_ident()
        while True:
            with self._lock:
                if key in self._memory:
                    self._memory.move_to_end(key)
                    return self._memory[key]
                flight = self._flights.get(key)
                if flight is None or flight[0] == me:
                    if flight is None:
                        self._flights[key] = (me, threading.Event())
                    break
            flight[1].wait()  # another thread computes it: read its result, or try again if it failed
        try:
            value = compute()
            with self._lock:
                self._memory[key] = value
                while len(self._memory) > self.size:
                    self._memory.popitem(last=False)
            return value
        finally:
            if flight is None:  # this call opened the flight: close it
                with self._lock:
                    self._flights.pop(key)[1].set()

    def clear(self) -> None:
        """Forget what is held (a flight under way still delivers to its waiters)."""
        with self._lock:
            self._memory.clear()


class DiskCache:
    """JSON entries ``<folder>/<prefix><key>.json``, shared by the threads and processes that
    name the same folder; ``folder=None`` keeps nothing (every read misses, writes are dropped).

    ``max_file_bytes``: the largest file read as an entry (a bigger one is not ours);
    ``folder_bytes``: the folder's entries of this prefix are pruned to this size, the
    oldest first, once every ``prune_every`` writes of this instance.
    """

    def __init__(self, folder: str | os.PathLike | None, *, prefix: str = "", max_file_bytes: int = MAX_CACHE_BYTES,
                 folder_bytes: float = 256 * 2**20, prune_every: int = 20, what: str = "cache entry",
                 log: str = __name__):
        self.folder = None if folder is None else Path(folder)
        self.log = log  # the logger (a name) that reports what was discarded: the owner's
        self.prefix, self.max_file_bytes, self.what = prefix, int(max_file_bytes), what
        self.folder_bytes, self.prune_every = float(folder_bytes), int(prune_every)
        self._writes = 0
        self._count = threading.Lock()
        self._flights: dict[str, _Flight] = {}  # key → the thread of this process computing it

    def _settings(self) -> dict[str, Any]:
        return dict(prefix=self.prefix, max_file_bytes=self.max_file_bytes, folder_bytes=self.folder_bytes,
                    prune_every=self.prune_every, what=self.what, log=self.log)

    def __reduce__(self):
        return (_rebuild_disk_cache, (self.folder, self._settings()))

    def __repr__(self) -> str:
        return f"DiskCache(folder={self.folder!r}, prefix={self.prefix!r})"

    def path(self, key: str) -> Path | None:
        return None if self.folder is None else self.folder / f"{self.prefix}{key}.json"

    def read(self, key: str, check: Callable[[Any], Any]) -> Any | None:
        """``check(document)`` of the entry, or ``None`` when there is none or ``check`` finds it
        invalid (it raises one of :data:`INVALID`; the entry is logged and ignored)."""
        path = self.path(key)
        return None if path is None else self.read_file(path, check)

    def read_file(self, path: Path, check: Callable[[Any], Any]) -> Any | None:
        """:meth:`read` of any file, for those shipped in the repository (read by the same ``check``)."""
        try:
            doc = read_cache_file(path, self.max_file_bytes)
            return None if doc is NO_FILE else check(doc)
        except INVALID as exc:
            logging.getLogger(self.log).warning("discarding the %s %s (%s); computing it again",
                                                self.what, Path(path).name, exc)
            return None

    def write(self, key: str, document: Any) -> bool:
        """Store ``document`` under ``key``; ``False`` (logged) when the folder cannot take it."""
        path = self.path(key)
        if path is None:
            return False
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, document)
        except (OSError, ValueError) as exc:  # read-only or full: the value is only computed again
            logging.getLogger(self.log).warning("could not keep the %s %s (%s)", self.what, path.name, exc)
            return False
        with self._count:
            self._writes += 1
            due = self._writes % self.prune_every == 0
        if due:
            self.prune()
        return True

    def prune(self, limit: float | None = None) -> int:
        """Keep this prefix's entries under ``limit`` bytes (default ``folder_bytes``), the least
        recently written going first; returns how many went.  Lock files of entries no longer
        there and untouched for an hour go too."""
        if self.folder is None:
            return 0
        removed = prune_folder(self.folder, self.folder_bytes if limit is None else limit, self.prefix)
        locks = self.folder / ".locks"
        with contextlib.suppress(OSError):
            for lock in locks.glob(f"{self.prefix}*.lock"):
                if not (self.folder / (lock.name[:-5] + ".json")).exists() and lock.stat().st_mtime < time.time() - 3600:
                    _unlink_unheld(lock)
        return removed

    @contextlib.contextmanager
    def flight(self, key: str) -> Iterator[None]:
        """A block that one thread of one process at a time runs for ``key`` (an exclusive
        ``flock`` on the key's lock file).  Without a folder, or where the lock file cannot be
        made, the block runs unlocked: a lock is worth time, never an error."""
        fd = None
        if self.folder is not None and fcntl is not None:
            try:
                (self.folder / ".locks").mkdir(parents=True, exist_ok=True)
                fd = _hold(self.folder / ".locks" / f"{self.prefix}{key}.lock")
            except OSError:
                fd = None
        try:
            yield
        finally:
            if fd is not None:
                os.close(fd)  # closing releases the lock

    def get_or_make(self, key: str, make: Callable[[], Any], check: Callable[[Any], Any],
                    encode: Callable[[Any], Any] | None = None,
                    keep: Callable[[Any], bool] | None = None, shipped: Path | None = None) -> Any:
        """The entry (``check``-ed), else the ``shipped`` file's (the same ``check``), else
        ``make()`` — computed by one process at a time per key: a second asker waits for the
        first and reads its entry.  ``encode(value)`` is what is written (default the value
        itself), and only when ``keep(value)`` (default always)."""
        before = self._stamp(key)
        value = self.read(key, check)
        if value is not None:
            return value
        with self.flight(key):
            # another process may have made it while this one waited (read again only if so)
            value = self.read(key, check) if self._stamp(key) != before else None
            if value is None and shipped is not None and shipped.exists():
                value = self.read_file(shipped, check)
            if value is None:
                value = make()
                if keep is None or keep(value):
                    self.write(key, value if encode is None else encode(value))
        return value


    def _stamp(self, key: str) -> tuple | None:
        """What tells whether the entry's file changed (``None``: no file)."""
        path = self.path(key)
        try:
            st = os.stat(path) if path is not None else None
        except OSError:
            return None
        return None if st is None else (st.st_ino, st.st_mtime_ns, st.st_size)

    def share(self, keys: Iterable[str]) -> tuple[list[str], dict[str, _Flight]]:
        """Single flight for a batch (a grid's tasks): ``(mine, theirs)``, the keys this thread now
        computes and, for each key another thread of this process is computing, its flight, whose
        :meth:`_Flight.wait` returns that thread's value (``None`` if it gave up).  Every key of
        ``mine`` must be handed to :meth:`land` once, with its value or ``None``: use
        :meth:`sharing`, which does so on every path."""
        mine, theirs = [], {}
        with self._count:
            for key in keys:
                if key in self._flights:
                    theirs[key] = self._flights[key]
                else:
                    self._flights[key] = _Flight()
                    mine.append(key)
        return mine, theirs

    @contextlib.contextmanager
    def sharing(self, keys: Iterable[str]) -> Iterator[tuple[list[str], dict[str, _Flight], Callable[[str, Any], None]]]:
        """:meth:`share` as a block that cannot leave a flight open: yields ``(mine, theirs, land)``;
        ``land(key, value)`` ends this thread's flight for a key of ``mine`` (its waiters read
        ``value``), and leaving the block — normally, by a refusal, or by any exception, a
        Streamlit rerun included — lands every key of ``mine`` not landed yet with ``None`` (its
        waiters compute it themselves).  A flight is landed only by the thread that claimed it."""
        mine, theirs = self.share(keys)
        with self._count:
            owned = {key: self._flights[key] for key in mine}

        def land(key: str, value: Any) -> None:
            flight = owned.pop(key, None)
            if flight is None:
                return
            with self._count:
                if self._flights.get(key) is flight:
                    del self._flights[key]
            flight.value = value
            flight.done.set()

        try:
            yield mine, theirs, land
        finally:
            for key in list(owned):
                land(key, None)

    def land(self, key: str, value: Any) -> None:
        """The end of this thread's flight for ``key`` (:meth:`share`): its waiters read ``value``."""
        with self._count:
            flight = self._flights.pop(key, None)
        if flight is not None:
            flight.value = value
            flight.done.set()


def _hold(path: Path) -> int:
    """An exclusive ``flock`` on the lock file at ``path``, held on the returned descriptor (closing it
    releases the lock).  The lock taken is on the file the name holds *now*: a lock file removed
    (:func:`_unlink_unheld`) between this process's open and its lock is opened again, so two processes
    never hold locks on two different files of one name, which would let two computations of one key
    overlap."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
        except BaseException:
            os.close(fd)
            raise
        if same:
            return fd
        os.close(fd)  # the name now holds another file (or none): lock that one


def _unlink_unheld(path: Path) -> bool:
    """Remove a lock file only if no one holds it: taken without waiting (``LOCK_NB``), removed while
    held, so a process holding it (a computation of more than an hour, whose lock file is as old as its
    first use) keeps it, and one waiting on it re-opens the name (:func:`_hold`).  Returns whether it went."""
    if fcntl is None:  # pragma: no cover - Windows: no lock files are made
        return False
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # held by another: its computation is running
        if os.stat(path).st_ino != os.fstat(fd).st_ino:
            return False  # replaced meanwhile: not the file examined
        os.unlink(path)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


class _Flight:
    """One key being computed by one thread; others wait for its value."""

    def __init__(self):
        self.done, self.value = threading.Event(), None

    def wait(self) -> Any:
        self.done.wait()
        return self.value


def _rebuild_disk_cache(folder, settings):
    return DiskCache(folder, **settings)


def _code_text(path: Path) -> str:
    """A module's code as its tokens without comments, line breaks inside brackets and
    statements that are a bare string (docstrings), so that mending a sentence or a line's
    wrapping does not throw away what the code computed.

    Tokens, not the syntax tree: ``ast.parse`` in two threads at once can fail on Python 3.11
    ("AST constructor recursion depth mismatch", CPython gh-106905), and this runs in the
    server's threads while Streamlit compiles a page."""
    kept: list[str] = []
    line: list[tuple[int, str]] = []
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
    with path.open("rb") as f:
        for tok in tokenize.tokenize(f.readline):
            if tok.type in skip:
                continue
            if tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                if line and not all(t == tokenize.STRING for t, _ in line):
                    kept.extend(text for _, text in line)
                    kept.append("\n")
                line = []
                if tok.type != tokenize.NEWLINE:
                    kept.append(tokenize.tok_name[tok.type])
                continue
            line.append((tok.type, tok.string))
    kept.extend(text for _, text in line)
    return " ".join(kept)


def code_fingerprint(root: Path, exclude: Iterable[str] = ()) -> str:
    """A hash of the code of every module under ``root`` but those matching a pattern of
    ``exclude`` (``fnmatch`` patterns of paths relative to ``root``, ``/``-separated), comments
    and docstrings left out."""
    patterns = tuple(exclude)
    h = hashlib.sha256()
    for path in sorted(Path(root).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if any(fnmatch.fnmatchcase(rel, pat) for pat in patterns):
            continue
        h.update(rel.encode())
        h.update(_code_text(path).encode())
    return h.hexdigest()[:24]
