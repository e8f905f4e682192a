"""Single flight cannot be left open (issue 55), and a context's thread limits end with its work.

The app shares one context among all sessions: a grid that claims a task and never lands it leaves
every later grid asking for that task waiting forever.  Each path that used to leave a flight open —
a task refused by the machine's budget, a progress or result callback that raises (in the app: a
click during a run raises Streamlit's rerun exception there) — is run, then the same grid is asked
again through the same context, in a thread with a deadline.  The check of the check runs the old,
leaky landing and sees the second grid hang.
"""

from __future__ import annotations

import contextlib
import threading

import pytest
from threadpoolctl import threadpool_info

from dpcore.cache import DiskCache
from dpcore.experiments.context import Budget, Context
from dpcore.experiments.grid import run_grid
from dpcore.experiments.run import RunSpec

SPECS = [RunSpec(dataset="breast-cancer", mechanism="gradient-dpgd", epsilon=e, iterations=5, repeats=1)
         for e in (0.5, 1.0)]
DEADLINE = 60.0  # seconds: the grids here take well under one


def _finishes(fn, deadline: float = DEADLINE, done: threading.Event | None = None) -> bool:
    """Whether ``fn()`` returns (or raises) within ``deadline`` seconds, in a daemon thread (``done``
    is set when it ends, for a caller that frees a stuck one)."""
    done = threading.Event() if done is None else done

    def target():
        try:
            fn()
        except BaseException:  # noqa: BLE001  (the call's outcome is not the question)
            pass
        finally:
            done.set()

    threading.Thread(target=target, daemon=True).start()
    return done.wait(deadline)


class Interrupt(Exception):
    """What a click during a run raises in the app (Streamlit's rerun), as a callback's exception."""


def _first_grid(ctx: Context, path: str) -> None:
    if path == "budget":
        run_grid(SPECS, ctx.with_(budget=Budget(work=1.0)))  # every task refused by the machine's budget
    elif path == "progress":
        def progress(done, total, label):
            raise Interrupt
        with pytest.raises(Interrupt):
            run_grid(SPECS, ctx.with_(progress=progress))
    else:
        def partial(rows):
            raise Interrupt
        with pytest.raises(Interrupt):
            run_grid(SPECS, ctx, partial=partial)


@pytest.mark.parametrize("path", ["budget", "progress", "result"])
def test_a_grid_after_a_refused_or_interrupted_one_does_not_wait_forever(tmp_path, path):
    ctx = Context(workers=1, results_dir=tmp_path / "results", trace_points=0)
    _first_grid(ctx, path)
    assert not ctx.results._flights, f"flights left open after the {path} path: {list(ctx.results._flights)}"
    table = []
    assert _finishes(lambda: table.append(run_grid(SPECS, ctx))), f"the second grid waits forever ({path})"
    assert len(table[0]) == len(SPECS) and table[0]["error"].isna().all()


def test_check_of_the_check_a_leaky_landing_hangs_the_second_grid(tmp_path, monkeypatch):
    """The landing as it was (a budget's refusal never landed): the same harness sees the hang."""
    @contextlib.contextmanager
    def leaky(self, keys):
        mine, theirs = self.share(keys)
        landed = []
        yield mine, theirs, lambda key, value: landed.append(key) if value is None else self.land(key, value)

    monkeypatch.setattr(DiskCache, "sharing", leaky)
    ctx = Context(workers=1, results_dir=tmp_path / "results", trace_points=0)
    _first_grid(ctx, "budget")
    stuck = threading.Event()
    assert not _finishes(lambda: run_grid(SPECS, ctx), deadline=5.0, done=stuck)
    for key in list(ctx.results._flights):  # let the stuck grid go, and end before the next test
        ctx.results.land(key, None)
    assert stuck.wait(DEADLINE)


def test_a_flight_is_landed_only_by_the_thread_that_claimed_it(tmp_path):
    cache = DiskCache(tmp_path)
    with cache.sharing(["k"]) as (mine, theirs, land):
        assert mine == ["k"] and not theirs
        land("k", 1)
        with cache.sharing(["k"]) as (mine2, _, land2):  # a new flight for the same key, another grid's
            assert mine2 == ["k"]
            land("k", None)  # landing the old one again touches nothing
            assert "k" in cache._flights
        assert "k" not in cache._flights


def test_the_process_thread_limits_come_back_after_a_run():
    """``Context.active`` limits BLAS to one thread while it works, then restores the process's."""
    from dpcore import run

    before = sorted((i["internal_api"], i["num_threads"]) for i in threadpool_info())
    seen = []
    ctx = Context(progress=lambda done, total, label: seen.append(
        sorted((i["internal_api"], i["num_threads"]) for i in threadpool_info())))
    run(SPECS[0], ctx=ctx)
    after = sorted((i["internal_api"], i["num_threads"]) for i in threadpool_info())
    assert after == before
    assert seen and all(n == 1 for api, n in seen[0])  # limited while it worked
