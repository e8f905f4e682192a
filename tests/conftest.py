import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The app keeps exact solutions on disk; the tests keep theirs in a folder of their own.
# Made here, removed when the run ends (a folder given by the caller is left alone).
if "DPCORE_CACHE_DIR" not in os.environ:
    _CACHE = tempfile.mkdtemp(prefix="dpcore-test-cache-")
    os.environ["DPCORE_CACHE_DIR"] = _CACHE
    atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)

# The compiled kernels (dpcore/numerics/kernels.py) are kept in NUMBA_CACHE_DIR where it is set, else in the cache
# folder above: one folder for the whole run and the runs after it (a subprocess given a cache folder of its
# own inherits this), so a test does not pay the kernels' compile (seconds) in every process it starts.
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(tempfile.gettempdir()) / f"dpcore-test-numba-{getattr(os, 'getuid', lambda: 0)()}"))

# One BLAS / OpenMP thread per test process, as the app's contexts run their work
# (Context.active): the default run puts one pytest-xdist worker on each core, and a library
# spinning a thread per core on top of that (an exact MLP solve outside any context, a subprocess)
# ran up to 30x slower on a loaded 2-core machine.  Subprocesses inherit the variables; this
# process, whose numpy may already be loaded, is limited through threadpoolctl.  A test that
# wants more threads asks for them (Context(threads=…), threadpool_limits).
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
try:  # the suite runs in the environment of the README's command; another Python says so in one line
    from threadpoolctl import threadpool_limits  # noqa: E402
except ModuleNotFoundError as _missing:  # pragma: no cover - a wrong interpreter, not a test
    import pytest as _pytest

    _pytest.exit(f"{_missing}: run the suite with the Python of the README's environment "
                 "(python -m pip install -r requirements-dev.txt), e.g. .venv-ci/bin/python -m pytest", returncode=4)

threadpool_limits(limits=1)

# Syntax trees one thread's at a time, as in the app's server (pages/boot.py): a test's threads may
# format tracebacks (which parse on Python 3.11) while another builds a tree.
from pages.boot import serialize_syntax_trees  # noqa: E402

serialize_syntax_trees()

# Streamlit's script runner (AppTest) makes each page run as ``__main__`` and leaves it there; a later
# test in the same worker that spawns processes (Dask's nannies, loky) would have each child import
# that page as its main module.  Every test gets back the main module it started with.
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _the_real_main_module():
    main = sys.modules.get("__main__")
    yield
    if main is not None and sys.modules.get("__main__") is not main:
        sys.modules["__main__"] = main


# The default run's size (tests/tiers.py): what was measured too long for it runs under ``-m slow``, its
# cheap twin by default.  Marked before pytest selects by marker (``tryfirst``).
import tiers  # noqa: E402


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    slow = tiers.slowed(tiers.measured()["seconds"])
    for item in items:
        why = slow.get(item.nodeid) or slow.get(tiers.function_of(item.nodeid))
        if why is not None:
            item.add_marker(pytest.mark.slow(reason=why))
