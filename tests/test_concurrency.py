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


def _count_solves(monkeypatch, seconds: float) -> list:
    """Make every exact solve slow (``seconds``, so that concurrent askers meet) and counted: the
    returned list gains one item per solve."""
    solved: list = []
    real = erm.solve_erm

    def counting(*args, **kwargs):
        solved.append(1)
        time.sleep(seconds)
        return real(*args, **kwargs)

    monkeypatch.setattr(erm, "solve_erm", counting)
    return solved


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
    solved = _count_solves(monkeypatch, 0.2)
    store = ReferenceStore()
    thetas = _together(8, lambda i: store.exact(ds, model).theta)
    assert len(solved) == 1 and all((t == thetas[0]).all() for t in thetas)


def test_two_stores_on_one_folder_solve_one_mlp_reference_once(tmp_path, monkeypatch):
    """Eight threads, each with its own store on one folder (as separate processes would have),
    ask for one new MLP reference: the key's lock file lets one solve it; the others wait and read
    its entry.  (Within one store the memo already does this; across stores only the lock can.)"""
    ds = datasets.load("iris")
    model = make_model("mlp", lam=0.0123)
    solved = _count_solves(monkeypatch, 0.3)
    thetas = _together(8, lambda i: ReferenceStore(tmp_path).exact(ds, model).theta)
    assert not [t for t in thetas if isinstance(t, BaseException)], thetas
    assert len(solved) == 1 and all((t == thetas[0]).all() for t in thetas)


def test_check_of_the_check_without_the_lock_file_every_store_solves(tmp_path, monkeypatch):
    from contextlib import nullcontext

    from dpcore.cache import DiskCache

    ds = datasets.load("iris")
    model = make_model("logreg", lam=0.0456)
    solved = _count_solves(monkeypatch, 0.3)
    monkeypatch.setattr(DiskCache, "flight", lambda self, key: nullcontext())
    _together(4, lambda i: ReferenceStore(tmp_path).exact(ds, model))
    assert len(solved) == 4


def test_two_processes_asking_for_one_new_entry_make_it_once(tmp_path):
    """Across processes: two interpreters ask one folder for one new key at once; one makes it."""
    import subprocess
    import sys

    script = (
        "import sys, time\n"
        "from dpcore.cache import DiskCache\n"
        "c = DiskCache(sys.argv[1], prefix='x-')\n"
        "def make():\n"
        "    open(sys.argv[1] + '/made-' + sys.argv[2], 'w').close(); time.sleep(1.0); return {'v': 7}\n"
        "time.sleep(max(0.0, float(sys.argv[3]) - time.time()))\n"
        "print(c.get_or_make('k', make, check=lambda d: d)['v'])\n"
    )
    start = time.time() + 2.0
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path), str(i), str(start)],
                              stdout=subprocess.PIPE, text=True) for i in range(2)]
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert outs == ["7", "7"]
    assert len(list(tmp_path.glob("made-*"))) == 1


def test_eight_threads_writing_one_cache_entry_two_hundred_times_raise_nothing(tmp_path):
    """The same through the cache layer (the results, solutions and calibrations all write so)."""
    from dpcore.cache import DiskCache

    cache = DiskCache(tmp_path, prefix="r-", prune_every=50)
    out = _together(8, lambda i: [cache.write("key", {"thread": i, "k": k, "pad": "x" * 2000}) for k in range(200)])
    assert all(o == [True] * 200 for o in out), [o for o in out if o != [True] * 200][:1]
    assert cache.read("key", lambda d: d)["k"] == 199
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["r-key.json"]


def test_two_sessions_running_one_grid_at_once_compute_each_task_once(tmp_path, monkeypatch):
    """Two threads (two students' sessions) run the same grid on the app's context at once: each
    task is computed by one of them and read by the other, and both get every result."""
    from dpcore.experiments import sweep
    from dpcore.experiments.context import Context
    from dpcore.experiments.grid import run_grid
    from dpcore.experiments.run import RunSpec

    specs = [RunSpec(dataset="breast-cancer", mechanism=m, epsilon=1.0, iterations=10, repeats=2)
             for m in ("output-gaussian", "gradient-dpgd", "objective-gaussian")]
    computed = []
    real = sweep.dispatch

    def counting(pending, *args, **kwargs):
        for t in pending:
            computed.append(t.key)
        time.sleep(0.3)  # both sessions are in flight together
        yield from real(pending, *args, **kwargs)

    monkeypatch.setattr(sweep, "dispatch", counting)
    ctx = Context(workers=1, results_dir=tmp_path, trace_points=0)
    frames = _together(2, lambda i: run_grid(specs, ctx))
    assert not [f for f in frames if isinstance(f, BaseException)], frames
    assert sorted(computed) == sorted({*computed}) and len(computed) == len(specs)
    cols = ["spec", "run", "accuracy", "gap"]
    assert frames[0][cols].equals(frames[1][cols])


# The code fingerprint runs in the server's threads while Streamlit compiles a page; on Python
# 3.11 two ``ast.parse`` at once can fail ("AST constructor recursion depth mismatch", CPython
# gh-106905: a CI run lost a Compare link test to it), so the fingerprint must not parse.

def test_the_code_fingerprint_never_builds_a_syntax_tree(tmp_path, monkeypatch):
    import ast

    from dpcore.cache import code_fingerprint

    (tmp_path / "m.py").write_text("x = 1\n")

    def refuse(*a, **k):
        raise AssertionError("ast.parse called")

    monkeypatch.setattr(ast, "parse", refuse)
    monkeypatch.setattr("builtins.compile", refuse)
    assert code_fingerprint(tmp_path)


_MODULE = '''"""A module."""
import math


def f(x, y=2):
    """Says what f does."""
    # a comment
    return math.sqrt(x) * y  # another
'''


@pytest.mark.parametrize("edit, same", [
    (lambda s: s.replace('"""Says what f does."""', '"""Says it better,\n    on two lines."""'), True),
    (lambda s: s.replace("# a comment", "# a mended comment\n    # and one more"), True),
    (lambda s: s.replace('"""A module."""', '"""A module" "."""'), True),
    (lambda s: s.replace("def f(x, y=2)", "def f(x,\n      y=2)"), True),
    (lambda s: s.replace("return math.sqrt(x) * y", "return math.sqrt(x) \\\n        * y"), True),
    (lambda s: s.replace("y=2", "y=3"), False),
    (lambda s: s.replace("math.sqrt(x) * y", "math.sqrt(x) / y"), False),
    (lambda s: s.replace("    return", "    z = 'a string kept'\n    return"), False),
    (lambda s: s + "\n\ndef g():\n    return 1\n", False),
], ids=["docstring", "comment", "module-docstring", "wrapping", "backslash", "default", "operator",
        "string-in-code", "new-function"])
def test_the_code_fingerprint_reads_code_not_prose(tmp_path, edit, same):
    from dpcore.cache import code_fingerprint

    (tmp_path / "m.py").write_text(_MODULE)
    before = code_fingerprint(tmp_path)
    (tmp_path / "m.py").write_text(edit(_MODULE))
    assert (code_fingerprint(tmp_path) == before) is same


# Two sessions of a new server importing the core at once (pages/boot.py): ``dpcore`` is held
# half-initialised (its loader sleeps before running its __init__) while a second thread imports a
# submodule, as a page does; the race is then certain, not one server start in three.
_IMPORT_RACE = r"""
import importlib, importlib.machinery, sys, threading, time
sys.path.insert(0, sys.argv[1])
boot = sys.argv[2] == "boot"
# the hazard: a package whose __init__ imports its own submodules, as dpcore's did (its public face,
# imported whole); dpcore's __init__ now imports them on first use, so "lazy" runs it as it is
eager = sys.argv[2] != "lazy"


class SlowCore(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "dpcore":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        run = spec.loader.exec_module

        def exec_module(module):
            time.sleep(0.6)  # in sys.modules, its __init__ not run yet
            run(module)
            if eager:
                for face in ("dpcore.audit", "dpcore.estimators", "dpcore.experiments.tune"):
                    importlib.import_module(face)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, SlowCore)
errors = []


def session(delay, imports):
    time.sleep(delay)
    try:
        if boot:
            from pages.boot import load_core
            load_core()
        for name in imports:
            importlib.import_module(name)
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")


threads = [threading.Thread(target=session, args=(0.0, ["dpcore.exceptions"])),
           threading.Thread(target=session, args=(0.2, ["dpcore.experiments.tune"])),
           threading.Thread(target=session, args=(0.3, ["pages.common"]))]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(errors), errors[:1])
"""


def _race(script: str, mode: str):
    """Run one of this file's race scripts in a new interpreter, from the repository's root: (the
    finished process, how many of its threads failed)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", script, str(root), mode], capture_output=True,
                         text=True, timeout=120, cwd=root)
    return out, int(out.stdout.split()[0])


@pytest.mark.parametrize("boot", ["boot", "plain", "lazy"])
def test_sessions_importing_the_core_at_once_never_get_a_half_made_module(boot):
    """With ``pages.boot.load_core`` first (what app.py does) no session fails, even with a package
    ``__init__`` that imports its submodules; without it (check of the check) such a package hands a
    session a partially initialised module; dpcore's own ``__init__``, which imports its face on first
    use, gives none even without it."""
    out, failed = _race(_IMPORT_RACE, boot)
    if boot in ("boot", "lazy"):
        assert failed == 0, out.stdout + out.stderr[-2000:]
    else:
        broken = "partially initialized" in out.stdout or "deadlock detected" in out.stdout
        assert failed > 0 and broken, out.stdout + out.stderr[-2000:]


# Two threads building syntax trees at once (pages/boot.py, CPython gh-106905): a garbage-collector
# callback that sleeps makes each collection hand the interpreter to the other thread, as a
# collection in the middle of a tree did in the CI run that saw it; the break is then near certain
# on Python 3.11, not one full run in three.
_AST_RACE = r"""
import ast, gc, sys, threading, time
sys.path.insert(0, sys.argv[1])
if sys.argv[2] == "serialized":
    from pages.boot import serialize_syntax_trees
    serialize_syntax_trees()
source = "\n".join(f"x{i} = [{', '.join(map(str, range(50)))}]" for i in range(300))
gc.callbacks.append(lambda phase, info: time.sleep(0.0001) if phase == "start" else None)
gc.set_threshold(50)
errors = []


def parse():
    for _ in range(30):
        try:
            ast.parse(source)
        except SystemError as exc:
            errors.append(f"{type(exc).__name__}: {exc}")


threads = [threading.Thread(target=parse) for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(errors), errors[:1])
"""


@pytest.mark.parametrize("mode", ["serialized", "plain"])
def test_two_threads_building_syntax_trees_at_once_never_break_each_other(mode):
    """With ``pages.boot.serialize_syntax_trees`` (what app.py's ``load_core`` installs) no parse
    fails; without it (check of the check) Python 3.11 breaks one.  Later Pythons mended the
    race, so there the check of the check has nothing to show."""
    import sys

    out, failed = _race(_AST_RACE, mode)
    if mode == "serialized":
        assert failed == 0, out.stdout + out.stderr[-2000:]
    elif sys.version_info[:2] == (3, 11):
        assert failed > 0 and "recursion depth mismatch" in out.stdout, out.stdout + out.stderr[-2000:]
    elif failed == 0:
        pytest.skip(f"Python {sys.version.split()[0]} does not have the race")


def test_while_one_thread_builds_a_syntax_tree_another_waits():
    """The lock is the one ``traceback`` meets: while one thread holds it, another thread's
    ``ast.parse`` (on 3.11, also a traceback's caret placement) waits; released, it goes on."""
    import ast

    from pages import boot

    boot.serialize_syntax_trees()
    assert getattr(ast.parse, "serialized", False)
    done = threading.Event()
    worker = threading.Thread(target=lambda: (ast.parse("x = 1"), done.set()))
    with boot._AST_LOCK:
        worker.start()
        assert not done.wait(0.3)
    assert done.wait(10)
    worker.join()


def test_no_view_uses_streamlit_magic_which_the_server_turns_off():
    """``.streamlit/config.toml`` turns magic off (one party to the race above); a view that wrote
    a bare expression to the page would then silently show nothing, so none may."""
    import ast
    import glob
    import tomllib
    from pathlib import Path

    from streamlit.runtime.scriptrunner import magic

    root = Path(__file__).resolve().parent.parent
    config = tomllib.loads((root / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["magicEnabled"] is False
    views = [root / "app.py"] + sorted(Path(p) for p in glob.glob(str(root / "pages" / "*.py")))
    assert len(views) > 10
    for view in views:
        tree = magic.add_magic(view.read_text(), str(view))
        assert "transparent_write" not in ast.unparse(tree), view.name


def _starts_with_the_core(source: str) -> bool:
    """Whether a view's first statements (after its docstring) import and call ``load_core``."""
    import ast

    body = ast.parse(source).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return (len(body) >= 2 and isinstance(body[0], ast.ImportFrom) and body[0].module == "pages.boot"
            and [a.name for a in body[0].names] == ["load_core"] and isinstance(body[1], ast.Expr)
            and isinstance(body[1].value, ast.Call) and getattr(body[1].value.func, "id", "") == "load_core"
            and not body[1].value.args)


def test_every_view_loads_the_core_before_it_imports_it():
    """A new server runs a requested view straight from ``pages/`` until app.py has run once
    (pages/boot.py): each view of app.py's navigation must take the core's lock itself, first."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    views = re.findall(r'st\.Page\("(pages/\w+\.py)"', (root / "app.py").read_text())
    assert len(views) >= 13
    assert [v for v in views if not _starts_with_the_core((root / v).read_text())] == []
    # the check of the check: a view that imports the core first, or calls the lock after an import
    assert not _starts_with_the_core('"""A view."""\nfrom dpcore import run\nfrom pages.boot import load_core\nload_core()\n')
    assert not _starts_with_the_core("import math\nfrom pages.boot import load_core\nload_core()\n")
    assert _starts_with_the_core('"""A view."""\nfrom pages.boot import load_core\n\nload_core()\nimport math\n')
