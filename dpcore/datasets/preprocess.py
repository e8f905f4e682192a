"""The one preprocessing pipeline every dataset goes through (SPEC §1, §6): a DataFrame in, a
:class:`~dpcore.datasets.base.Dataset` out (the steps are listed in :mod:`dpcore.datasets`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import OneHotEncoder

from ..numerics import linalg
from ..exceptions import DatasetError
from ..params import validate
from .base import Dataset

__all__ = [
    "MAX_ABS_VALUE",
    "MAX_CATEGORIES",
    "MAX_CELL_CHARS",
    "MAX_ENCODED_COLUMNS",
    "MAX_MATRIX_BYTES",
    "NUMERIC_SHARE",
    "from_dataframe",
    "normalize_rows",
    "pipeline_note",
    "short_value",
    "train_test_rows",
]

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


def short_value(value: Any) -> str:
    """A value as an error message quotes it: numbers bare, text quoted, cut to 40 characters."""
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
            raise DatasetError(f"column {short_value(col)}, row {row + 1}: a cell of {int(lengths.iloc[row]):,} "
                               f"characters (limit {MAX_CELL_CHARS}): shorten or remove it.")


def _check_numbers(feats: pd.DataFrame, num_cols) -> None:
    """Numeric features must be finite and below :data:`MAX_ABS_VALUE` (names row and column)."""
    for col in num_cols:
        with np.errstate(over="ignore", invalid="ignore"):
            a = pd.to_numeric(feats[col], errors="coerce").astype(float).to_numpy()
        bad = ~np.isnan(a) & ~(np.abs(a) <= MAX_ABS_VALUE)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DatasetError(f"column {short_value(col)}, row {row + 1}: {short_value(feats[col].iloc[row])} is not a "
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
                f"label column {short_value(label_column)} must be numeric for regression; row {idx + 1} "
                f"holds {short_value(y_raw.iloc[idx])}."
            )
        if not np.all(np.abs(y.to_numpy()) <= MAX_ABS_VALUE):
            idx = int(np.flatnonzero(~(np.abs(y.to_numpy()) <= MAX_ABS_VALUE))[0])
            raise DatasetError(f"label column {short_value(label_column)}, row {idx + 1}: {short_value(y_raw.iloc[idx])} "
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


def train_test_rows(
    n: int, y: np.ndarray, task: str, test_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """The seeded train/test split of ``n`` rows (stratified on ``y`` for classification): the
    sorted training and test positions."""
    idx = np.arange(n)
    stratify = y if task == "classification" else None
    if stratify is not None:  # scikit-learn's own words name its internals ("the least populated class in y")
        counts = np.unique(y, return_counts=True)[1]
        n_test = math.ceil(test_fraction * n)  # scikit-learn's rounding
        if counts.min() < 2:
            raise DatasetError(f"cannot split {n} rows into train and test with both classes in each: the "
                               f"smaller class has {counts.min()} row, and each needs at least 2 (add rows of it)")
        if min(n_test, n - n_test) < len(counts):
            raise DatasetError(f"cannot split {n} rows into train and test with both classes in each: a test "
                               f"split of {n_test} and a training split of {n - n_test} rows (add rows)")
    try:
        tr, te = train_test_split(
            idx, test_size=test_fraction, random_state=seed, stratify=stratify
        )
    except ValueError as exc:
        raise DatasetError(f"cannot split {n} rows into train and test: {exc}") from None
    return np.sort(tr), np.sort(te)


def pipeline_note(bias: bool = True) -> str:
    """The note every dataset carries on the pipeline itself (not on anything its data held):
    the command line, which prints what an upload noticed, leaves it out."""
    return ("Numeric columns standardised and categoricals one-hot encoded with training-split "
            "statistics (treated as public); rows with norm > 1 scaled onto the unit sphere"
            + (" after appending a bias feature." if bias else "."))


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
    """Preprocess a DataFrame into a :class:`Dataset` (the steps: :mod:`dpcore.datasets`).

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
    if features.shape[1] + int(bias) > MAX_ENCODED_COLUMNS:  # every column encodes to one or more
        raise DatasetError(
            f"the data have {features.shape[1]:,} feature columns{' and a bias' if bias else ''}: more than the "
            f"{MAX_ENCODED_COLUMNS:,} encoded columns allowed; keep the columns you need.")
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
        tr, te = train_test_rows(len(y_all), y_all, task, test_fraction, seed)
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
        all_notes.append(f"{n_dropped} row with a missing value was dropped." if n_dropped == 1
                         else f"{n_dropped:,} rows with a missing value were dropped.")
    all_notes.append(pipeline_note(bias))
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

