"""The local-vs-central trade-off: what each mechanism gives a record's owner and the model.

At one central target ε every mechanism is run (certified calibration where it
has one), and its local ε (protection of a record against the server),
certified central ε, accuracy and gap are collected.  A second series varies
the input-noise level of input perturbation and traces accuracy against the
local ε it buys.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

import numpy as np

from .exceptions import DPCoreError
from .experiment import RunConfig, run
from .mechanisms import REGISTRY

__all__ = ["tradeoff", "DEFAULT_NOISE_GRID"]

DEFAULT_NOISE_GRID = tuple(float(s) for s in np.geomspace(0.05, 20.0, 9))
_SKIP_FAMILIES = ("baseline", "distributed")


def _row(mech_id: str, config: RunConfig, data=None) -> dict:
    cls = REGISTRY[mech_id]
    row = {"mechanism": mech_id, "name": cls.name, "family": cls.family, "heuristic": cls.heuristic}
    try:
        res = run(config, data).to_dict()
    except DPCoreError as exc:
        row["error"] = str(exc)
        return row
    row.update({k: res.get(k) for k in (
        "calibration", "epsilon_target", "epsilon_certified", "epsilon_local", "accuracy_mean",
        "accuracy_std", "rmse_mean", "gap_mean", "gap_std", "sigma", "seconds", "accuracy_nonprivate")})
    return row


def tradeoff(
    dataset: str,
    epsilon: float,
    delta: float,
    *,
    model: str = "logreg",
    iterations: int = 100,
    repeats: int = 3,
    seed: int = 0,
    mechanisms: Sequence[str] | None = None,
    noise_grid: Sequence[float] = DEFAULT_NOISE_GRID,
    curve_mechanism: str = "input-kang",
    progress: Callable[[int, int, str], None] | None = None,
    data=None,
    **config_kw,
) -> dict:
    """Rows (one per mechanism) at a fixed central ε and the accuracy-vs-local-ε curve.

    ``epsilon_local`` is ``inf`` for central mechanisms (no protection against the
    server).  The curve runs ``curve_mechanism`` with fixed input noise σ (and
    labels through randomized response at ε/2, as in certified mode).  ``data``:
    a user's own :class:`~dpcore.datasets.Dataset` in place of ``dataset``.
    """
    base = RunConfig(dataset=dataset, model=model, epsilon=epsilon, delta=delta,
                     iterations=iterations, repeats=repeats, seed=seed, **config_kw)
    if mechanisms is None:
        mechanisms = [m for m, cls in REGISTRY.items()
                      if cls.family not in _SKIP_FAMILIES and model in cls.models]
    unknown = [m for m in mechanisms if m not in REGISTRY]
    if unknown:
        raise DPCoreError(f"unknown mechanism(s): {', '.join(unknown)}")
    total = len(mechanisms) + (len(noise_grid) if curve_mechanism else 0)
    done = 0
    rows = []
    for m in mechanisms:
        cls = REGISTRY[m]
        cal = "certified" if "certified" in cls.calibrations else "published"
        rows.append(_row(m, replace(base, mechanism=m, calibration=cal), data))
        done += 1
        if progress:
            progress(done, total, m)
    curve = []
    if curve_mechanism:
        for s in noise_grid:
            cfg = replace(base, mechanism=curve_mechanism, calibration="certified",
                          options=tuple(sorted({**dict(base.options), "sigma": float(s)}.items())))
            r = _row(curve_mechanism, cfg, data)
            r["input_sigma"] = float(s)
            curve.append(r)
            done += 1
            if progress:
                progress(done, total, f"{curve_mechanism} σ={s:.3g}")
    return {
        "dataset": dataset, "model": model, "epsilon": epsilon, "delta": delta,
        "iterations": iterations, "repeats": repeats, "rows": rows,
        "curve_mechanism": curve_mechanism, "curve": curve,
        "note": ("epsilon_local = ∞ (null in JSON) means no protection against the server; the curve's "
                 "labels go through randomized response at ε/2, so its local ε includes them."),
    }

