"""Stored task records: what a grid's result cache and a shipped table may hold, and the checks
every read applies (SPEC §8: every read verifies).

A record is used only if it is a JSON object whose key and configuration are the task's own, whose
fields have the types and ranges declared here (:data:`RESULT_FIELDS`, :data:`RUN_FIELDS`), and whose
certified ε (or refusal), target and training size recompute from its configuration; a shipped table
(:func:`check_table`) is held to the same rule row by row.  :mod:`dpcore.experiments.sweep` keys,
computes and stores the records; this module only reads them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import Any

import pandas as pd

from ..exceptions import DPCoreError, moved_attributes
from ..jsonutil import dumps
from ..mechanisms import get_mechanism
from ..privacy.core import certificate_error, certify, same_certificate
from .context import Context, default_context
from .run import RunSpec, noise_plan, problem_data

__all__ = ["CONFIG_COLUMNS", "RESULT_COLUMNS", "RESULT_FIELDS", "RUN_FIELDS", "check_record",
           "check_stored_record", "check_table", "config_from_record", "config_record"]


def config_record(config: RunSpec) -> dict[str, Any]:
    rec = config.to_dict()
    rec["options"] = {k: rec["options"][k] for k in sorted(rec["options"])}
    return rec


def config_from_record(rec: dict[str, Any]) -> RunSpec:
    rec = dict(rec)
    rec["options"] = tuple(sorted(rec.get("options", {}).items()))
    names = {f.name for f in fields(RunSpec)}
    return RunSpec(**{k: v for k, v in rec.items() if k in names})


#: a task's configuration columns in a tidy table
CONFIG_COLUMNS = [f.name for f in fields(RunSpec) if f.name != "options"]
#: a task's results in each of its rows (``d``, the data's dimension, replaces the setting of that name)
RESULT_COLUMNS = ("mechanism_name", "n_train", "d", "sigma", "epsilon_target", "epsilon_certified",
                   "epsilon_local", "accuracy_nonprivate", "rmse_nonprivate", "accuracy_guess", "rmse_guess",
                   "loss_star")




def check_record(key: str, config: RunSpec | None, ctx: Context | None = None) -> Callable[[Any], dict]:
    """What reads a stored task record: it is used only if it is a JSON object whose key and
    configuration are the task's own, whose fields have the types and ranges of
    :data:`RESULT_FIELDS` and :data:`RUN_FIELDS`, and whose certified ε (or refusal) the code
    recomputes from the configuration (a cheap function of it: the noise plan, not the training);
    anything else (torn, edited, forged, a FIFO or device in its place, another task's record) is
    logged, ignored and computed again."""
    def check(rec: Any) -> dict:
        check_stored_record(rec, key, config)
        if config is not None:
            result = rec["result"]
            claims = (key, "error" in result, *(result.get(f) for f in _CERTIFICATE_CLAIMS))
            (ctx or default_context()).verified.get(claims, lambda: _check_certificate(result, config, ctx))
        return rec
    return check


#: what :func:`_check_certificate` reads of a stored result (with whether it holds an "error")
_CERTIFICATE_CLAIMS = ("error", "epsilon_certified", "n_train", "epsilon_target")
#: The records a context has verified are its :attr:`~dpcore.experiments.context.Context.verified`,
#: by task key (the configuration and the code) and what they claim: a record read again (a second
#: click, another session) is the same function of the same code, so its accounting is not run again
#: (0.7 s of the 0.8 s a cached 72-run grid took to read).  A check that fails is not remembered.
#: ``VERIFIED``, the module-level memo of 0.1.0, still reads for one release (the default context's).
__getattr__ = moved_attributes(__name__, {"VERIFIED": ("Context.verified", lambda: default_context().verified)})


_NUMBER = (int, float)
#: the fields of a stored task result: (types, low, high); ``None`` is allowed wherever a value may be absent
RESULT_FIELDS: dict[str, tuple[tuple[type, ...], float, float]] = {
    "n_train": ((int,), 1, math.inf), "d": ((int,), 1, math.inf), "p": ((int,), 1, math.inf),
    "sigma": (_NUMBER, 0.0, math.inf), "epsilon_target": (_NUMBER, 0.0, math.inf),
    "epsilon_certified": (_NUMBER, 0.0, math.inf), "epsilon_local": (_NUMBER, 0.0, math.inf),
    "loss_star": (_NUMBER, -math.inf, math.inf), "accuracy_nonprivate": (_NUMBER, 0.0, 1.0),
    "rmse_nonprivate": (_NUMBER, 0.0, math.inf), "accuracy_guess": (_NUMBER, 0.0, 1.0),
    "rmse_guess": (_NUMBER, 0.0, math.inf), "seconds": (_NUMBER, 0.0, math.inf),
    "wall_seconds": (_NUMBER, 0.0, math.inf),
}
#: … and of each of its runs
RUN_FIELDS: dict[str, tuple[tuple[type, ...], float, float]] = {
    "seed": ((int,), 0, math.inf), "accuracy": (_NUMBER, 0.0, 1.0), "rmse": (_NUMBER, 0.0, math.inf),
    "gap": (_NUMBER, -math.inf, math.inf),
}


def _check_fields(obj: dict, declared: dict, where: str) -> None:
    for name, (types, low, high) in declared.items():
        value = obj.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, types):
            raise ValueError(f"{where}{name} is not a number of the right kind")
        if not (low <= value <= high):
            raise ValueError(f"{where}{name} = {value!r} is outside [{low:g}, {high:g}]")


def check_stored_record(rec: Any, key: str, config: RunSpec | None) -> None:
    """Raise ValueError unless ``rec`` is what :func:`run_tasks` writes for this task."""
    if not isinstance(rec, dict) or rec.get("key") != key:
        raise ValueError("written for another task")
    if config is not None and rec.get("config") != json.loads(dumps(config_record(config))):
        raise ValueError("its configuration is not the task's")
    result = rec.get("result")
    if not isinstance(result, dict):
        raise ValueError("no result object")
    if "error" in result:
        if not isinstance(result["error"], str):
            raise ValueError("an error that is not text")
        return
    runs = result.get("runs")
    if not isinstance(runs, list) or not runs or not all(isinstance(r, dict) for r in runs):
        raise ValueError("no list of runs")
    if config is not None and len(runs) != config.repeats:
        raise ValueError(f"{len(runs)} runs for {config.repeats} repeats")
    for r in runs:
        for name, value in r.items():
            if value is not None and not isinstance(value, (bool, int, float, str)):
                raise ValueError(f"run field {name!r} is not a number")
        _check_fields(r, RUN_FIELDS, "a run's ")
    _check_fields(result, RESULT_FIELDS, "")
    for name in ("warnings", "client_sizes"):
        if result.get(name) is not None and not isinstance(result[name], list):
            raise ValueError(f"{name} is not a list")


def _check_certificate(result: dict, config: RunSpec, ctx: Context | None) -> None:
    """Recompute what a stored record claims of privacy and of its data: the refusal, or the
    certified ε, the target and the training rows (the noise plan's accounting; no training)."""
    try:
        plan = noise_plan(config, ctx)
    except DPCoreError as exc:
        if result.get("error") != str(exc):
            raise ValueError("a refusal the code does not give for this configuration") from None
        return
    except NotImplementedError:  # a plan the data decide (the clients' split): known only by training
        plan = None
    if "error" in result:
        if plan is not None:
            raise ValueError("a refusal of a configuration the code runs")
        return
    if plan is not None:
        claimed = result.get("epsilon_certified")
        certified = certify(plan, config.delta)
        if not same_certificate(claimed, certified, certificate_error(plan, config.delta)):  # another CPU's rounding
            raise ValueError(f"certified ε {claimed!r}, but the configuration's noise certifies {certified!r}")
    data, _ = problem_data(config)
    if result.get("n_train") != data.n:
        raise ValueError(f"n_train {result.get('n_train')!r}, but the data have {data.n} training rows")
    target = config.epsilon if get_mechanism(config.mechanism).private else None  # ∞ is stored as null
    if result.get("epsilon_target") != target:
        raise ValueError(f"target ε {result.get('epsilon_target')!r}, not the configuration's")


def check_table(table: pd.DataFrame, configs: Sequence[dict[str, Any]], ctx: Context | None = None) -> None:
    """Raise ``ValueError`` (saying what) unless ``table`` is the tidy table :func:`tidy_rows` makes of
    the tasks ``configs`` (a sweep record's: each a configuration with its ``key``): the same rule as
    :func:`check_record`, for a shipped table.  Every column :data:`RESULT_FIELDS` and
    :data:`RUN_FIELDS` declare holds numbers in their ranges; every row's settings are its task's;
    each task has its repeats' rows (or one refusal); and each task's certified ε, target, training
    rows or refusal are recomputed from its configuration (:func:`_check_certificate`)."""
    if not isinstance(configs, list) or not configs or not all(isinstance(c, dict) for c in configs):
        raise ValueError("its record lists no configurations")
    missing = [c for c in ("task", "epsilon_certified", "error", "dataset", "mechanism", "epsilon")
               if c not in table.columns]
    if missing or table.empty:
        raise ValueError(f"no column {missing[0]!r}" if missing else "no rows")
    for name, (_, low, high) in {**RESULT_FIELDS, **RUN_FIELDS}.items():
        if name not in table.columns:
            continue
        col = table[name]
        if col.dtype == bool or not (pd.api.types.is_numeric_dtype(col) or col.isna().all()):
            raise ValueError(f"column {name!r} holds text where numbers belong")
        values = col.dropna().to_numpy(dtype=float)
        bad = values[~((values >= low) & (values <= high))]
        if bad.size:
            raise ValueError(f"{name} = {bad[0]!r} is outside [{low:g}, {high:g}]")
    by_key = {}
    for c in configs:
        try:
            by_key[c["key"]] = (c, config_from_record(c))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"a configuration of its record is not one this code runs ({exc})") from None
    errors = table["error"].where(table["error"].notna(), None)
    for key, rows in table.groupby("task", sort=False):
        if key not in by_key:
            raise ValueError(f"rows of task {key!r}, which its record does not list")
        stored, config = by_key[key]
        for name in (c for c in CONFIG_COLUMNS if c not in RESULT_COLUMNS):
            if name not in table.columns:  # a column older tables lack: the setting at its default
                if not _same_setting(getattr(config, name), None):
                    raise ValueError(f"task {key}: no column {name!r} for its setting {getattr(config, name)!r}")
                continue
            want, got = getattr(config, name), rows[name].iloc[0]
            if not (rows[name] == got).all() and not rows[name].isna().all():
                raise ValueError(f"task {key}: its rows disagree on {name}")
            if not _same_setting(want, got):
                raise ValueError(f"task {key}: {name} = {got!r} in the table, {want!r} in its configuration")
        refusal = errors[rows.index].dropna()
        if len(refusal):
            result = {"error": str(refusal.iloc[0])}
            if len(rows) != 1:
                raise ValueError(f"task {key}: a refusal and runs")
        else:
            if len(rows) != config.repeats:
                raise ValueError(f"task {key}: {len(rows)} runs for {config.repeats} repeats")
            for name in RUN_FIELDS:  # a metric a run has, every run of the task has (else the mean moves)
                if name in rows and 0 < rows[name].isna().sum() < len(rows):
                    raise ValueError(f"task {key}: {name} is missing in some of its runs")
            first = rows.iloc[0]
            result = {f: (None if pd.isna(first[f]) or (f.startswith("epsilon") and first[f] == math.inf)
                          else float(first[f])) for f in ("epsilon_certified", "epsilon_target")}
            result["n_train"] = None if pd.isna(first.get("n_train")) else int(first["n_train"])
        claims = (key, "check_table", *(result.get(f) for f in _CERTIFICATE_CLAIMS))
        (ctx or default_context()).verified.get(claims, lambda: _check_certificate(result, config, ctx))
    absent = set(by_key) - set(table["task"])
    if absent:
        raise ValueError(f"{len(absent)} configurations of its record have no rows")


def _same_setting(want: Any, got: Any) -> bool:
    """A configuration's value and a table cell read back by pandas (a number as float, ``None`` as NaN,
    a tuple as its text)."""
    if want is None or (isinstance(want, tuple) and not want and (got is None or pd.isna(got))):
        return got is None or (not isinstance(got, str) and pd.isna(got))
    if isinstance(want, bool) or isinstance(want, str):
        return str(want) == str(got)
    if isinstance(want, tuple):
        return str(want) == str(got)
    try:
        return float(want) == float(got)
    except (TypeError, ValueError):
        return False
