"""Datasets: the bundled files, the synthetic generators, and user CSVs.

Every dataset goes through one preprocessing pipeline (SPEC §1, §6):

1. drop identifier / leaking columns named by the dataset;
2. missing values: ``missing="drop"`` drops the row (default), ``"impute"``
   fills numerics with the training median and gives categoricals a
   ``"missing"`` level;
3. labels: binary tasks map the positive class to +1 and everything else to
   −1; regression targets are scaled to [−1, 1] with the training range;
4. a seeded train/test split, stratified on the label for classification;
5. categoricals one-hot encoded, numerics standardised, both with statistics of
   the training split only (treated as public, as in the papers; a fully
   private pipeline would use public bounds instead);
6. an optional bias feature (constant 1) appended;
7. rows outside the unit ball scaled onto it, so ``‖x‖₂ ≤ 1`` holds for every
   row, the bias included.

Loaded datasets are cached per process; their arrays are read-only.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
from sklearn.datasets import load_iris
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import OneHotEncoder

from . import linalg, streams
from .exceptions import DatasetError, unknown_choice
from .metrics import guessing_accuracy, guessing_rmse, majority_label
from .params import validate
from .partition import record_split

__all__ = [
    "Dataset",
    "subsample_rows",
    "DatasetSpec",
    "DATASETS",
    "DATA_DIR",
    "list_datasets",
    "load",
    "from_csv",
    "from_dataframe",
    "normalize_rows",
    "verify_file",
]



def _default_data_dir() -> Path:
    """The bundled files: the repository's ``data/`` in a source checkout (and an editable
    install), ``dpcore/_data`` in an installed wheel (pyproject.toml maps one onto the other)."""
    here = Path(__file__).resolve().parent
    installed = here / "_data"
    return installed if installed.is_dir() else here.parent / "data"


DATA_DIR = Path(os.environ.get("DPCORE_DATA_DIR") or _default_data_dir())

# A column with more distinct values than this is refused as a categorical
# (it is almost always an identifier, and one-hot encoding would explode).
MAX_CATEGORIES = 1000
# Budgets for user data, checked before anything large is built: one upload must not take
# the app down for every user.
MAX_CELL_CHARS = 200
MAX_ENCODED_COLUMNS = 5000
MAX_MATRIX_BYTES = 512 * 2**20  # the encoded float64 matrix, training and test together
MAX_ABS_VALUE = 1e100  # larger numbers cannot be standardised in float64 without overflow
# A text column whose non-missing values parse as numbers at least this often
# is taken to be a numeric column with typos, not a categorical one.
NUMERIC_SHARE = 0.9


@dataclass(frozen=True, eq=False)
class Dataset:
    """A preprocessed dataset: arrays plus what a user needs to know about them.

    ``X_*`` are float64 with every row norm ≤ 1; ``y_*`` are ±1 for
    classification and in [−1, 1] for regression.  ``n`` is the number of
    training rows (the records the privacy guarantee is about); ``d`` counts
    every feature, the bias included.
    """

    id: str
    name: str
    task: str  # "classification" | "regression"
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    feature_names: tuple[str, ...]
    description: str = ""
    citation: str = ""
    license: str = ""
    source: str = ""
    positive_class: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return int(self.X_train.shape[0])

    @property
    def n_test(self) -> int:
        return int(self.X_test.shape[0])

    @property
    def d(self) -> int:
        return int(self.X_train.shape[1])

    @property
    def positive_share(self) -> float | None:
        """Share of +1 labels in the training split (classification only)."""
        if self.task != "classification":
            return None
        return float(np.mean(self.y_train > 0))

    @property
    def guessing(self) -> float:
        """What a model that learned nothing scores on the test split: the accuracy of always
        answering the training majority class, or (regression) the RMSE of always answering
        the training mean (:mod:`dpcore.metrics`)."""
        if self.task == "classification":
            return guessing_accuracy(self.y_train, self.y_test)
        return guessing_rmse(self.y_train, self.y_test)

    @property
    def guess_class(self) -> str | None:
        """The class guessing answers (the training majority, +1 on a tie), named: the positive
        class's name, or "not <it>" for −1 (classification only)."""
        if self.task != "classification":
            return None
        positive = self.positive_class or "+1"
        return positive if majority_label(self.y_train) > 0 else f"not {positive}"

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "task": self.task,
            "n_train": self.n,
            "n_test": self.n_test,
            "d": self.d,
            "positive_class": self.positive_class,
            "positive_share": self.positive_share,
            "description": self.description,
            "citation": self.citation,
            "license": self.license,
        }


@dataclass(frozen=True)
class DataFile:
    filename: str
    sha256: str


@dataclass(frozen=True)
class DatasetSpec:
    """A registry entry: metadata plus the function that builds the dataset.

    ``n_train``, ``n_test`` and ``d`` are the documented shapes with the default
    options (bias on, test fraction 0.2); the test suite checks them.
    """

    id: str
    name: str
    task: str
    description: str
    citation: str
    license: str
    source: str
    builder: Callable[..., Dataset] = field(repr=False)
    files: tuple[DataFile, ...] = ()
    n_train: int | None = None
    n_test: int | None = None
    d: int | None = None
    synthetic: bool = False

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "task": self.task,
            "n_train": self.n_train,
            "n_test": self.n_test,
            "d": self.d,
            "synthetic": self.synthetic,
            "description": self.description,
            "citation": self.citation,
            "license": self.license,
            "source": self.source,
            "files": [f.filename for f in self.files],
        }


# --------------------------------------------------------------------------
# files and checksums


@functools.lru_cache(maxsize=None)
def _verified(path: str, size: int, mtime_ns: int, expected: str) -> bool:
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    if digest != expected:
        raise DatasetError(
            f"data file {Path(path).name} has sha256 {digest[:12]}…, expected {expected[:12]}…: "
            "it was altered or corrupted; restore it with `git checkout -- data/` "
            "(the originals and their checksums are listed in data/README.md)."
        )
    return True


def verify_file(f: DataFile, data_dir: Path | None = None) -> Path:
    """Return the path of a bundled file after checking it exists and its sha256."""
    path = Path(data_dir or DATA_DIR) / f.filename
    if not path.is_file():
        raise DatasetError(
            f"data file {f.filename} is missing from {path.parent}: restore it with "
            "`git checkout -- data/` or copy it from shared/data/ (see data/README.md)."
        )
    st = path.stat()
    _verified(str(path), st.st_size, st.st_mtime_ns, f.sha256)
    return path


# --------------------------------------------------------------------------
# preprocessing


def normalize_rows(X: np.ndarray) -> np.ndarray:
    """Scale every row with ‖x‖₂ > 1 onto the unit sphere; leave the others."""
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return X / np.maximum(norms, 1.0)


def _column_kinds(
    df: pd.DataFrame, categorical: list[str] | None, numeric: list[str] | None
) -> tuple[list[str], list[str], pd.DataFrame]:
    """Split feature columns into numeric and categorical; coerce numerics.

    Raises a DatasetError naming the column, the row and the value when a
    numeric column holds something that is not a number.
    """
    categorical = list(categorical or [])
    numeric_forced = list(numeric or [])
    out = {}
    num_cols: list[str] = []
    cat_cols: list[str] = []
    for col in df.columns:
        s = df[col]
        if col in categorical:
            cat_cols.append(col)
            out[col] = s
            continue
        if pd.api.types.is_bool_dtype(s):
            out[col] = s.astype(float)
            num_cols.append(col)
            continue
        if pd.api.types.is_numeric_dtype(s):
            out[col] = s.astype(float)
            num_cols.append(col)
            continue
        present = s.notna()
        probe = s[present].iloc[:200]
        if len(probe) and pd.to_numeric(probe, errors="coerce").notna().mean() < NUMERIC_SHARE:
            cat_cols.append(col)  # clearly text: skip parsing every row
            out[col] = s
            continue
        parsed = pd.to_numeric(s, errors="coerce")
        bad = present & parsed.isna()
        n_present = int(present.sum())
        share = 1.0 - (int(bad.sum()) / n_present) if n_present else 0.0
        if not bad.any() and n_present:
            out[col] = parsed.astype(float)
            num_cols.append(col)
        elif col in numeric_forced or (n_present and share >= NUMERIC_SHARE):
            idx = bad.to_numpy().nonzero()[0][0]
            raise DatasetError(
                f"column {col!r} is numeric but row {idx + 1} holds the non-numeric value "
                f"{s.iloc[idx]!r}: fix the value, leave it empty (missing), or declare the "
                "column categorical."
            )
        else:
            cat_cols.append(col)
            out[col] = s
    for col in numeric_forced:
        if col not in df.columns:
            raise DatasetError(f"numeric column {col!r} is not in the data")
    for col in cat_cols:
        k = out[col].nunique(dropna=True)
        if k > MAX_CATEGORIES:
            raise DatasetError(
                f"column {col!r} has {k} distinct values: it looks like an identifier; "
                "drop it or convert it to a number."
            )
    return num_cols, cat_cols, pd.DataFrame(out, index=df.index)


def _short(value: Any) -> str:
    text = str(value) if isinstance(value, (int, float, np.number)) else repr(value)
    return text if len(text) <= 40 else text[:37] + "…"


def _check_cells(df: pd.DataFrame) -> None:
    """No cell longer than :data:`MAX_CELL_CHARS` (names the first one, shortened)."""
    for col in df.columns:
        s = df[col]
        if pd.api.types.is_numeric_dtype(s):
            continue
        lengths = s.astype(str).str.len()
        if (lengths > MAX_CELL_CHARS).any():
            row = int(np.flatnonzero((lengths > MAX_CELL_CHARS).to_numpy())[0])
            raise DatasetError(f"column {_short(col)}, row {row + 1}: a cell of {int(lengths.iloc[row]):,} "
                               f"characters (limit {MAX_CELL_CHARS}): shorten or remove it.")


def _check_numbers(feats: pd.DataFrame, num_cols) -> None:
    """Numeric features must be finite and below :data:`MAX_ABS_VALUE` (names row and column)."""
    for col in num_cols:
        with np.errstate(over="ignore", invalid="ignore"):
            a = pd.to_numeric(feats[col], errors="coerce").astype(float).to_numpy()
        bad = ~np.isnan(a) & ~(np.abs(a) <= MAX_ABS_VALUE)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DatasetError(f"column {_short(col)}, row {row + 1}: {_short(feats[col].iloc[row])} is not a "
                               f"finite number below {MAX_ABS_VALUE:g} in size: fix or remove it.")


def _labels(
    y_raw: pd.Series, task: str, positive_class: Any, label_column: str
) -> tuple[np.ndarray, str | None]:
    if task == "regression":
        with np.errstate(over="ignore", invalid="ignore"):
            y = pd.to_numeric(y_raw, errors="coerce").astype(float)
        if y.isna().any():
            idx = int(np.flatnonzero(y.isna().to_numpy())[0])
            raise DatasetError(
                f"label column {_short(label_column)} must be numeric for regression; row {idx + 1} "
                f"holds {_short(y_raw.iloc[idx])}."
            )
        if not np.all(np.abs(y.to_numpy()) <= MAX_ABS_VALUE):
            idx = int(np.flatnonzero(~(np.abs(y.to_numpy()) <= MAX_ABS_VALUE))[0])
            raise DatasetError(f"label column {_short(label_column)}, row {idx + 1}: {_short(y_raw.iloc[idx])} "
                               f"is not a finite number below {MAX_ABS_VALUE:g} in size.")
        if y.nunique() < 2:
            raise DatasetError(f"label column {label_column!r} is constant: nothing to learn.")
        return y.to_numpy(dtype=float), None
    values = y_raw.astype(str).str.strip()
    classes = sorted(values.unique())
    if len(classes) < 2:
        raise DatasetError(
            f"label column {label_column!r} has only one class ({classes[0] if classes else 'none'}): "
            "a classifier needs at least two."
        )
    if positive_class is None:
        if len(classes) > 2:
            raise DatasetError(
                f"label column {label_column!r} has {len(classes)} classes "
                f"({', '.join(classes[:8])}{'…' if len(classes) > 8 else ''}): choose the positive class."
            )
        positive = classes[1]
    else:
        positive = str(positive_class).strip()
        if positive not in classes:
            raise DatasetError(
                f"positive class {positive!r} does not occur in label column {label_column!r} "
                f"(classes: {', '.join(classes[:8])}{'…' if len(classes) > 8 else ''})."
            )
    return np.where(values.to_numpy() == positive, 1.0, -1.0), positive


def _split(
    n: int, y: np.ndarray, task: str, test_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    idx = np.arange(n)
    stratify = y if task == "classification" else None
    try:
        tr, te = train_test_split(
            idx, test_size=test_fraction, random_state=seed, stratify=stratify
        )
    except ValueError as exc:
        raise DatasetError(f"cannot split {n} rows into train and test: {exc}") from None
    return np.sort(tr), np.sort(te)


def from_dataframe(
    df: pd.DataFrame,
    label_column: str,
    positive_class: Any = None,
    *,
    task: str = "classification",
    categorical: list[str] | None = None,
    numeric: list[str] | None = None,
    drop: tuple[str, ...] | list[str] = (),
    missing: str = "drop",
    bias: bool = True,
    seed: int = 0,
    test_fraction: float = 0.2,
    split: np.ndarray | None = None,
    id: str = "user",
    name: str = "User data",
    description: str = "",
    citation: str = "",
    license: str = "",
    source: str = "",
    notes: tuple[str, ...] = (),
) -> Dataset:
    """Preprocess a DataFrame into a :class:`Dataset` (see the module docstring).

    ``split`` (optional) is a boolean array marking test rows, for data that
    come with an official split; otherwise a seeded split is drawn.
    """
    if task not in ("classification", "regression"):
        raise DatasetError(f"task must be 'classification' or 'regression', got {task!r}")
    if missing not in ("drop", "impute"):
        raise DatasetError(f"missing must be 'drop' or 'impute', got {missing!r}")
    seed = validate("seed", seed, "from_dataframe")
    test_fraction = validate("test_fraction", test_fraction, "from_dataframe")
    if df.shape[1] == 0 or df.shape[0] == 0:
        raise DatasetError("the data have no rows: nothing to learn from.")
    if label_column not in df.columns:
        cols = ", ".join(map(str, list(df.columns)[:12]))
        raise DatasetError(f"label column {label_column!r} is not in the data (columns: {cols}).")
    unknown_drop = [c for c in drop if c not in df.columns]
    if unknown_drop:
        raise DatasetError(f"cannot drop unknown column(s): {', '.join(unknown_drop)}")
    features = df.drop(columns=[label_column, *drop])
    if features.shape[1] == 0:
        raise DatasetError("no feature columns left besides the label.")
    y_raw = df[label_column]
    _check_cells(df)
    # Blank strings count as missing.
    for col in features.columns:
        if not pd.api.types.is_numeric_dtype(features[col]):
            s = features[col]
            blank = s.astype(str).str.strip().eq("") & s.notna()
            if blank.any():
                features[col] = s.mask(blank)
    num_cols, cat_cols, feats = _column_kinds(features, categorical, numeric)
    _check_numbers(feats, num_cols)
    width = len(num_cols) + sum(int(feats[c].nunique(dropna=False)) for c in cat_cols) + int(bias)
    matrix = len(feats) * width * 8
    if width > MAX_ENCODED_COLUMNS or matrix > MAX_MATRIX_BYTES:
        widest = sorted(cat_cols, key=lambda c: -feats[c].nunique())[:3]
        raise DatasetError(
            f"one-hot encoding would give {width:,} columns and a {matrix / 2**20:,.0f} MiB matrix "
            f"(limits: {MAX_ENCODED_COLUMNS:,} columns, {MAX_MATRIX_BYTES // 2**20} MiB): drop or merge "
            f"categorical columns with many values" + (f", e.g. {', '.join(map(repr, widest))}" if widest else "")
            + ", or upload fewer rows.")

    keep = y_raw.notna().to_numpy().copy()
    if missing == "drop":
        keep &= feats.notna().all(axis=1).to_numpy()
    n_dropped = int((~keep).sum())
    if not keep.any():
        raise DatasetError(
            "no rows left after dropping rows with missing values: "
            "choose missing='impute' or fill the gaps."
        )
    feats = feats.loc[keep]
    y_raw = y_raw.loc[keep]
    if split is not None:
        split = np.asarray(split, dtype=bool)[keep]
    y_all, positive = _labels(y_raw, task, positive_class, label_column)

    if split is None:
        tr, te = _split(len(y_all), y_all, task, test_fraction, seed)
    else:
        tr, te = np.flatnonzero(~split), np.flatnonzero(split)
    if len(tr) < 2 or len(te) < 1:
        raise DatasetError(f"too few rows ({len(y_all)}) to form a training and a test set.")
    if task == "classification" and len(np.unique(y_all[tr])) < 2:
        raise DatasetError("the training split holds only one class: add rows of the other class.")

    f_tr, f_te = feats.iloc[tr], feats.iloc[te]
    blocks_tr, blocks_te, names = [], [], []
    if num_cols:
        a_tr = f_tr[num_cols].to_numpy(dtype=float)
        a_te = f_te[num_cols].to_numpy(dtype=float)
        if missing == "impute":
            med = np.nanmedian(a_tr, axis=0)
            med = np.where(np.isnan(med), 0.0, med)
            a_tr = np.where(np.isnan(a_tr), med, a_tr)
            a_te = np.where(np.isnan(a_te), med, a_te)
        mu = a_tr.mean(axis=0)
        sd = a_tr.std(axis=0)
        sd = np.where(sd > 0, sd, 1.0)  # constant columns become 0
        blocks_tr.append((a_tr - mu) / sd)
        blocks_te.append((a_te - mu) / sd)
        names += list(map(str, num_cols))
    if cat_cols:
        c_tr = f_tr[cat_cols].astype(object)
        c_te = f_te[cat_cols].astype(object)
        if missing == "impute":
            c_tr = c_tr.where(c_tr.notna(), "missing")
            c_te = c_te.where(c_te.notna(), "missing")
        c_tr = c_tr.astype(str)
        c_te = c_te.astype(str)
        enc = OneHotEncoder(handle_unknown="ignore", sparse_output=False, dtype=float)
        blocks_tr.append(enc.fit_transform(c_tr))
        blocks_te.append(enc.transform(c_te))
        names += [str(s) for s in enc.get_feature_names_out([str(c) for c in cat_cols])]
    if bias:
        blocks_tr.append(np.ones((len(tr), 1)))
        blocks_te.append(np.ones((len(te), 1)))
        names.append("bias")
    X_tr = normalize_rows(np.hstack(blocks_tr))
    X_te = normalize_rows(np.hstack(blocks_te))

    y_tr, y_te = y_all[tr], y_all[te]
    if task == "regression":
        lo, hi = float(y_tr.min()), float(y_tr.max())
        mid, half = (hi + lo) / 2.0, (hi - lo) / 2.0
        y_tr = (y_tr - mid) / half
        y_te = np.clip((y_te - mid) / half, -1.0, 1.0)

    all_notes = list(notes)
    if n_dropped:
        all_notes.append(f"{n_dropped} rows with a missing value were dropped.")
    all_notes.append(
        "Numeric columns standardised and categoricals one-hot encoded with training-split "
        "statistics (treated as public); rows with norm > 1 scaled onto the unit sphere"
        + (" after appending a bias feature." if bias else ".")
    )
    for a in (y_tr, y_te):
        a.setflags(write=False)
    for a in (X_tr, X_te):  # read-only; one-hot data also get a sparse twin for fast products
        linalg.share(a)
    return Dataset(
        id=id,
        name=name,
        task=task,
        X_train=X_tr,
        y_train=y_tr,
        X_test=X_te,
        y_test=y_te,
        feature_names=tuple(names),
        description=description,
        citation=citation,
        license=license,
        source=source,
        positive_class=positive,
        notes=tuple(all_notes),
    )


#: the only cell values an uploaded CSV's reader takes as missing
CSV_MISSING = ["", "?"]


def csv_preview(raw: bytes, rows: int = 200) -> pd.DataFrame:
    """The first ``rows`` rows of an upload, read by :func:`from_csv`'s rules and as text (the
    Datasets view offers its columns and the label's classes from it)."""
    df = pd.read_csv(io.BytesIO(raw), nrows=rows, dtype=str, na_values=CSV_MISSING, keep_default_na=False,
                     skipinitialspace=True)
    df.columns = [str(c).strip() for c in df.columns]
    return df


def from_csv(
    path_or_buffer: str | os.PathLike | io.IOBase | bytes,
    label_column: str,
    positive_class: Any = None,
    **kwargs: Any,
) -> Dataset:
    """Read a CSV (path, file object or bytes) and preprocess it like the bundled data.

    Read as the user wrote it: only empty fields and ``?`` count as missing (``NA``, ``None``,
    ``null`` are values, e.g. a class called "NA"); spaces after the commas are ignored; a
    column name given twice is refused with its name (pandas would rename the copy, which
    then becomes a feature, a duplicated label a perfect one); a column of numbers written
    with decimal commas (``"1,5"``) is read as numbers and the dataset's notes say so.
    Keyword arguments go to :func:`from_dataframe`.
    """
    if isinstance(path_or_buffer, (bytes, bytearray)):
        raw = bytes(path_or_buffer)
    elif isinstance(path_or_buffer, io.IOBase):
        raw = path_or_buffer.read()
        raw = raw.encode() if isinstance(raw, str) else raw
    else:
        try:
            raw = Path(path_or_buffer).read_bytes()
        except FileNotFoundError:
            raise DatasetError(f"CSV file {path_or_buffer} does not exist.") from None
    try:
        header = pd.read_csv(io.BytesIO(raw), header=None, nrows=1, dtype=str, keep_default_na=False,
                             skipinitialspace=True)
        names = [str(v).strip() for v in header.iloc[0]] if header.shape[0] else []
        twice = sorted({v for v in names if names.count(v) > 1})
        if twice:
            raise DatasetError(f"the column name(s) {', '.join(repr(v) for v in twice)} appear more than once "
                               "in the header: rename or drop the copies (a copied label would be a perfect feature)")
        # the label as written ("1" stays "1" even when a later row leaves it empty)
        as_text = {label_column: str} if label_column in names else None
        df = pd.read_csv(io.BytesIO(raw), na_values=CSV_MISSING, keep_default_na=False, skipinitialspace=True,
                         dtype=as_text)
        df.columns = [str(c).strip() for c in df.columns]
    except FileNotFoundError:
        raise DatasetError(f"CSV file {path_or_buffer} does not exist.") from None
    except pd.errors.EmptyDataError:
        raise DatasetError("the CSV file is empty: it needs a header row and data rows.") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DatasetError(f"the CSV file cannot be parsed: {first}") from None
    if df.shape[0] == 0:
        raise DatasetError("the CSV file has a header but no data rows.")
    notes = []
    for col in df.columns:
        if col == label_column or pd.api.types.is_numeric_dtype(df[col]):
            continue
        values = df[col].dropna().astype(str).str.strip()
        if len(values) and values.str.fullmatch(r"[-+]?\d+,\d+").all():
            df[col] = pd.to_numeric(df[col].astype(str).str.strip().str.replace(",", ".", regex=False),
                                    errors="coerce").where(df[col].notna())
            notes.append(f"column {col!r} held numbers with decimal commas (e.g. {values.iloc[0]!r}): read as numbers")
    kwargs.setdefault("name", "Uploaded CSV")
    ds = from_dataframe(df, label_column, positive_class, **kwargs)
    return dataclasses.replace(ds, notes=tuple(notes) + tuple(ds.notes)) if notes else ds


# --------------------------------------------------------------------------
# synthetic generators


def _synthetic(
    task: str, n: int, d: int, noise: float, seed: int, n_test: int, bias: bool
) -> Dataset:
    """Seeded linear-model data: x uniform in direction, y from a fixed unit θ*.

    Classification: ``y = sign(⟨θ*, x⟩ + noise·g)``; regression:
    ``y = clip(⟨θ*, x⟩ + noise·g, −1, 1)`` with ``g ~ N(0, 1)``.  ``d`` is the
    number of raw features (the bias, if any, is added on top).
    """
    owner = f"synthetic-{task}"
    n = validate("n", n, owner)
    d = validate("d", d, owner)
    noise = validate("noise", noise, owner)
    seed = validate("seed", seed, owner)
    n_test = validate("n", n_test, owner)
    rng = np.random.default_rng([seed, streams.SYNTHETIC_DATA])
    theta = rng.standard_normal(d)
    theta /= np.linalg.norm(theta)

    def draw(m: int) -> tuple[np.ndarray, np.ndarray]:
        X = rng.standard_normal((m, d))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        X *= rng.uniform(0.5, 1.0, size=(m, 1))  # varied norms, all ≤ 1
        t = X @ theta + noise * rng.standard_normal(m)
        if task == "classification":
            y = np.where(t >= 0, 1.0, -1.0)
        else:
            y = np.clip(t, -1.0, 1.0)
        if bias:
            X = normalize_rows(np.hstack([X, np.ones((m, 1))]))
        return X, y

    X_tr, y_tr = draw(n)
    X_te, y_te = draw(n_test)
    for a in (X_tr, y_tr, X_te, y_te):
        a.setflags(write=False)
    names = tuple(f"x{i}" for i in range(d)) + (("bias",) if bias else ())
    spec = DATASETS[f"synthetic-{task}"]
    return Dataset(
        id=spec.id,
        name=f"{spec.name} (n={n}, d={d}, noise={noise:g}, seed={seed})",
        task=task,
        X_train=X_tr,
        y_train=y_tr,
        X_test=X_te,
        y_test=y_te,
        feature_names=names,
        description=spec.description,
        citation=spec.citation,
        license=spec.license,
        source=spec.source,
        positive_class="+1" if task == "classification" else None,
        notes=(f"Generated with seed {seed}; test set of {n_test} fresh draws.",),
    )


# --------------------------------------------------------------------------
# bundled datasets


_UCI_LICENSE = "CC BY 4.0"


def _bundled(spec_id: str, df: pd.DataFrame, **kwargs: Any) -> Dataset:
    spec = DATASETS[spec_id]
    return from_dataframe(
        df,
        id=spec.id,
        name=spec.name,
        description=spec.description,
        citation=spec.citation,
        license=spec.license,
        source=spec.source,
        **kwargs,
    )


def _read(spec_id: str, **read_kwargs: Any) -> pd.DataFrame:
    f = DATASETS[spec_id].files[0]
    return pd.read_csv(verify_file(f), **read_kwargs)


def _adult(bias: bool, seed: int, test_fraction: float) -> Dataset:
    df = _read("adult").drop(columns=["split"])
    return _bundled(
        "adult", df, label_column="income", positive_class=">50K",
        drop=("fnlwgt",), bias=bias, seed=seed, test_fraction=test_fraction,
        notes=("Rows with '?' were removed upstream (45,222 of 48,842 remain); "
               "fnlwgt (a census sampling weight, not a person's attribute) is dropped; "
               "the official train/test split is replaced by a seeded stratified split.",),
    )


def _bank(bias: bool, seed: int, test_fraction: float) -> Dataset:
    df = _read("bank")
    return _bundled(
        "bank", df, label_column="y", positive_class="yes",
        drop=("duration",), bias=bias, seed=seed, test_fraction=test_fraction,
        notes=("'duration' is dropped: it is only known after the call and leaks the label "
               "(UCI's warning); 'unknown' is kept as its own category; pdays = 999 (never "
               "contacted) is kept as a number.",),
    )


def _kdd(spec_id: str, bias: bool, seed: int, test_fraction: float) -> Dataset:
    df = _read(spec_id)
    df["label"] = np.where(df["label"] == "normal.", "normal", "attack")
    return _bundled(
        spec_id, df, label_column="label", positive_class="attack",
        categorical=["protocol_type", "service", "flag"],
        bias=bias, seed=seed, test_fraction=test_fraction,
        notes=("Binary task: any attack (+1) against normal traffic (−1); constant columns "
               "become all-zero after standardising.",),
    )


def _breast_cancer(bias: bool, seed: int, test_fraction: float) -> Dataset:
    df = _read("breast-cancer", na_values="?")
    return _bundled(
        "breast-cancer", df, label_column="Class", positive_class="4",
        drop=("Sample_code_number",), bias=bias, seed=seed, test_fraction=test_fraction,
        notes=("Class 4 (malignant) is +1, class 2 (benign) −1; the 16 rows with '?' in "
               "Bare_nuclei are dropped (683 remain).",),
    )


def _credit(spec_id: str, bias: bool, seed: int, test_fraction: float) -> Dataset:
    df = _read(spec_id)
    return _bundled(
        spec_id, df, label_column="Class", positive_class="1",
        bias=bias, seed=seed, test_fraction=test_fraction,
        notes=("Fraud (Class 1) is +1; V1–V28 are the PCA components published by the "
               "source; Time and Amount are standardised like the rest.",),
    )


def _iris(bias: bool, seed: int, test_fraction: float) -> Dataset:
    raw = load_iris(as_frame=True)
    df = raw.frame.copy()
    df["species"] = np.asarray(raw.target_names)[df.pop("target").to_numpy()]
    return _bundled(
        "iris", df, label_column="species", positive_class="virginica",
        bias=bias, seed=seed, test_fraction=test_fraction,
        notes=("Binary task: virginica (+1) against setosa and versicolor (−1).",),
    )


_KDD_CITE = (
    "Stolfo, S., Fan, W., Lee, W., Prodromidis, A. & Chan, P. (1999). KDD Cup 1999 Data "
    "[Dataset]. UCI Machine Learning Repository. https://doi.org/10.24432/C51C7N."
)
_CC_CITE = (
    "Dal Pozzolo, A., Caelen, O., Johnson, R. A. & Bontempi, G. (2015). Calibrating "
    "Probability with Undersampling for Unbalanced Classification. IEEE CIDM."
)
_CC_SOURCE = (
    "Kaggle mlg-ulb/creditcardfraud (ULB / Worldline), via a public sample holding all 492 "
    "frauds and 4,920 non-frauds; see data/README.md"
)


def _specs() -> list[DatasetSpec]:
    f = DataFile
    return [
        DatasetSpec(
            "adult", "Adult (Census Income)", "classification",
            "1994 US Census extract: predict income > $50K from age, education, work and "
            "family attributes.",
            "Becker, B. & Kohavi, R. (1996). Adult [Dataset]. UCI Machine Learning "
            "Repository. https://doi.org/10.24432/C5XW20.",
            _UCI_LICENSE, "UCI Machine Learning Repository, dataset 2",
            _adult,
            (f("adult.csv.gz", "9f2ed1905aa71757a38845a00a662d135f5e8048bec9826d65b53f39862bc97d"),),
            36177, 9045, 103,
        ),
        DatasetSpec(
            "bank", "Bank Marketing", "classification",
            "Portuguese bank phone campaigns 2008–2010: predict whether the client subscribes "
            "to a term deposit.",
            "Moro, S., Cortez, P. & Rita, P. (2014). A Data-Driven Approach to Predict the "
            "Success of Bank Telemarketing. Decision Support Systems 62:22–31.",
            _UCI_LICENSE, "UCI Machine Learning Repository, dataset 222 (bank-additional-full)",
            _bank,
            (f("bank-additional-full.csv.gz", "93a8c8626236b95797a35a77e5c517103db82a56f93aed7bc33b0693c6fb72ed"),),
            32950, 8238, 63,
        ),
        DatasetSpec(
            "kddcup99", "KDD Cup 1999 (70k sample)", "classification",
            "Network connections from the KDD Cup 1999 intrusion-detection contest: attack "
            "against normal; a 70,000-row stratified sample of the 10% file (seed 0).",
            _KDD_CITE, _UCI_LICENSE, "UCI Machine Learning Repository, dataset 130",
            functools.partial(_kdd, "kddcup99"),
            (f("kddcup99_10percent_sample70k_seed0.csv.gz", "3f8ca7e2a2c0c182ee2fc91400b4a9116b5af7acb8852bf0f62d03bba57546f3"),),
            56000, 14000, 112,
        ),
        DatasetSpec(
            "kddcup99-full", "KDD Cup 1999 (10% file, 494k rows)", "classification",
            "The full '10 percent' KDD Cup 1999 training file: attack against normal.",
            _KDD_CITE, _UCI_LICENSE, "UCI Machine Learning Repository, dataset 130",
            functools.partial(_kdd, "kddcup99-full"),
            (f("kddcup99_10percent.csv.xz", "342dc94d79eca024a5f255dd0d809b995e6384fac248ede7a73f8a8f8596d693"),),
            395216, 98805, 118,
        ),
        DatasetSpec(
            "breast-cancer", "Breast Cancer Wisconsin (Original)", "classification",
            "Wolberg's 699 cytology samples, 9 features scored 1–10: malignant against benign.",
            "Mangasarian, O. L. & Wolberg, W. H. (1990). Cancer diagnosis via linear "
            "programming. SIAM News 23(5):1, 18.",
            _UCI_LICENSE, "UCI Machine Learning Repository, dataset 15",
            _breast_cancer,
            (f("breast-cancer-wisconsin-original.csv.gz", "3f0f2a952534dd7be308b1fc4e814e49c3a42449530245e6b49277933530cc60"),),
            546, 137, 10,
        ),
        DatasetSpec(
            "credit-card", "Credit Card Fraud (984 balanced)", "classification",
            "European card transactions (Sept. 2013): all 492 frauds and 492 random "
            "non-frauds.",
            _CC_CITE, "ODbL 1.0", _CC_SOURCE,
            functools.partial(_credit, "credit-card"),
            (f("creditcard_balanced984_seed0.csv.gz", "60fa73770ae6bb4e294bd21814dcb4f77f4f34956f336ecf3e4a8eb7d1e738b4"),),
            787, 197, 31,
        ),
        DatasetSpec(
            "credit-card-5412", "Credit Card Fraud (5,412 sample)", "classification",
            "European card transactions (Sept. 2013): all 492 frauds and 4,920 random "
            "non-frauds (9.1% fraud).",
            _CC_CITE, "ODbL 1.0", _CC_SOURCE,
            functools.partial(_credit, "credit-card-5412"),
            (f("creditcard_sample5412.csv.gz", "9a9be0687ddb98547814b491533a3c0d49e60a55ceb3b2074f962d6937e38786"),),
            4329, 1083, 31,
        ),
        DatasetSpec(
            "iris", "Iris (virginica vs rest)", "classification",
            "Fisher's 150 iris flowers, 4 measurements: virginica against the other two "
            "species (from scikit-learn).",
            "Fisher, R. A. (1936). The use of multiple measurements in taxonomic problems. "
            "Annals of Eugenics 7(2):179–188.",
            "CC BY 4.0", "scikit-learn sklearn.datasets.load_iris",
            _iris, (), 120, 30, 5,
        ),
        DatasetSpec(
            "synthetic-classification", "Synthetic classification", "classification",
            "Seeded linear-separator data with label noise; choose n, d and the noise "
            "level (scales to n = 2^21).",
            "", "public domain (generated)", "dpcore.datasets",
            functools.partial(_synthetic, "classification"), (), None, None, None, True,
        ),
        DatasetSpec(
            "synthetic-regression", "Synthetic regression", "regression",
            "Seeded linear-regression data, targets clipped to [−1, 1]; choose n, d and the "
            "noise level (scales to n = 2^21).",
            "", "public domain (generated)", "dpcore.datasets",
            functools.partial(_synthetic, "regression"), (), None, None, None, True,
        ),
    ]


DATASETS: dict[str, DatasetSpec] = {s.id: s for s in _specs()}


def list_datasets() -> list[DatasetSpec]:
    return list(DATASETS.values())


def get_spec(dataset_id: str) -> DatasetSpec:
    try:
        return DATASETS[dataset_id]
    except KeyError:
        raise DatasetError(unknown_choice("dataset", dataset_id, DATASETS)) from None


def load(
    dataset_id: str,
    *,
    bias: bool = True,
    seed: int = 0,
    test_fraction: float = 0.2,
    n: int = 10_000,
    d: int = 14,
    noise: float = 0.1,
    n_test: int = 10_000,
    subsample: int | None = None,
) -> Dataset:
    """Load a registered dataset, preprocessed; cached per process.

    ``seed`` drives the train/test split (and the synthetic draw); ``n``,
    ``d``, ``noise`` and ``n_test`` apply to the synthetic generators only.
    ``subsample`` (bundled data only) keeps that many training rows, drawn
    without replacement by ``seed`` after preprocessing; the test split is kept
    whole.  Experiments use it for scaling in n and for quick test runs.
    """
    spec = get_spec(dataset_id)
    seed = validate("seed", seed, "load")
    if spec.synthetic:
        return _load_synthetic(spec.id, int(n), int(d), float(noise), seed, int(n_test), bool(bias))
    test_fraction = validate("test_fraction", test_fraction, "load")
    if subsample is not None:
        subsample = validate("n", subsample, "load")
        return _subsampled(spec.id, bool(bias), seed, float(test_fraction), int(subsample))
    return _load_bundled(spec.id, bool(bias), seed, float(test_fraction))


def subsample_rows(n_full: int, n: int, seed: int) -> np.ndarray:
    """The training rows a subsample of ``n`` keeps (``RunSpec.n`` on bundled data): a seeded
    choice of positions, whatever the records."""
    return np.sort(np.random.default_rng([seed, streams.SUBSAMPLE]).choice(n_full, size=n, replace=False))


@record_split("subsample (RunSpec.n)", record_independent=True,
              certifies="a guarantee about the subsample as the dataset: which rows it keeps does not read them")
def _subsample_parts(X, y, seed):
    return [subsample_rows(len(y), len(y) // 2, seed)]


@record_split("train/test split", record_independent=False,
              certifies=("nothing: the held-out rows are chosen (stratified on the label) before any mechanism "
                         "runs, and every guarantee is about the training split as given, the papers' convention"))
def _train_test_parts(X, y, seed):
    return list(_split(len(y), np.asarray(y), "classification", 0.2, seed))


@functools.lru_cache(maxsize=16)
def _subsampled(dataset_id: str, bias: bool, seed: int, test_fraction: float, n: int) -> Dataset:
    full = _load_bundled(dataset_id, bias, seed, test_fraction)
    if n > full.n:
        raise DatasetError(
            f"{dataset_id} has {full.n} training rows; a subsample of n = {n} is not possible "
            f"(choose n ≤ {full.n})"
        )
    if n == full.n:
        return full
    rows = subsample_rows(full.n, n, seed)
    X, y = full.X_train[rows], full.y_train[rows]
    y.setflags(write=False)
    linalg.share(X)
    return dataclasses.replace(
        full, X_train=X, y_train=y,
        notes=full.notes + (f"training split subsampled to n = {n} rows (seed {seed})",),
    )


@functools.lru_cache(maxsize=16)
def _load_bundled(dataset_id: str, bias: bool, seed: int, test_fraction: float) -> Dataset:
    return DATASETS[dataset_id].builder(bias=bias, seed=seed, test_fraction=test_fraction)


@functools.lru_cache(maxsize=8)
def _load_synthetic(
    dataset_id: str, n: int, d: int, noise: float, seed: int, n_test: int, bias: bool
) -> Dataset:
    return DATASETS[dataset_id].builder(n=n, d=d, noise=noise, seed=seed, n_test=n_test, bias=bias)
