"""The cache's two pruning defects closed (issue 67): a lock file is removed only by its holder or when no
one holds it, so two computations of one key never overlap; the temporary files of killed writers are
counted toward the folder's limit and removed once abandoned.  Each test failed before the fix (the
check of the check: the old pruning, restored in a test, fails the same assertions)."""

import multiprocessing
import os
import time
from pathlib import Path

import pytest

from dpcore import cache as cache_module
from dpcore import jsonutil
from dpcore.cache import DiskCache
from dpcore.jsonutil import ABANDONED_SECONDS, prune_folder, write_atomic

fcntl = pytest.importorskip("fcntl")

OLD = time.time() - 2 * 3600  # older than the hour after which an entry-less lock file may go


def _age(path: Path, when: float = OLD) -> None:
    os.utime(path, (when, when))


def _old_prune(self, limit=None):
    """The pruning before the fix: an entry-less lock file an hour old removed whoever holds it."""
    removed = prune_folder(self.folder, self.folder_bytes if limit is None else limit, self.prefix)
    for lock in (self.folder / ".locks").glob(f"{self.prefix}*.lock"):
        if not (self.folder / (lock.name[:-5] + ".json")).exists() and lock.stat().st_mtime < time.time() - 3600:
            lock.unlink()
    return removed


def _computing(folder: str, key: str, started, release) -> None:
    """A second process computing ``key``: holds its flight until told to stop."""
    c = DiskCache(folder, prefix="t-")
    with c.flight(key):
        started.set()
        release.wait(30)


def _flight_taken_while_another_computes(tmp_path: Path, prune) -> bool:
    """Whether this process gets into ``key``'s flight while another process is inside it, after a
    prune (``prune``) ran over a lock file as old as a long computation's."""
    c = DiskCache(tmp_path, prefix="t-")
    with c.flight("k"):  # the lock file exists, made long ago (first used two hours back)
        pass
    _age(tmp_path / ".locks" / "t-k.lock")
    ctx = multiprocessing.get_context("fork")
    started, release = ctx.Event(), ctx.Event()
    other = ctx.Process(target=_computing, args=(str(tmp_path), "k", started, release))
    other.start()
    try:
        assert started.wait(30)
        prune(c)
        got_in = ctx.Event()

        def enter():
            with DiskCache(tmp_path, prefix="t-").flight("k"):
                got_in.set()

        import threading
        t = threading.Thread(target=enter, daemon=True)
        t.start()
        overlapped = got_in.wait(1.0)  # the other process still computes: entering now is an overlap
        release.set()
        t.join(30)
        return overlapped
    finally:
        release.set()
        other.join(30)


def test_a_prune_never_removes_a_lock_another_process_holds(tmp_path):
    assert not _flight_taken_while_another_computes(tmp_path, lambda c: c.prune())
    assert (tmp_path / ".locks" / "t-k.lock").exists()


def test_check_of_the_check_the_old_prune_lets_two_computations_of_one_key_overlap(tmp_path):
    assert _flight_taken_while_another_computes(tmp_path, lambda c: _old_prune(c))


def test_an_unheld_old_lock_without_its_entry_goes_and_a_held_or_young_one_stays(tmp_path):
    c = DiskCache(tmp_path, prefix="t-")
    for key in ("old", "young", "with-entry"):
        with c.flight(key):
            pass
    c.write("with-entry", {"x": 1})
    locks = tmp_path / ".locks"
    _age(locks / "t-old.lock")
    _age(locks / "t-with-entry.lock")
    c.prune()
    assert not (locks / "t-old.lock").exists()
    assert (locks / "t-young.lock").exists() and (locks / "t-with-entry.lock").exists()


def test_a_waiter_on_a_removed_lock_locks_the_file_its_name_holds(tmp_path):
    """The race the removal opens, closed: a process that opened the lock file before a prune removed it
    (and so waits on the removed file) re-opens the name once it gets the lock, so it and a newcomer
    lock one file, never two."""
    import threading

    path = tmp_path / "k.lock"
    pruner = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(pruner, fcntl.LOCK_EX)  # the prune holds it (unheld by anyone else, so it may go)
    got = []
    waiter = threading.Thread(target=lambda: got.append(cache_module._hold(path)))
    waiter.start()
    time.sleep(0.3)  # the waiter has opened the file and waits on its lock
    os.unlink(path)
    os.close(pruner)
    waiter.join(10)
    try:
        assert got and os.fstat(got[0]).st_ino == os.stat(path).st_ino  # it holds the file of the name
        fd = os.open(path, os.O_RDWR)
        with pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a newcomer waits for it: one lock per name
        os.close(fd)
    finally:
        for fd in got:
            os.close(fd)


def _killed_writer(folder: Path, name: str, size: int, when: float) -> Path:
    tmp = folder / f".{name}.abc123.tmp"
    tmp.write_bytes(b"x" * size)
    _age(tmp, when)
    return tmp


def test_killed_writers_temporary_files_are_counted_and_pruned(tmp_path):
    write_atomic(tmp_path / "t-a.json", {"x": 1})
    dead = [_killed_writer(tmp_path, f"t-{i}.json", 2_000_000, time.time() - 2 * ABANDONED_SECONDS) for i in range(10)]
    live = _killed_writer(tmp_path, "t-b.json", 1000, time.time())
    other = _killed_writer(tmp_path, "u-b.json", 1000, time.time() - 2 * ABANDONED_SECONDS)  # another prefix's
    removed = prune_folder(tmp_path, 10**9, "t-")
    assert removed == 10 and not any(p.exists() for p in dead)
    assert live.exists() and other.exists() and (tmp_path / "t-a.json").exists()
    # a live writer's file counts toward the limit (so entries go), but is never removed under it
    big = _killed_writer(tmp_path, "t-c.json", 5000, time.time())
    assert prune_folder(tmp_path, 5500, "t-") == 1 and not (tmp_path / "t-a.json").exists() and big.exists()


def test_check_of_the_check_the_old_prune_leaves_killed_writers_files(tmp_path, monkeypatch):
    """The earlier prune_folder matched only ``<prefix>*<suffix>``: with its filter the dead files stay."""
    dead = _killed_writer(tmp_path, "t-0.json", 1000, time.time() - 2 * ABANDONED_SECONDS)
    monkeypatch.setattr(jsonutil, "ABANDONED_SECONDS", float("inf"))  # never abandoned: the old behaviour
    jsonutil.prune_folder(tmp_path, 10**9, "t-")
    assert dead.exists()
