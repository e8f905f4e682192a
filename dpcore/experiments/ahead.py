"""Checks started ahead, each in a second process, while this one does other work: the pure accounting
"Prepare for class" needs last and a 2-core machine can do beside the lesson's runs.

* :class:`SpentAhead`: what the shipped tunings' searches spent, recomputed
  (:func:`~dpcore.experiments.tune.shipped_tuning` with ``spent=True``: about 35 s of one core on Adult);
* :class:`ResultsAhead`: a shipped preset's results verified, their certificates recomputed
  (:func:`~dpcore.experiments.presets.shipped_results`: Paper figures' first figure, 50 s of one core);
* :class:`KernelsAhead`: the compiled kernels compiled into the user's kernel cache (:func:`warm_kernels`:
  about 5 s of CPU with an empty cache), so the first run a class asks for loads them instead.

A second process leaves nothing but the marks of what it verified in the cache folder (a tuning's rows:
signed with this user's key, :mod:`dpcore.verified`; a preset's files: the results cache's mark of
their content and this code) and the calibrations it computed (re-certified by every reader).  The
reader in this process then finds them and does not check again.  Nothing else it says is trusted: what
it did not mark (it failed, was killed, or the marks cannot be kept) is checked here as before, and a
file it refused is refused here too, with the same one-line reason.

Run as ``python -m dpcore.experiments.ahead spent DATA_DIR DATASET:MODEL …``, ``… results DATA_DIR
RESULTS_DIR ERM_DIR PRESET …`` or ``… kernels`` (what the classes start; an empty folder argument: the
default).
"""
from __future__ import annotations

import functools
import logging
import os
import subprocess
import sys
from collections.abc import Sequence

import numpy as np

from ..numerics import kernels, linalg
from ..models import make_model
from .context import Context
from .presets import shipped_results
from .tune import shipped_tuning

__all__ = ["SpentAhead", "ResultsAhead", "KernelsAhead", "kernels_ahead", "warm_kernels"]

_LOG = logging.getLogger(__name__)


def _folder(path) -> str:
    return "" if path is None else os.fspath(path)


class _Ahead:
    """One second process running ``python -m dpcore.experiments.ahead ARGS``: :meth:`start` starts it
    (once), :meth:`wait` waits for its end (``True`` when it ended well; the caller then reads as usual,
    from the marks)."""

    def __init__(self, args: list[str], said: str):
        self.args, self.said = args, said
        self._proc: subprocess.Popen | None = None

    def start(self) -> str:
        if self._proc is None:
            try:
                self._proc = subprocess.Popen([sys.executable, "-m", __name__, *self.args], stdin=subprocess.DEVNULL,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            except OSError as exc:  # no second process here: the reader checks everything itself
                _LOG.info("could not start a check in a second process (%s)", exc)
        return f"{self.said}: started in a second process"

    def wait(self) -> bool:
        if self._proc is None:
            return False
        return self._proc.wait() == 0


class SpentAhead(_Ahead):
    """The tunings ``pairs`` ((dataset, model)) of the data folder ``data_dir`` checked for what their
    searches spent."""

    def __init__(self, data_dir, pairs: Sequence[tuple[str, str]]):
        self.data_dir, self.pairs = data_dir, list(pairs)
        names = ", ".join(f"{d} ({m})" for d, m in self.pairs)
        super().__init__(["spent", _folder(data_dir), *(f"{d}:{m}" for d, m in self.pairs)],
                         f"what the shipped tuning's searches spent, {names}")

    def start(self) -> str:
        return super().start() if self.pairs else f"{self.said}: nothing to start"

    def read(self, dataset: str, model: str) -> str:
        """What a tuning's searches spent, read here once the second process has ended (its marks)."""
        self.wait()
        record = shipped_tuning(dataset, model, data_dir=self.data_dir, spent=True)
        return (f"no tuning shipped for {dataset} ({model}): nothing to recompute" if record is None else
                f"what the shipped tuning's {len(record.get('rows', []))} searches spent, {dataset} ({model}): recomputed")


class ResultsAhead(_Ahead):
    """The shipped results of ``presets`` verified into ``ctx``'s results cache (its data folder, its
    results and exact-solution folders: where its own reader looks for the marks and calibrations)."""

    def __init__(self, ctx: Context, presets: Sequence[str]):
        super().__init__(["results", _folder(ctx.data_dir), _folder(ctx.results_dir), _folder(ctx.erm_dir),
                          *presets], f"the shipped results of {', '.join(presets)} verified")


class KernelsAhead(_Ahead):
    """:func:`warm_kernels` in a second process (numba holds this process's interpreter while it compiles):
    its kernels land in the kernel cache folder, which this process's first call then loads."""

    def __init__(self):
        super().__init__(["kernels"], "the compiled kernels compiled")


# process: one a process, what it holds is this process's child
@functools.cache
def kernels_ahead() -> KernelsAhead:
    """This process's one :class:`KernelsAhead`, started at most once (a server's start and its Prepare for
    class share it)."""
    return KernelsAhead()


def warm_kernels(models: Sequence[str] = ("logreg", "linreg", "mlp")) -> str:
    """Compile (or load from the kernel cache, :func:`dpcore.numerics.kernels.kernel_cache_folder`) every compiled
    kernel for the argument types the models pass it: each model's own passes (loss and gradient, clipped
    sums with and without the loss, sampled mini-batches read in place, Hessians) on a small sparse
    shared matrix and on per-run data, so that no run compiles one in front of a class
    (``tests/test_ahead_kernels.py``: real runs after it compile nothing more)."""
    if not kernels.compiled():
        return "no compiled kernels here (numba is off): nothing to compile"
    rng = np.random.default_rng(0)
    n, d, runs = 2000, 64, 2  # n·d ≥ linalg.MIN_ENTRIES at ≤ 2 non-zeros a row: a sparse twin
    X = np.zeros((n, d))
    X[np.arange(n), rng.integers(0, d, n)] = 1.0
    X[np.arange(n), rng.integers(0, d, n)] += 0.5
    X = linalg.share(X / np.linalg.norm(X, axis=1, keepdims=True))
    idx = rng.integers(0, n, (runs, 16))
    for model_id in models:
        model = make_model(model_id, lam=1e-3)
        y = rng.choice([-1.0, 1.0], n) if model_id != "linreg" else rng.uniform(-1.0, 1.0, n)
        theta = 0.01 * rng.standard_normal((runs, model.n_params(d)))
        model.clipped_grad_sum(theta, X[idx], y[idx], 1.0)  # per-run data (R, B, d): a gathered mini-batch
        model.sampled_clipped_sum(theta, X, y, idx, None, 1.0, linalg.row_norms(X), linalg.run_groups(runs))
        for labels in (y, linalg.share(y.copy())):  # a copy's labels, and a dataset's (read-only)
            model.loss_and_grad(theta, X, labels)
            model.clipped_grad_sum(theta, X, labels, 1.0)
            model.clipped_grad_sum(theta, X, labels, 1.0, weights=np.ones(n))
            model.clipped_grad_sum_and_loss(theta, X, labels, 1.0)
            if model_id != "mlp":
                model.hessian(theta, X, labels)
                many = np.repeat(theta, kernels.GLM_GRAD_RUNS, axis=0)  # enough runs for one read of X
                model.grad(many, X, labels)
                model.clipped_grad_sum(many, X, labels, 1.0)
    return f"the compiled kernels of {', '.join(models)}: compiled or loaded"


def _main(argv: Sequence[str]) -> int:
    kind, *rest = argv
    status = 0
    if kind == "spent":
        data_dir, pairs = rest[0] or None, rest[1:]
        for pair in pairs:
            dataset, _, model = pair.partition(":")
            try:
                shipped_tuning(dataset, model, data_dir=data_dir, spent=True)
            except Exception:  # the reader in the first process checks this file again and says why
                status = 1
    elif kind == "results":
        data_dir, results_dir, erm_dir, presets = rest[0] or None, rest[1] or None, rest[2] or None, rest[3:]
        ctx = Context(workers=1, data_dir=data_dir, results_dir=results_dir, erm_dir=erm_dir)
        for preset in presets:
            try:
                shipped_results(preset, ctx=ctx)
            except Exception:  # the same: checked again there
                status = 1
    elif kind == "kernels":
        try:
            warm_kernels()
        except Exception:  # a run compiles what is missing, as without this process
            status = 1
    else:
        return 2
    return status


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
