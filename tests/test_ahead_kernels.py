"""No compile in front of a class (issue 69): ``warm_kernels`` (run by Prepare for class and, in a second
process, when the app's server starts) compiles every compiled kernel for the argument types the models
pass, so the runs a class asks for afterwards compile nothing more.  Checked in a fresh process (this
one's kernels may be compiled by other tests): the kernels' signatures counted after the warm-up and after
real runs of every mechanism family that calls a kernel; and the check of the check: a warm-up that leaves
the MLP out is caught by the MLP's runs compiling its kernel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dpcore.numerics import kernels

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent("""
    import json, sys
    from dpcore import RunSpec, run
    from dpcore.numerics import kernels
    from dpcore.experiments.ahead import warm_kernels

    def signatures():
        return {name: len(f.signatures) for name, f in vars(kernels).items() if hasattr(f, "signatures")}

    warm_kernels(tuple(sys.argv[1].split(",")))
    warmed = signatures()
    for spec in (RunSpec("adult", mechanism="gradient-dpgd", iterations=2, repeats=2),
                 RunSpec("adult", mechanism="gradient-dpsgd", iterations=2, repeats=2),
                 RunSpec("adult", mechanism="objective-gaussian", repeats=2),
                 RunSpec("adult", model="mlp", mechanism="gradient-dpsgd", iterations=1, repeats=1),
                 RunSpec("adult", model="mlp", mechanism="gradient-dpgd", iterations=1, repeats=2),
                 RunSpec("synthetic-regression", model="linreg", mechanism="gradient-dpgd", iterations=2, repeats=2)):
        run(spec)
    print(json.dumps({"warmed": warmed, "after": signatures()}))
""")


def _signatures(tmp_path, models: str) -> dict:
    env = {**os.environ, "DPCORE_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    folder = kernels.kernel_cache_folder()  # the compiled kernels this machine keeps: loaded, not compiled again
    if folder is not None:
        env["NUMBA_CACHE_DIR"] = str(folder)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, models], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not kernels.compiled(), reason="numba is off: no compiled kernels")
@pytest.mark.parametrize("models, caught", [("logreg,linreg,mlp", None), ("logreg,linreg", "_clipped_block")],
                         ids=["every model", "the MLP left out"])
def test_after_the_warm_up_no_run_compiles_a_kernel(tmp_path, models, caught):
    got = _signatures(tmp_path, models)
    grown = sorted(name for name, count in got["after"].items() if count > got["warmed"].get(name, 0))
    if caught is None:
        assert grown == [], f"compiled after the warm-up: {grown} ({got})"
        assert got["warmed"]["_clipped_block"] and got["warmed"]["_glm_coef"] and got["warmed"]["_sampled_sums"]
    else:
        assert caught in grown, got
