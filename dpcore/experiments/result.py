"""What a run measured: :class:`RunResult` (made by :func:`dpcore.experiments.run.run`), and the one
name every result gives the spec it ran, :attr:`SpecOf.spec`."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..metrics import summarize
from ..privacy.core import NoisePlan

__all__ = ["RunResult", "SpecOf"]


class SpecOf:
    """A result's spec under its one name, :attr:`spec`; ``config``, the name results gave it in
    0.1.0, still reads for one release, with a ``DeprecationWarning`` (a JSON record keeps its
    ``"config"`` key: that is a file format, not an attribute)."""

    @property
    def config(self) -> Any:
        warnings.warn(f"{type(self).__name__}.config is deprecated and will be removed in the next release: "
                      "use .spec", DeprecationWarning, stacklevel=2)
        return self.spec  # type: ignore[attr-defined]

    def spec_names(self) -> dict[str, Any]:
        """The head of every result's JSON record: its dataset and mechanism by id and by name, and its model."""
        return {"dataset": self.spec.dataset, "dataset_name": self.dataset_name,  # type: ignore[attr-defined]
                "model": self.spec.model, "mechanism": self.spec.mechanism,  # type: ignore[attr-defined]
                "mechanism_name": self.mechanism_name}  # type: ignore[attr-defined]


@dataclass(frozen=True, kw_only=True)
class RunResult(SpecOf):
    """What :func:`run` measured: R runs of one spec, their accuracy, gap and privacy.

    Arrays hold one entry per run (``seeds``); a run that diverged is marked in ``diverged`` and
    left out of every mean.  :meth:`to_dict` gives the command line's JSON record.

    Attributes
    ----------
    spec : RunSpec
        The spec that ran (``config`` is its 0.1.0 name, deprecated).
    accuracy, rmse : numpy.ndarray or None
        (R,) test accuracy (classification) or test RMSE (regression).
    gap : numpy.ndarray
        (R,) optimality gap L(θ) − L* on the training data.
    loss_star : float
        L*, from the exact ERM solution (``erm_method``; ``erm_certified`` when proven optimal).
    accuracy_nonprivate, rmse_nonprivate, accuracy_guess, rmse_guess : float or None
        The exact solution's test metric, and always answering the majority class (mean).
    epsilon_target, epsilon_certified, epsilon_local : float
        The ε asked for; what the noise that ran provably gives (replace-one, ``inf`` when nothing
        is proven); the per-record guarantee against the server (``inf`` for central mechanisms).
    sigma : float or None
        The mechanism's headline noise scale (its ``extras["noise"]`` says what it is).
    plan : NoisePlan or None
        What one run released, for certification and composition (``spec.dp_event()``).
    loss_trace, trace_steps : numpy.ndarray or None
        (k, R) training loss at the k recorded steps (``trace_steps``).
    seconds : float
        The runs' wall time.

    Examples
    --------
    >>> from dpcore import RunSpec, run
    >>> result = run(RunSpec("iris", mechanism="gradient-dpgd", epsilon=1.0, iterations=50, repeats=3))
    >>> result.accuracy.shape, result.spec.mechanism
    ((3,), 'gradient-dpgd')
    >>> result.epsilon_certified <= result.epsilon_target < result.epsilon_local
    True
    """

    spec: Any  # the RunSpec that ran (typed loosely: run.py, which defines RunSpec, imports this module)
    dataset_name: str
    mechanism_name: str
    task: str
    n_train: int
    d: int
    p: int
    seeds: list[int]
    accuracy: np.ndarray | None  # (R,) test accuracy (classification)
    rmse: np.ndarray | None  # (R,) test RMSE (regression)
    gap: np.ndarray  # (R,) optimality gap on the training data
    loss_star: float
    accuracy_nonprivate: float | None
    rmse_nonprivate: float | None
    sigma: float | None
    epsilon_target: float
    epsilon_certified: float
    epsilon_local: float
    seconds: float
    erm_method: str
    erm_certified: bool
    loss_trace: np.ndarray | None = None
    trace_steps: np.ndarray | None = None
    client_sizes: list[int] | None = None
    warnings: list[str] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)
    #: what one run released, for certification and composition (not in :meth:`to_dict`)
    plan: NoisePlan | None = None
    #: the test accuracy (RMSE) of always answering the training split's majority class (mean)
    accuracy_guess: float | None = None
    rmse_guess: float | None = None
    guess_class: str | None = None  # the class guessing answers, named
    #: (R,) which runs diverged (non-finite parameters or loss); left out of every mean
    diverged: np.ndarray | None = None

    def to_dict(self) -> dict[str, Any]:
        """The command line's JSON record (SPEC §7); infinite ε become ``null`` on output."""
        out: dict[str, Any] = {
            **self.spec_names(),
            "task": self.task,
            "calibration": self.spec.calibration,
            "n_train": self.n_train,
            "d": self.d,
            "p": self.p,
            "repeats": len(self.seeds),
            "sigma": self.sigma,
            "epsilon_target": self.epsilon_target,
            "epsilon_certified": self.epsilon_certified,
            "epsilon_local": self.epsilon_local,
            "loss_star": self.loss_star,
            "erm_method": self.erm_method,
            "erm_certified_optimum": self.erm_certified,
            "accuracy_nonprivate": self.accuracy_nonprivate,
            "rmse_nonprivate": self.rmse_nonprivate,
            "accuracy_guess": self.accuracy_guess,
            "rmse_guess": self.rmse_guess,
            "guess_class": self.guess_class,
            "seconds": self.seconds,
            "client_sizes": self.client_sizes,
            "warnings": list(self.warnings),
            "config": self.spec.to_dict(),
        }
        metrics = {"gap": self.gap}
        if self.accuracy is not None:
            metrics["accuracy"] = self.accuracy
        if self.rmse is not None:
            metrics["rmse"] = self.rmse
        for name, values in metrics.items():
            s = summarize(values, metric=name)
            out[f"{name}_mean"] = s["mean"]
            out[f"{name}_std"] = s["std"]
            out[f"{name}_ci95"] = [s["ci_low"], s["ci_high"]]
        runs = []
        out["diverged_runs"] = 0 if self.diverged is None else int(np.sum(self.diverged))
        for r, seed in enumerate(self.seeds):
            row = {"seed": seed, "gap": float(self.gap[r])}
            if self.diverged is not None and self.diverged[r]:
                row["diverged"] = True
            if self.accuracy is not None:
                row["accuracy"] = float(self.accuracy[r])
            if self.rmse is not None:
                row["rmse"] = float(self.rmse[r])
            runs.append(row)
        out["runs"] = runs
        for k, v in self.extras.items():
            out.setdefault(k, v)
        return out
