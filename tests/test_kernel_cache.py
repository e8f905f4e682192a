"""The compiled kernels as a dependency should be (issue 67): kept in the user's cache folder, never in the
package; a cache folder that cannot be written or that fills up costs only the compile; an odd
``NUMBA_NUM_THREADS`` does not stop the package from importing."""

import errno
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpcore.numerics import kernels

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_CACHE = ROOT / "dpcore" / "__pycache__"

#: a kernel's first use in a fresh process: its result printed
USE = ("import numpy as np; from dpcore.numerics import kernels; "
       "z = np.zeros((4, 2)); print(kernels.glm_coef(z, np.ones(4), kernels.GLM_LOGISTIC)[0, 0])")


def _run(env_changes: dict, code: str = USE) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update({"PYTHONPATH": str(ROOT), **env_changes})
    env = {k: v for k, v in env.items() if v is not None}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)


def _package_kernels() -> set[str]:
    return {p.name for p in PACKAGE_CACHE.glob("kernels.*.nb*")} if PACKAGE_CACHE.exists() else set()


def test_the_kernels_are_kept_in_the_users_cache_folder_not_the_package(tmp_path):
    before = _package_kernels()
    done = _run({"DPCORE_CACHE_DIR": str(tmp_path)})
    assert done.returncode == 0 and done.stdout.strip() == "-0.5", done.stderr  # φ'(0, 1) = −σ(0)
    kept = list((tmp_path / "numba").rglob("*.nbi"))
    assert kept, list(tmp_path.rglob("*"))
    assert _package_kernels() == before  # nothing new next to the code


def test_numba_cache_dir_set_by_the_user_is_where_they_go(tmp_path):
    done = _run({"DPCORE_CACHE_DIR": str(tmp_path / "dpcore"), "NUMBA_CACHE_DIR": str(tmp_path / "mine")})
    assert done.returncode == 0, done.stderr
    assert list((tmp_path / "mine").rglob("*.nbi")) and not (tmp_path / "dpcore" / "numba").exists()


def test_a_cache_folder_that_cannot_be_written_costs_only_the_compile(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    done = _run({"DPCORE_CACHE_DIR": str(blocker / "below")})  # a folder under a file: never made
    assert done.returncode == 0 and done.stdout.strip() == "-0.5" and done.stderr == "", done.stderr


def test_the_cache_folder_check_refuses_what_cannot_be_written(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    wheres = [blocker, blocker / "below", tmp_path / "new"]
    code = ("import os, sys; from dpcore.numerics import kernels\n"  # numba reads NUMBA_CACHE_DIR at import: a fresh process
            "for where in sys.argv[1:]:\n"
            "    os.environ['DPCORE_CACHE_DIR'] = where\n"
            "    print(kernels.kernel_cache_folder())\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", code, *map(str, wheres)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["None", "None", str(tmp_path / "new" / "numba")]


def _fresh_kernel():
    @kernels._compiled(nogil=True)
    def twice(x):
        return 2.0 * x
    return twice


def _full_disk(dispatcher):
    cache = dispatcher._cache
    inner = getattr(cache, "_inner", cache)

    def no_space(sig, data):
        raise OSError(errno.ENOSPC, "No space left on device")
    inner.save_overload = no_space


@pytest.mark.skipif(kernels._KERNEL_CACHE is None, reason="no kernel cache folder in this environment")
def test_a_full_cache_folder_costs_only_the_copy_on_disk(caplog):
    twice = _fresh_kernel()
    _full_disk(twice)
    with caplog.at_level(logging.INFO, logger="dpcore.numerics.kernels"):
        assert twice(np.float64(1.5)) == 3.0
    assert any("could not keep a compiled kernel" in r.getMessage() for r in caplog.records)


@pytest.mark.skipif(kernels._KERNEL_CACHE is None, reason="no kernel cache folder in this environment")
def test_check_of_the_check_numbas_own_cache_raises_on_a_full_disk(monkeypatch):
    """Without the guard (numba's dispatcher as it comes) the same full disk is an error: the guard is
    what turns it into a fallback."""
    monkeypatch.setattr(kernels, "_KeptOrNot", lambda inner, folder: inner)
    twice = _fresh_kernel()
    _full_disk(twice)
    with pytest.raises(OSError, match="No space left"):
        twice(np.float64(1.5))


def test_an_odd_numba_num_threads_is_ignored_with_a_warning(tmp_path):
    done = _run({"DPCORE_CACHE_DIR": str(tmp_path), "NUMBA_NUM_THREADS": "0"}, "import dpcore.numerics.kernels; print('ok')")
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    assert "NUMBA_NUM_THREADS='0' is not a positive whole number: ignored" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("value, dropped", [("0", True), ("-3", True), ("many", True), ("", True), ("2", False)])
def test_which_numba_num_threads_are_odd(monkeypatch, value, dropped):
    monkeypatch.setenv("NUMBA_NUM_THREADS", value)
    if dropped:
        with pytest.warns(UserWarning, match="not a positive whole number"):
            kernels._odd_numba_threads()
    else:
        kernels._odd_numba_threads()
    assert ("NUMBA_NUM_THREADS" not in os.environ) == dropped


def test_check_of_the_check_numba_itself_refuses_that_variable(tmp_path):
    done = _run({"NUMBA_NUM_THREADS": "0"}, "import numba")
    assert done.returncode != 0 and "must be > 0" in done.stderr
