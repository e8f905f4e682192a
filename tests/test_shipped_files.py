"""Every kind of bad file in place of every kind of shipped file, through every reader of that kind
(dpcore/shipped.py; docs/spec.md §9): a number shipped with the package is shown only if it is the
file that was shipped and its numbers are in range and its certificates are this code's.

The matrix is generated from one declaration, :data:`FORGERIES` (what a bad file is) × :data:`TARGETS`
(one small shipped file of each kind, with its readers): each forged file is written into a copy of
the data folder, and every reader of its kind must refuse it (a one-line
:class:`~dpcore.shipped.ShippedFileError`) or compute afresh (``None`` to the caller, logged), within
seconds (a FIFO or ``/dev/zero`` in place of a file must not block a read), and never hand on a forged
number.  A forgery that changes the file's content is also tested *re-listed*: the forger then
runs :func:`dpcore.shipped.record`, so the manifest vouches for the forged bytes and the schema, the
ranges and the recomputed certificates must still catch it.

An in-range number re-listed (an accuracy of 0.999777 where 0.7 was computed, with the manifest
rewritten to match) cannot be told from the real one without training again, which no reader does:
that combination is not tested (except for the exact reference, whose loss is recomputed from its θ).

Check of the check: the untouched copy of each kind (as shipped, and rewritten byte for byte through
the same editors with nothing changed, then re-listed) reads through the same readers and shows the
shipped numbers, so a reader that refused everything would fail here.

Besides the library readers (the whole matrix), a forged file of each kind goes through the views that
show it (``streamlit.testing.v1.AppTest``: :data:`VIEW_CASES`, one or more per kind, and each view with
the untouched file) and through the command line (a subprocess with ``DPCORE_DATA_DIR`` and a timeout)
where a command reads that kind cheaply: only a tuning does (``run --tuned``).  No command reads a
paper figure's results; Compare's first preset is read by ``prepare``, which on a refusal computes the
whole preset (minutes), and the exact reference by any MLP run, which on a refusal solves it (minutes):
their command-line readers are the library readers tested here.  No view reads the exact reference
without training an MLP, so it has no view case.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpcore import erm, shipped
from dpcore.datasets import data_folder
from dpcore.experiments import presets, studies, tune
from dpcore.experiments.run import RunSpec, problem_data
from hostile import time_limit  # tests/hostile.py

ROOT = Path(__file__).resolve().parent.parent
#: the checkout's data folder, whose files are copied (never written)
SOURCE = data_folder()
#: a small paper-figure preset (its table is 158 kB, its record 58 kB; 004-fig1's are 925 and 281 kB)
PRESET = "001-fig4"
#: the shipped exact reference of the MLP on Adult, found by its place (its name hashes the code) and
#: its size (10,816 parameters; the logistic ones shipped beside it have 103)
REFERENCE = max((SOURCE / "references").glob("erm-*.json"), key=lambda p: p.stat().st_size)
REFERENCE_KEY = REFERENCE.stem[len("erm-"):]
#: a reader's time limit (seconds): a read that blocks fails the test instead.  A thing in a file's
#: place (a FIFO, /dev/zero, a huge file) is refused before anything is computed: seconds; a file read
#: through may first recompute its certificates (Compare's first preset: 8 s on an idle core)
SECONDS, PLACED_SECONDS = 60, 10


# ------------------------------------------------------------------------------------------ editors
# Each forgery is an edit of the shipped bytes.  The editors rewrite a file the way it was written
# (the CSV through the csv module, as pandas writes it; JSON through json.dumps), so an edit that
# changes nothing re-lists a file that must still read (the check of the check below).


def _json_edit(change: Callable[[Any], None]) -> Callable[[bytes], bytes]:
    def edit(raw: bytes) -> bytes:
        doc = json.loads(raw)
        change(doc)
        return json.dumps(doc, indent=1).encode()  # a float NaN or inf is written as the token NaN / Infinity
    return edit


def _csv_edit(column: str | None = None, value: str | None = None, whole_task: bool = False) -> Callable[[bytes], bytes]:
    """The first row's ``column`` set to the text ``value`` (with ``whole_task``: every row of its task)."""
    def edit(raw: bytes) -> bytes:
        header, *body = list(csv.reader(io.StringIO(raw.decode())))
        if column is not None:
            i, t = header.index(column), header.index("task")
            for row in body:
                if row is body[0] or (whole_task and row[t] == body[0][t]):
                    row[i] = value
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows([header, *body])
        return out.getvalue().encode()
    return edit


def _csv_header(old: str, new: str) -> Callable[[bytes], bytes]:
    """The header's column ``old`` named ``new`` (a name the header already holds: pandas reads the
    second as "new.1", so the reader finds no ``old``)."""
    def edit(raw: bytes) -> bytes:
        first, rest = raw.split(b"\n", 1)
        names = first.decode().split(",")
        return ",".join(new if n == old else n for n in names).encode() + b"\n" + rest
    return edit


def _csv_decimal(column: str) -> Callable[[bytes], bytes]:
    """The first row's whole number in ``column`` written as a decimal ("0" as "0.0": the same value)."""
    def edit(raw: bytes) -> bytes:
        header, *body = list(csv.reader(io.StringIO(raw.decode())))
        body[0][header.index(column)] += ".0"
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows([header, *body])
        return out.getvalue().encode()
    return edit


def _set(*path, value) -> Callable[[Any], None]:
    """``doc[path[0]][path[1]]… = value``."""
    def change(doc):
        for p in path[:-1]:
            doc = doc[p]
        doc[path[-1]] = value
    return change


def _both(*changes) -> Callable[[Any], None]:
    def change(doc):
        for c in changes:
            c(doc)
    return change


def _first_tuned_row(key, value) -> Callable[[Any], None]:
    return _set("rows", 0, key, value=value)


def _first_setting(key, value) -> Callable[[Any], None]:
    return _set("rows", 0, "setting", key, value=value)


def _first_classroom_row(key, value) -> Callable[[Any], None]:
    return _set("rows", 0, key, value=value)


def _first_config(key, value) -> Callable[[Any], None]:
    return _set("configs", 0, key, value=value)


@functools.cache
def _another_reference() -> bytes:
    """Another dataset's exact reference (Breast Cancer, logistic regression): a real solution, of
    another shape, as ``prepare --ship`` would write it."""
    data, model = problem_data(RunSpec(dataset="breast-cancer", model="logreg"))
    return json.dumps(erm._solution_record(_SOLVE(model, data.X_train, data.y_train))).encode()


_SOLVE = erm.solve_erm  # the solver itself, before a test replaces it


# ------------------------------------------------------------------------------------------ targets


@dataclass
class Read:
    """What a reader did: ``shown``, what it hands on to be shown (``None``: nothing, it refused or
    computes afresh); ``said``, its one-line error or what it logged."""

    shown: Any
    said: str = ""


@dataclass(frozen=True)
class Target:
    """One shipped file of a kind, with its readers and what they show of the untouched file."""

    rel: str  # relative to the data folder
    other: Callable[[], bytes]  # another preset's / dataset's file of the kind, to put in its place
    readers: tuple[str, ...]  # names of READERS
    raises: bool  # its readers refuse with ShippedFileError (else: None, logged, computed afresh)


def _results_table_other() -> bytes:
    return (SOURCE / "results" / "004-fig1.csv").read_bytes()


def _results_record_other() -> bytes:
    return (SOURCE / "results" / "004-fig1.json").read_bytes()


TARGETS: dict[str, Target] = {
    "results-table": Target(f"results/{PRESET}.csv", _results_table_other, ("shipped_results",), True),
    "results-record": Target(f"results/{PRESET}.json", _results_record_other, ("shipped_results",), True),
    "classroom": Target("results/compare-classroom.json",
                        lambda: (SOURCE / "results" / f"{PRESET}.json").read_bytes(),
                        ("shipped_classroom_compare",), False),
    "tuned": Target("tuned/adult-logreg.json",
                    lambda: (SOURCE / "tuned" / "synthetic-regression-linreg.json").read_bytes(),
                    ("shipped_tuning", "tuned_setting", "compare_tuned_grid"), True),
    "reference": Target(f"references/{REFERENCE.name}", _another_reference, ("reference_store",), False),
}


# ----------------------------------------------------------------------------------------- forgeries


@dataclass(frozen=True)
class Forgery:
    """A bad file: an edit of the shipped bytes per target (``edits``), or a thing put in the file's
    place (``place``, for every target).  ``relisted``: the targets whose re-listed variant is
    tested (default: every edited one; a placed thing cannot be listed)."""

    edits: dict[str, Callable[[bytes], bytes]] = field(default_factory=dict)
    place: Callable[[Path, str], None] | None = None
    relisted: tuple[str, ...] | None = None


def _every(edit: Callable[[bytes], bytes]) -> dict[str, Callable[[bytes], bytes]]:
    return {name: edit for name in TARGETS}


def _oversized(path: Path, kind: str) -> None:
    with open(path, "wb") as fh:  # sparse: no disk written
        fh.truncate(shipped.KINDS[kind].max_bytes + 1)


def _dev_zero(path: Path, kind: str) -> None:
    path.symlink_to("/dev/zero")


def _fifo(path: Path, kind: str) -> None:
    os.mkfifo(path)


#: THE declaration: every kind of bad file, for every kind of shipped file
FORGERIES: dict[str, Forgery] = {
    # an accuracy (or a loss, or a run's time) the code did not compute, in its range: caught only by
    # the manifest, unless it is a number the reader recomputes (the reference's loss, from its θ)
    "number in range": Forgery({
        "results-table": _csv_edit("accuracy", "0.999777"),
        "results-record": _json_edit(_set("wall_seconds", value=0.999777)),
        "classroom": _json_edit(_first_classroom_row("accuracy_mean", 0.999777)),
        "tuned": _json_edit(_first_tuned_row("test_accuracy", 0.999777)),
        "reference": _json_edit(_set("loss", value=0.999777)),
    }, relisted=("reference",)),
    "number out of range": Forgery({
        "results-table": _csv_edit("accuracy", "1.5"),
        "results-record": _json_edit(_set("wall_seconds", value=-1.5)),
        "classroom": _json_edit(_first_classroom_row("accuracy_mean", 1.5)),
        "tuned": _json_edit(_first_tuned_row("test_accuracy", 1.5)),
        "reference": _json_edit(_set("grad_norm", value=-1.5)),
    }),
    "number as text": Forgery({
        "results-table": _csv_edit("accuracy", "high"),
        "results-record": _json_edit(_both(_set("wall_seconds", value="60"), _set("compute_seconds", value="60"))),
        "classroom": _json_edit(_first_classroom_row("accuracy_mean", "0.5")),
        "tuned": _json_edit(_first_tuned_row("test_accuracy", "0.5")),
        "reference": _json_edit(_set("iterations", value="3000")),
    }),
    # a certified ε (or certified optimum) this code does not certify
    "forged certificate": Forgery({
        "results-table": _csv_edit("epsilon_certified", "0.000123", whole_task=True),
        "classroom": _json_edit(_first_classroom_row("epsilon_certified", 0.000123)),
        "tuned": _json_edit(_first_tuned_row("epsilon_certified", 0.000123)),
        "reference": _json_edit(_set("certified_optimum", value=True)),  # an MLP's local optimum
    }),
    # a setting the numbers were not computed at
    "setting epsilon = 1000": Forgery({
        "results-table": _csv_edit("epsilon", "1000", whole_task=True),
        "results-record": _json_edit(_first_config("epsilon", 1000)),
        "classroom": _json_edit(_first_classroom_row("tuned_at", 1000)),
        "tuned": _json_edit(_first_setting("epsilon", 1000)),
    }),
    "setting noise_scale added": Forgery({
        "results-table": _csv_edit("noise_scale", "1000", whole_task=True),
        "results-record": _json_edit(_first_config("noise_scale", 1000)),
        "classroom": _json_edit(_first_classroom_row("overrides", "lam=0.03, noise_scale=1000")),
        "tuned": _json_edit(_first_setting("noise_scale", 1000)),
    }),
    "setting seed added": Forgery({
        "results-table": _csv_edit("seed", "7", whole_task=True),
        "results-record": _json_edit(_first_config("seed", 7)),
        "classroom": _json_edit(_first_classroom_row("seed", 7)),
        "tuned": _json_edit(_first_setting("seed", 7)),
    }),
    "setting delta added": Forgery({
        "results-table": _csv_edit("delta", "0.5", whole_task=True),
        "results-record": _json_edit(_first_config("delta", 0.5)),
        "classroom": _json_edit(_first_classroom_row("delta", 0.5)),
        "tuned": _json_edit(_first_setting("delta", 0.5)),
    }),
    "setting as text": Forgery({
        "results-table": _csv_edit("epsilon", "a hundredth", whole_task=True),
        "results-record": _json_edit(_first_config("epsilon", "0.01")),
        "classroom": _json_edit(_first_classroom_row("tuned_at", "0.05")),
        "tuned": _json_edit(_first_setting("lam", "0.03")),
    }),
    # a table that reads as other columns, or with a whole number written otherwise (the campaign, seed 11)
    "a column named twice": Forgery({"results-table": _csv_header("preset", "task")}),
    "a whole number as a decimal": Forgery({"results-table": _csv_decimal("seed")}),
    # another preset's / dataset's file under this one's name
    "another's file": Forgery({name: (lambda raw, t=t: t.other()) for name, t in TARGETS.items()}),
    "truncated": Forgery(_every(lambda raw: raw[: len(raw) // 2])),
    "empty": Forgery(_every(lambda raw: b"")),
    "a JSON list": Forgery(_every(lambda raw: b"[1, 2]")),
    "an empty JSON object": Forgery(_every(lambda raw: b"{}")),
    "NaN token": Forgery({
        "results-table": _csv_edit("accuracy", "NaN"),  # a run's accuracy missing: its mean moves
        "results-record": _json_edit(_set("wall_seconds", value=float("nan"))),
        "classroom": _json_edit(_first_classroom_row("accuracy_mean", float("nan"))),
        "tuned": _json_edit(_first_tuned_row("test_accuracy", float("nan"))),
        "reference": _json_edit(_set("loss", value=float("nan"))),
    }),
    "Infinity token": Forgery({
        "results-table": _csv_edit("accuracy", "inf"),
        "results-record": _json_edit(_set("wall_seconds", value=float("inf"))),
        "classroom": _json_edit(_first_classroom_row("accuracy_mean", float("inf"))),
        "tuned": _json_edit(_first_tuned_row("test_accuracy", float("inf"))),
        "reference": _json_edit(_set("iterations", value=float("inf"))),
    }),
    "oversized": Forgery(place=_oversized),
    "symlink to /dev/zero": Forgery(place=_dev_zero),
    "FIFO": Forgery(place=_fifo),
}

#: what a reader says of a file that is not the one listed (an unlisted forgery), by forgery
UNLISTED_WHY = {"oversized": "more than its kind's", "symlink to /dev/zero": "not a regular file",
                "FIFO": "not a regular file"}
UNLISTED_WHY_DEFAULT = "not the file that was shipped"


def _cases():
    for name, forgery in FORGERIES.items():
        targets = TARGETS if forgery.place else forgery.edits
        for target in targets:
            variants = [False]
            if forgery.place is None and target in (forgery.relisted or forgery.edits):
                variants.append(True)
            for listed in variants:
                yield pytest.param(target, name, listed, id=f"{target}-{name}-{'relisted' if listed else 'unlisted'}")


def _forge(target: str, forgery: str, folder: Path, listed: bool) -> None:
    t, f = TARGETS[target], FORGERIES[forgery]
    path = folder / t.rel
    raw = path.read_bytes()
    path.unlink()
    if f.place is not None:
        f.place(path, t.rel.split("/")[0])
    else:
        forged = f.edits[target](raw)
        assert forged != raw, f"{forgery} changes nothing in {t.rel}"
        path.write_bytes(forged)
    if listed:  # the forger lists it, as the commands that ship files do
        assert shipped.record([path], folder) == [t.rel]


# ------------------------------------------------------------------------------------------ readers


#: what the reference store hands on when it solves the pair again (the solver is replaced: a refusal
#: is seen, not paid for with minutes of the MLP's L-BFGS)
SOLVED_AGAIN = erm.ErmSolution(theta=np.zeros(1), loss=-42.0, grad_norm=0.0, iterations=0,
                               method="solved again (test)", certified_optimum=False)


@functools.cache
def _mlp_problem():
    return problem_data(RunSpec(dataset="adult", model="mlp"))


@functools.cache
def _classroom_keys() -> tuple[str, ...]:
    return tuple(json.loads((SOURCE / "results" / "compare-classroom.json").read_text())["record"]["keys"])


def _refusal(call: Callable[[], Any]) -> Read:
    try:
        return Read(call())
    except shipped.ShippedFileError as exc:
        return Read(None, str(exc))


def _read_shipped_results(folder: Path) -> Read:
    def shown():
        got = presets.shipped_results(PRESET, folder=folder / "results")
        # what the Paper figures view shows of the record besides the figure: its provenance
        return None if got is None else (got.table, got.record, got.provenance())
    return _refusal(shown)


#: the rows whose spent figures the readers below recompute (the Tune view recomputes every row's, about a
#: minute the first time: tests/test_tuning_spent.py checks that read whole, under slow)
SPENT_ROWS = (("output-laplace", 0.05), ("gradient-dpgd", 1.0), ("gradient-dpsgd", 0.2))


def _read_shipped_tuning(folder: Path) -> Read:
    # the Tune view's read: the record, its spent figures recomputed (here those of SPENT_ROWS)
    return _refusal(lambda: tune.shipped_tuning("adult", "logreg", data_dir=folder, spent=SPENT_ROWS))


def _read_tuned_setting(folder: Path) -> Read:  # the command line's --tuned and Explore's
    return _refusal(lambda: tune.tuned_setting("adult", "logreg", "gradient-dpsgd", 1.0, data_dir=folder))


def _read_compare_tuned_grid(folder: Path) -> Read:  # Compare's tuned grid (epsilon_sweep's plan)
    base = studies.compare_base("adult", "logreg", delta=1e-5, iterations=100, repeats=1,
                                calibration="certified", lam=1e-3)

    def shown():
        rows, _, _ = studies._sweep_plan(base, ["gradient-dpsgd"], [1.0], None, None, True, folder)
        return rows if "tuned_at" in rows[0] else None
    return _refusal(shown)


def _logged(caplog) -> str:
    return "; ".join(r.getMessage() for r in caplog.records)


def _read_classroom(folder: Path, caplog) -> Read:
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="dpcore"):
        got = studies.shipped_classroom_compare(folder / "results" / "compare-classroom.json")
    return Read(None if got is None else got[0], _logged(caplog))


def _read_reference(folder: Path, caplog) -> Read:
    data, model = _mlp_problem()
    caplog.clear()
    with pytest.MonkeyPatch.context() as mp, caplog.at_level(logging.INFO, logger="dpcore"):
        # the name the file was shipped under (it hashes the package's source, edited as this runs)
        mp.setattr(erm, "_disk_key", lambda dataset, model: REFERENCE_KEY)
        mp.setattr(erm, "solve_erm", lambda *a, **k: SOLVED_AGAIN)  # a refusal solves again: seen, not run
        sol = erm.ReferenceStore(None, data_dir=folder).exact(data, model)  # no folder of its own: shipped or solved
    return Read(None if sol is SOLVED_AGAIN else sol, _logged(caplog))


READERS: dict[str, Callable[..., Read]] = {
    "shipped_results": lambda folder, caplog: _read_shipped_results(folder),
    "shipped_tuning": lambda folder, caplog: _read_shipped_tuning(folder),
    "tuned_setting": lambda folder, caplog: _read_tuned_setting(folder),
    "compare_tuned_grid": lambda folder, caplog: _read_compare_tuned_grid(folder),
    "shipped_classroom_compare": _read_classroom,
    "reference_store": _read_reference,
}


@pytest.fixture(scope="module", autouse=True)
def _tuning_verified_once():
    """The first read of the shipped tuning on a machine recomputes its searches' ε spent (issue 67: seconds
    for :data:`SPENT_ROWS`, then marked in the cache folder and remembered in the process): done here,
    before the readers' time limits, which are there to catch hangs.  A forgery is still checked in
    full: its bytes are not the marked ones (the searches' figures are reused, their refusal is its own)."""
    assert tune.shipped_tuning("adult", "logreg", spent=SPENT_ROWS) is not None


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    """A data folder holding the bundled datasets (linked) and a copy of each target (and its
    companions), listed in its own manifest: the readers are given it (``data_dir=``), the views find it
    as a server started with ``DPCORE_DATA_DIR`` would (their context's data folder)."""
    data = _linked_datasets(tmp_path / "data")
    rels = list(dict.fromkeys([t.rel for t in TARGETS.values()] + [f"results/{PRESET}.json", f"results/{PRESET}.csv"]))
    for rel in rels:
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SOURCE / rel, data / rel)
    assert shipped.record([data / rel for rel in rels], data) == rels
    monkeypatch.setenv("DPCORE_DATA_DIR", str(data))
    # the task keys Compare's first preset was computed under: they hash the package's source (which
    # changes under this test as it is edited), so the reader is shown the file's own keys and decides
    # by its content alone (the reference's name, likewise: _read_reference)
    monkeypatch.setattr(studies, "classroom_keys", lambda data_dir=None: list(_classroom_keys()))
    return data


def _read_all(target: str, folder: Path, caplog, what: str, seconds: float = SECONDS) -> dict[str, Read]:
    out = {}
    for name in TARGETS[target].readers:
        with time_limit(seconds, f"{name} gave no answer on {what}"):
            out[name] = READERS[name](folder, caplog)
    return out


# -------------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("target,forgery,listed", list(_cases()))
def test_every_reader_refuses_a_forged_shipped_file(target, forgery, listed, folder, caplog):
    _forge(target, forgery, folder, listed)
    what = f"{TARGETS[target].rel} ({forgery}{', re-listed' if listed else ''})"
    seconds = PLACED_SECONDS if FORGERIES[forgery].place else SECONDS
    for name, got in _read_all(target, folder, caplog, what, seconds).items():
        assert got.shown is None, f"{name} handed on {what}: {str(got.shown)[:300]}"
        if TARGETS[target].raises:
            assert got.said and "\n" not in got.said, f"{name}: not a one-line refusal of {what}: {got.said!r}"
        if "other code" in got.said:
            raise AssertionError(f"{name} refused {what} for its task keys, not for its content: {got.said}")
        if listed:  # the manifest vouches for it: the schema, ranges or certificates must catch it
            assert "manifest" not in got.said, f"{name}: {got.said}"
        else:
            why = UNLISTED_WHY.get(forgery, UNLISTED_WHY_DEFAULT)
            assert why in got.said, f"{name} on {what} said {got.said!r}, not {why!r}"


def _expect_untouched(target: str, name: str, shown: Any) -> None:
    """What each reader shows of the untouched file: the shipped numbers themselves."""
    source = SOURCE / TARGETS[target].rel
    if target.startswith("results"):
        table, record, provenance = shown
        pd.testing.assert_frame_equal(table, pd.read_csv(SOURCE / "results" / f"{PRESET}.csv", low_memory=False))
        assert record == json.loads((SOURCE / "results" / f"{PRESET}.json").read_text()) and provenance
    elif target == "classroom":
        assert shown == json.loads(source.read_text())["rows"]
    elif name == "shipped_tuning":  # the spent figures of the rows recomputed, the others' left out
        doc = json.loads(source.read_text())
        doc["rows"] = [r if (r["mechanism"], r["epsilon"]) in SPENT_ROWS else
                       {k: v for k, v in r.items() if k not in tune.SPENT_FIELDS} for r in doc["rows"]]
        assert shown == doc
    elif name == "tuned_setting":
        setting, eps = shown
        assert eps == 1.0 and setting == next(r["setting"] for r in json.loads(source.read_text())["rows"]
                                              if r["mechanism"] == "gradient-dpsgd" and r["epsilon"] == 1.0)
    elif name == "compare_tuned_grid":
        assert shown[0]["tuned_at"] == 1.0
    elif target == "reference":
        doc = json.loads(source.read_text())
        assert np.array_equal(shown.theta, np.asarray(doc["theta"])) and abs(shown.loss - doc["loss"]) <= 1e-9
    else:
        raise AssertionError(f"no expectation for {target} / {name}")


@pytest.mark.parametrize("rewritten", [False, True], ids=["as-shipped", "rewritten-and-relisted"])
@pytest.mark.parametrize("target", list(TARGETS))
def test_the_untouched_file_reads_through_the_same_readers(target, rewritten, folder, caplog):
    """The check of the check: the readers refuse the forgeries, not every file (and the editors
    rewrite a file as it was written, so a re-listed forgery is refused for its forged value)."""
    path = folder / TARGETS[target].rel
    if rewritten:
        edit = _csv_edit() if path.suffix == ".csv" else _json_edit(lambda doc: None)
        path.write_bytes(edit(path.read_bytes()))
        if path.suffix == ".csv":
            assert path.read_bytes() == (SOURCE / TARGETS[target].rel).read_bytes()  # the CSV round trip is exact
        shipped.record([path], folder)
    for name, got in _read_all(target, folder, caplog, f"the untouched {path.name}").items():
        assert got.shown is not None, f"{name} refused the untouched {path.name}: {got.said}"
        _expect_untouched(target, name, got.shown)
    if target == "classroom":  # the rows alone, by the check the reader applies after the task keys
        studies.check_classroom_rows(json.loads(path.read_text())["rows"])


# ------------------------------------------------------------------------------------------ views


def _page(name: str) -> AppTest:
    return AppTest.from_file(str(ROOT / "pages" / name), default_timeout=180)


def _on_screen(at) -> str:
    """Everything a page shows but its errors and warnings (which may quote a refused value)."""
    parts = []
    for kind in ("markdown", "caption", "info", "success", "metric", "text", "code", "json", "table", "title",
                 "header", "subheader"):
        for el in at.get(kind):
            parts.append(str(getattr(el, "value", "")))
    for el in at.dataframe:
        parts.append(el.value.to_string())
    for el in at.get("plotly_chart"):
        parts.append(el.proto.spec)
    return "\n".join(parts)


@pytest.fixture
def fresh_server():
    import streamlit as st

    st.cache_resource.clear()  # the shipped figures are read once per server
    st.cache_data.clear()
    yield
    st.cache_resource.clear()
    st.cache_data.clear()


def _figures(folder: Path, monkeypatch) -> AppTest:
    at = _page("figures.py")
    at.query_params["fig_preset"] = PRESET
    return at.run()


def _compare(folder: Path, monkeypatch) -> AppTest:
    at = _page("compare.py").run()
    at.button(key="preset_All central mechanisms, Adult (8 ε × 5 repeats)").click().run()
    return at


def _compare_tuned(folder: Path, monkeypatch) -> AppTest:
    """Compare's own grid at the tuned settings (Adult, one ε, one repeat): Run comparison plans it from
    the shipped tuning before anything runs."""
    at = _page("compare.py").run()
    at.selectbox(key="cmp_dataset").set_value("adult").run()
    at.text_input(key="cmp_eps").set_value("1").run()
    at.multiselect(key="cmp_mechs").set_value(["output-gaussian"]).run()
    at.number_input(key="cmp_R").set_value(1).run()
    at.button(key="cmp_run").click().run()
    return at


def _explore(folder: Path, monkeypatch) -> AppTest:
    at = _page("explore.py")
    at.query_params["ex_dataset"] = "adult"
    at.query_params["ex_mechanism"] = "output-gaussian"  # cheap to run at its tuned λ
    return at.run()


#: one forged case per kind through the view that shows it: (target, forgery, re-listed, page, forged text)
VIEW_CASES = [
    ("results-table", "forged certificate", True, "figures", "0.000123"),
    ("results-record", "number as text", True, "figures", None),
    ("classroom", "setting noise_scale added", True, "compare", "noise_scale"),
    ("tuned", "FIFO", False, "tune", None),
    ("tuned", "forged certificate", True, "explore", "0.000123"),
    ("tuned", "setting noise_scale added", True, "compare-tuned", "noise_scale"),
]
PAGES = {"figures": _figures, "compare": _compare, "tune": lambda folder, mp: _page("tune.py").run(),
         "explore": _explore, "compare-tuned": _compare_tuned}


@pytest.mark.parametrize("target,forgery,listed,page,token", VIEW_CASES,
                         ids=[f"{c[3]}-{c[0]}-{c[1]}" for c in VIEW_CASES])
def test_the_view_refuses_a_forged_file_in_one_line(target, forgery, listed, page, token, folder, monkeypatch,
                                                    fresh_server):
    _forge(target, forgery, folder, listed)
    at = PAGES[page](folder, monkeypatch)
    assert not at.exception, at.exception
    if token is not None:
        assert token not in _on_screen(at)
    if page == "figures":
        assert not at.get("plotly_chart") and len(at.error) == 1 and "refused" in at.error[0].value
    elif page == "compare":
        assert "cmp_rows" not in at.session_state and not at.get("plotly_chart")
    elif page == "tune":
        assert len(at.error) == 1 and "not a regular file" in at.error[0].value and not at.get("plotly_chart")
    elif page == "explore":
        assert any("No tuned settings are offered" in w.value for w in at.warning)
        assert not any(c.value.startswith("Tuned at ε") for c in at.caption)
    elif page == "compare-tuned":
        assert len(at.error) == 1 and "The comparison did not run" in at.error[0].value
        assert "tuned/adult-logreg.json" in at.error[0].value and not at.get("plotly_chart")


@pytest.mark.parametrize("page", list(PAGES))
def test_the_view_shows_the_untouched_file(page, folder, monkeypatch, fresh_server):
    at = PAGES[page](folder, monkeypatch)
    assert not at.exception and not at.error, at.error
    if page == "figures":
        assert at.get("plotly_chart")
    elif page == "compare":
        assert at.session_state["cmp_rows"] == json.loads((SOURCE / "results" / "compare-classroom.json")
                                                          .read_text())["rows"]
        assert at.get("plotly_chart")
    elif page == "tune":
        assert at.get("plotly_chart") and at.dataframe
    elif page == "explore":
        assert any(c.value.startswith("Tuned at ε") for c in at.caption) and not at.warning
    elif page == "compare-tuned":
        assert at.get("plotly_chart") and [r["tuned_at"] for r in at.session_state["cmp_rows"]] == [1.0]


# ---------------------------------------------------------------------------------- command line


def _linked_datasets(data: Path) -> Path:
    """A new data folder ``data`` with the bundled datasets linked into it (their checksums are the code's)."""
    data.mkdir()
    for p in SOURCE.iterdir():
        if p.name.endswith((".csv.gz", ".csv.xz")) or p.name == "README.md":
            (data / p.name).symlink_to(p)
    return data


def _cli_data_folder(tmp_path: Path) -> Path:
    """A data folder for a subprocess (``DPCORE_DATA_DIR``): the bundled datasets linked, the shipped
    files copied, and the tuning listed as it is here."""
    data = _linked_datasets(tmp_path / "cli-data")
    for sub in (kind.folder for kind in shipped.KINDS.values()):
        shutil.copytree(SOURCE / sub, data / sub)
    shutil.copyfile(SOURCE / shipped.MANIFEST, data / shipped.MANIFEST)
    shipped.record([data / "tuned" / "adult-logreg.json"], data)
    return data


def _cli(data: Path, *argv: str, timeout: float) -> subprocess.CompletedProcess:
    """``python -m dpcore *argv`` on the data folder ``data``; a hang raises ``TimeoutExpired``."""
    env = {**os.environ, "DPCORE_DATA_DIR": str(data)}
    return subprocess.run([sys.executable, "-m", "dpcore", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


TUNED_RUN = ("run", "--dataset", "adult", "--mechanism", "gradient-dpsgd", "--tuned", "--epsilon", "1",
             "--repeats", "1")


@pytest.mark.parametrize("forgery", ["FIFO", "forged certificate"])
def test_the_command_line_refuses_a_forged_tuning_in_one_line(forgery, tmp_path):
    data = _cli_data_folder(tmp_path)
    _forge("tuned", forgery, data, listed=FORGERIES[forgery].place is None)
    done = _cli(data, *TUNED_RUN, timeout=60)  # refused before anything runs: the start-up's seconds
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "tuned/adult-logreg.json" in lines[0], done.stderr
    assert "accuracy" not in done.stdout


def test_the_command_line_reads_the_untouched_tuning(tmp_path):
    done = _cli(_cli_data_folder(tmp_path), *TUNED_RUN, timeout=180)  # one DP-SGD run on Adult
    assert done.returncode == 0, done.stderr
    assert "tuned at ε = 1:" in done.stderr and "accuracy" in done.stdout


def test_a_data_folder_without_its_manifest_is_said_once_before_any_work(tmp_path, monkeypatch, capsys):
    """Issue 67: ``prepare`` without a manifest recomputed one shipped file and then stopped on the next.
    Now it refuses before any work (exit 2, one line, nothing in the cache folder), and a reader of any
    shipped file says the same; check of the check: with the manifest back, neither is said."""
    from dpcore.cli.commands import main

    data = tmp_path / "data"
    (data / "tuned").mkdir(parents=True)
    shutil.copy(ROOT / "data" / "tuned" / "adult-logreg.json", data / "tuned" / "adult-logreg.json")
    cache = tmp_path / "cache"
    monkeypatch.setenv("DPCORE_DATA_DIR", str(data))
    monkeypatch.setenv("DPCORE_CACHE_DIR", str(cache))
    assert main(["prepare", "--no-mlp"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "manifest" in err and "is missing" in err and "git checkout" in err, err
    assert not cache.exists() or not any(cache.rglob("*.json")), "work was done before the refusal"
    with pytest.raises(shipped.ShippedFileError, match="is missing"):
        shipped.read_json("tuned/adult-logreg.json", data)
    shipped.record([data / "tuned" / "adult-logreg.json"], data)  # the manifest back (listing the file as it is)
    assert shipped.missing_manifest(data) is None and shipped.read_json("tuned/adult-logreg.json", data)
