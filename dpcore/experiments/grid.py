"""The one grid runner: many specifications in, one tidy table out.

:func:`run_grid` serves the app (Compare, Local vs central, Distributed,
Theory's measured gaps), the command line and the presets.  The studies in
:mod:`dpcore.experiments.studies` and the presets only generate specs for it
and shape its table.  Its back end (:mod:`dpcore.experiments.sweep`) runs
the specs here, in local worker processes or on Dask, with an optional
on-disk result cache, as the :class:`~dpcore.experiments.context.Context`
says.  The numbers never depend on how they were run.

The table (a ``pandas.DataFrame``) has one row per spec × repeat:

* ``spec``: the position of the spec in the input list; ``task``: its content key;
* the tags given for the spec (a study's labels), one column each;
* every :class:`~dpcore.experiments.run.RunSpec` field, and ``option_<key>``
  for each mechanism option given;
* per spec: ``mechanism_name``, ``n_train``, ``d``, ``sigma`` (the mechanism's
  reported noise, see the glossary in :mod:`dpcore`), ``epsilon_target``,
  ``epsilon_certified``, ``epsilon_local`` (``inf`` when nothing is
  guaranteed), ``accuracy_nonprivate``, ``rmse_nonprivate``, ``accuracy_guess`` / ``rmse_guess``
  (always answering the training majority class / mean), ``loss_star``,
  ``task_seconds``, ``client_sizes`` (space-separated, distributed only);
* per repeat: ``run`` (0-based), ``run_seed``, ``accuracy`` or ``rmse``, ``gap``;
* ``error``: why the core refused the spec (then one row with ``run`` empty).

``DataFrame.attrs`` holds ``computed``, ``cached``, ``wall_seconds`` and
``compute_seconds``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import ParameterError
from ..metrics import summarize
from .context import Context, default_context
from .run import RunSpec, check_data_many, spec_list
from .sweep import Task, run_tasks, tidy_rows

__all__ = ["run_grid", "summaries", "METRICS"]

METRICS = ("accuracy", "rmse", "gap")

# per-spec columns a summary carries over from the table
_SPEC_COLUMNS = ("mechanism_name", "calibration", "epsilon_target", "epsilon_certified", "epsilon_local",
                 "sigma", "accuracy_nonprivate", "rmse_nonprivate", "accuracy_guess", "rmse_guess", "loss_star",
                 "n_train")


def run_grid(specs: Sequence[RunSpec], ctx: Context | None = None, *,
             tags: Sequence[Mapping[str, Any]] | None = None, dataset=None,
             partial: Callable[[list[dict[str, Any] | None]], None] | None = None,
             whole_budget: bool = False) -> pd.DataFrame:
    """Run every spec (R batched repeats each) and return the tidy table described above.

    ``tags[i]`` labels spec ``i`` (columns of its rows).  ``dataset``: a user's
    own :class:`~dpcore.datasets.Dataset` in place of each spec's registered
    one; such a grid runs in this process.  The same spec twice is refused (a
    grid is a set); a spec the core refuses gives an ``error`` row, the others run.  Data that
    break a bound a spec's mechanism needs (:func:`~dpcore.experiments.run.check_data`) refuse the
    whole grid, before anything runs: a :class:`~dpcore.exceptions.DatasetError`.
    ``partial(summaries)`` is called each time a spec's result exists, with
    :func:`summaries` of the specs done so far (``None`` for the rest): the same numbers,
    earlier.  ``whole_budget``: the specs still to compute must fit the work budget together
    (:func:`~dpcore.experiments.sweep.run_tasks`).
    """
    specs = spec_list(specs, "run_grid")
    ctx = default_context() if ctx is None else ctx
    if dataset is not None:  # the door: data a spec's mechanism cannot take refuse the whole grid
        check_data_many(specs, dataset)
    if tags is not None and (isinstance(tags, (str, bytes, Mapping)) or not all(isinstance(t, Mapping) for t in tags)):
        raise ParameterError(f"run_grid: tags must be one mapping per spec (column → value). Got {tags!r:.80} instead.")
    tags = [dict(t) for t in tags] if tags is not None else [{} for _ in specs]
    if len(tags) != len(specs):
        raise ParameterError(f"run_grid: {len(tags)} tags for {len(specs)} specs: give one mapping per spec")
    tasks = [Task(spec, tags=(("spec", i), *tag.items())) for i, (spec, tag) in enumerate(zip(specs, tags))]
    on_result = None
    if partial is not None:
        so_far: list[dict[str, Any] | None] = [None] * len(specs)

        def on_result(task: Task, record: dict) -> None:
            i = dict(task.tags)["spec"]
            so_far[i] = summaries(pd.DataFrame(tidy_rows([task], {task.key: record})), len(specs))[i]
            partial(list(so_far))

    res = run_tasks(tasks, ctx, dataset=dataset, on_result=on_result, whole_budget=whole_budget)
    df = pd.DataFrame(res.rows())
    if "spec" in df:  # the position first, then the key, as documented
        df.insert(0, "spec", df.pop("spec"))
    df.attrs.update(computed=res.computed, cached=res.cached, wall_seconds=res.wall_seconds,
                    compute_seconds=sum(r.get("wall_seconds", 0.0) for r in res.results.values()))
    return df


def summaries(df: pd.DataFrame, n_specs: int) -> list[dict[str, Any]]:
    """One summary per spec of a :func:`run_grid` table, in spec order.

    A refused spec gives ``{"error": …}``; otherwise its per-spec columns, the
    client sizes as a list, ``seconds``, and for each metric ``<m>_mean``,
    ``<m>_std`` and ``<m>_ci95`` over the repeats (:func:`dpcore.metrics.summarize`)
    with the per-repeat values under ``<m>_runs``.
    """
    out: list[dict[str, Any]] = [{} for _ in range(n_specs)]
    for i, rows in df.groupby("spec", sort=True):
        first = rows.iloc[0]
        if isinstance(first.get("error"), str):
            out[int(i)] = {"error": first["error"]}
            continue
        rec: dict[str, Any] = {k: _scalar(first[k]) for k in _SPEC_COLUMNS if k in rows}
        rec["seconds"] = _scalar(first.get("task_seconds"))
        sizes = first.get("client_sizes")
        rec["client_sizes"] = [int(s) for s in sizes.split()] if isinstance(sizes, str) else None
        rows = rows.sort_values("run")
        rec["diverged_runs"] = int(rows["diverged"].fillna(False).astype(bool).sum()) if "diverged" in rows else 0
        for metric in METRICS:
            if metric in rows and rows[metric].notna().any():
                values = rows[metric].to_numpy(dtype=float)
                s = summarize(values, metric=metric)
                rec[f"{metric}_mean"], rec[f"{metric}_std"] = s["mean"], s["std"]
                rec[f"{metric}_ci95"] = [s["ci_low"], s["ci_high"]]
                rec[f"{metric}_runs"] = values
        out[int(i)] = rec
    return out


def _scalar(v: Any) -> Any:
    """A table cell as a plain Python value (``None`` for a missing one)."""
    if v is None:
        return None
    if isinstance(v, (np.floating, float)):
        return None if np.isnan(v) else float(v)
    if isinstance(v, np.integer):
        return int(v)
    return v
