"""The app's sessions are threads of one process: shared stores must be safe, and do shared work once.

* ``write_atomic``: 8 threads × 200 writes of one cache entry raise nothing and leave a
  complete file (with a temporary file named after the process only, threads replaced each
  other's half-written files and ``os.replace`` failed).
* ``ReferenceStore.memo``: 8 threads asking for one new key compute it once (single flight);
  the exact-solution store solves one reference once; a failed first computation lets the
  next asker compute; a thread asking again for a key it is computing does not wait on itself.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from dpcore import datasets, erm
from dpcore.erm import ReferenceStore
from dpcore.jsonutil import write_atomic
from dpcore.models import make_model


def _together(n: int, fn) -> list:
    """``fn(i)`` on ``n`` threads released at once; their results, or their exceptions."""
    gate = threading.Barrier(n)
    out: list = [None] * n

    def work(i):
        gate.wait()
        try:
            out[i] = fn(i)
        except BaseException as exc:  # noqa: BLE001 — reported by the test
            out[i] = exc

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_eight_threads_writing_one_entry_two_hundred_times_raise_nothing(tmp_path):
    path = tmp_path / "entry.json"

    def writes(i):
        for k in range(200):
            write_atomic(path, {"thread": i, "k": k, "payload": "x" * 2000})

    errors = [e for e in _together(8, writes) if isinstance(e, BaseException)]
    assert not errors, errors[:3]
    assert json.loads(path.read_text())["k"] == 199  # a complete write, the last of some thread
    assert sorted(p.name for p in tmp_path.iterdir()) == ["entry.json"]  # no temporary file left


def test_a_failed_write_leaves_no_temporary_file(tmp_path):
    (tmp_path / "entry.json").mkdir()  # a folder where the file should go: os.replace fails
    with pytest.raises(OSError):
        write_atomic(tmp_path / "entry.json", {"x": 1})
    assert [p.name for p in tmp_path.iterdir()] == ["entry.json"]


def test_eight_threads_asking_for_one_new_key_compute_it_once():
    store, calls = ReferenceStore(size=8), []

    def compute():
        calls.append(1)
        time.sleep(0.2)  # long enough for every other thread to arrive while it computes
        return object()

    values = _together(8, lambda i: store.memo("key", compute))
    assert len(calls) == 1 and all(v is values[0] for v in values)


def test_check_of_the_check_without_single_flight_they_compute_eight_times():
    calls = []

    def compute():
        calls.append(1)
        time.sleep(0.2)
        return 1

    held: dict = {}
    _together(8, lambda i: held.get("key") or held.setdefault("key", compute()))  # a memo without it
    assert len(calls) == 8


def test_a_failed_computation_lets_the_next_asker_compute():
    store, calls = ReferenceStore(), []

    def compute():
        calls.append(1)
        time.sleep(0.1)
        if len(calls) == 1:
            raise RuntimeError("the first asker's own failure")
        return "ok"

    out = _together(4, lambda i: store.memo("key", compute))
    assert sum(isinstance(o, RuntimeError) for o in out) == 1 and out.count("ok") == 3
    assert len(calls) == 2


def test_a_thread_asking_again_for_its_own_key_does_not_wait_on_itself():
    store = ReferenceStore()
    assert store.memo("outer", lambda: store.memo("outer", lambda: 5) + 1) == 6


def test_eight_threads_solve_one_reference_once(monkeypatch):
    ds = datasets.load("breast-cancer")
    model = make_model("logreg", lam=0.0123)
    solved = []
    real = erm.solve_erm

    def counting(*args, **kwargs):
        solved.append(1)
        time.sleep(0.2)
        return real(*args, **kwargs)

    monkeypatch.setattr(erm, "solve_erm", counting)
    store = ReferenceStore()
    thetas = _together(8, lambda i: store.exact(ds, model).theta)
    assert len(solved) == 1 and all((t == thetas[0]).all() for t in thetas)
