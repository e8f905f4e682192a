"""User CSVs, read as the file says.

1. **Encoding** (:func:`decode_csv`): UTF-8 with or without a byte-order mark, UTF-16 or UTF-32
   with one, UTF-16 without one (told by its zero bytes); anything else that is not UTF-8 is read
   as Windows-1252, else Latin-1, and the dataset's notes say so.  A file with zero bytes that is
   not UTF-16 is refused: it is not text.
2. **Header first**: the header row is read on its own (the :mod:`csv` module, the body
   untouched) and refused when it has more than :data:`MAX_UPLOAD_COLUMNS` columns or a name
   twice, so a file of 100,000 columns is answered at once.
3. **Excel's separator line**: a first line ``sep=;`` (``sep=,``, ``sep=\t``, …: what Excel writes
   and reads to name the separator) is honoured: that separator is used, the line dropped, and the
   dataset's notes say so (:func:`_separator_line`).
4. **Body**: only empty fields and ``?`` are missing (:data:`CSV_MISSING`); spaces after the
   commas are ignored; empty columns without a name at the end of the rows (a spreadsheet's
   trailing commas) are dropped with a note, a value in such a column is refused with its row.
"""

from __future__ import annotations

import codecs
import collections
import csv
import dataclasses
import io
import itertools
import os
import re
from pathlib import Path
from typing import Any

import pandas as pd

from ..exceptions import DatasetError
from .base import Dataset
from .preprocess import MAX_ENCODED_COLUMNS, from_dataframe, short_value

__all__ = ["CSV_MISSING", "MAX_UPLOAD_BYTES", "MAX_UPLOAD_COLUMNS", "csv_classes", "csv_preview", "decode_csv", "from_csv"]

#: the only cell values an uploaded CSV's reader takes as missing
CSV_MISSING = ["", "?"]
#: the most columns an upload's header may name: the label and :data:`MAX_ENCODED_COLUMNS`
#: features (checked on the header row alone, before the body is parsed)
MAX_UPLOAD_COLUMNS = MAX_ENCODED_COLUMNS + 1
#: the largest CSV read: the app's upload limit (``.streamlit/config.toml``'s ``maxUploadSize``, in MB)
#: and the command line's ``--csv`` (tests/test_cli_csv.py checks that the two agree)
MAX_UPLOAD_BYTES = 50 * 2**20

_READ = {"na_values": CSV_MISSING, "keep_default_na": False, "skipinitialspace": True}
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32", "UTF-32"), (codecs.BOM_UTF32_BE, "utf-32", "UTF-32"),
         (codecs.BOM_UTF8, "utf-8-sig", "UTF-8"), (codecs.BOM_UTF16_LE, "utf-16", "UTF-16"),
         (codecs.BOM_UTF16_BE, "utf-16", "UTF-16"))
_SAVE_AS = "save it again as 'CSV UTF-8' and upload that"


def decode_csv(raw: bytes) -> tuple[str, str | None]:
    """The text of an upload and, when its encoding was inferred rather than marked (UTF-16
    without a byte-order mark, Windows-1252, Latin-1), a note naming it; a
    :class:`~dpcore.exceptions.DatasetError` when the bytes are not text in any of these."""
    for bom, codec, name in _BOMS:
        if raw.startswith(bom):
            try:
                return raw.decode(codec), None
            except UnicodeDecodeError as exc:
                raise DatasetError(f"the file starts with a {name} byte-order mark but is not valid {name} "
                                   f"(byte {exc.start:,}): {_SAVE_AS}.") from None
    sample = raw[: 1 << 16]
    if b"\x00" in sample:
        # a CSV's digits, commas and line ends in UTF-16: every second byte is zero, the others not
        even, odd = sample[0::2].count(0), sample[1::2].count(0)
        if odd >= len(sample) / 4 and odd > 20 * even:
            codec, name = "utf-16-le", "UTF-16 little-endian"
        elif even >= len(sample) / 4 and even > 20 * odd:
            codec, name = "utf-16-be", "UTF-16 big-endian"
        else:
            raise DatasetError("the file holds bytes of value zero (NUL) and is not UTF-16: it is not a text CSV "
                               f"(a spreadsheet or other binary file?); {_SAVE_AS}.")
        try:
            return raw.decode(codec), f"read as {name} text (the file has no byte-order mark; its zero bytes say UTF-16)"
        except UnicodeDecodeError as exc:
            raise DatasetError(f"the file looks like {name} text without a byte-order mark but is not valid "
                               f"{name} (byte {exc.start:,}): {_SAVE_AS}.") from None
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        bad = exc.start
    for codec, name in (("cp1252", "Windows-1252"), ("latin-1", "Latin-1 (ISO-8859-1)")):
        try:
            text = raw.decode(codec)
        except UnicodeDecodeError:
            continue
        return text, (f"the file is not UTF-8 (at byte {bad:,}): read as {name}; if accented letters look wrong, "
                      f"{_SAVE_AS}")
    raise AssertionError("Latin-1 decodes every byte")  # pragma: no cover


#: Excel's first line naming the separator: ``sep=;`` (quoted by some tools), the separator one
#: character that is neither a letter, a digit, a quote nor a line break
_SEP_LINE = re.compile(r'"?sep=([^\w"\r\n])"?[ \t]*(?:\r\n|\r|\n|$)', re.IGNORECASE)


def _separator_line(text: str) -> tuple[str, str, str | None]:
    """``text`` without Excel's separator line, the separator (``,`` when there is no such line)
    and a note when there was one."""
    found = _SEP_LINE.match(text)
    if found is None:
        return text, ",", None
    sep = found.group(1)
    shown = {"\t": "a tab", " ": "a space"}.get(sep, repr(sep))
    return (text[found.end():], sep,
            f"the first line {found.group(0).strip()!r} (Excel's separator line) was read as the separator "
            f"{shown} and skipped")


def _decoded(raw: bytes) -> tuple[str, bytes, list[str], str]:
    """:func:`decode_csv`'s text (without Excel's separator line), the text as UTF-8 bytes for
    pandas (the upload itself when it is UTF-8 without a byte-order mark or separator line
    already), the notes (the encoding inferred, the separator line) and the separator."""
    text, note = decode_csv(raw)
    text, sep, sep_note = _separator_line(text)
    plain = note is None and sep_note is None and not any(raw.startswith(bom) for bom, _, _ in _BOMS)
    return text, raw if plain else text.encode(), [n for n in (note, sep_note) if n], sep


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def _records(text: str, whole: bool = False, sep: str = ","):
    """The CSV records, blank lines left out (pandas skips them too); read line by line as they
    are asked for (the header alone costs the header alone), or (``whole``) from a copy of the
    text, faster for all of them."""
    lines = io.StringIO(text, newline="") if whole else (m.group() for m in _LINE.finditer(text))
    reader = csv.reader(lines, skipinitialspace=True, delimiter=sep)
    return (r for r in reader if r and r != [""])


def _header(text: str, dropped: int = 0, sep: str = ",") -> list[str]:
    """The header row's names, stripped, read without parsing the body; refused when it has more
    than :data:`MAX_UPLOAD_COLUMNS` columns (``dropped`` more) or a name twice."""
    try:
        names = [v.strip() for v in next(_records(text, sep=sep), [])]
    except csv.Error as exc:
        raise DatasetError(f"the header row of the CSV file cannot be read: {exc}.") from None
    if not names:
        raise DatasetError("the CSV file is empty: it needs a header row and data rows.")
    if len(names) > MAX_UPLOAD_COLUMNS + dropped:
        parts = f"the label, {MAX_ENCODED_COLUMNS:,} features and {dropped} dropped" if dropped else \
            f"the label and {MAX_ENCODED_COLUMNS:,} features"
        raise DatasetError(f"the header row has {len(names):,} columns; an upload may have at most "
                           f"{MAX_UPLOAD_COLUMNS + dropped:,} ({parts}): "
                           "keep only the columns you need and upload again.")
    twice = sorted(v for v, k in collections.Counter(names).items() if v and k > 1)
    if twice:
        raise DatasetError(f"the column name(s) {', '.join(repr(v) for v in twice)} appear more than once "
                           "in the header: rename or drop the copies (a copied label would be a perfect feature)")
    return names


def _overhang(text: str, width: int, rows: int | None = None, sep: str = ",") -> bool:
    """Whether some row has fields beyond the header's ``width``: all empty (a spreadsheet's
    trailing commas: True) or refused, naming the first row with a value there.  A file the
    :mod:`csv` module cannot scan (a field over its size limit) is left to the parser."""
    found = False
    try:
        for row, rec in enumerate(itertools.islice(_records(text, rows is None, sep), 1,
                                                   None if rows is None else rows + 1), 1):
            if len(rec) > width:
                value = next((v for v in rec[width:] if v.strip()), None)
                if value is not None:
                    raise DatasetError(f"row {row} has a value ({short_value(value)}) after the last of the header's "
                                       f"{width:,} columns: name that column in the header, or remove the value.")
                found = True
    except csv.Error:
        return found
    return found


def _read(text: str, data: bytes, names: list[str], rows: int | None = None,
          dtype: Any = None, sep: str = ",") -> tuple[pd.DataFrame, list[str]]:
    """The body (``text``, and ``data``: the same as UTF-8) as a DataFrame with the header's
    (stripped) names, and notes on what was dropped."""
    width = len(names)
    overhang = _overhang(text, width, rows, sep)
    columns = [v or f"Unnamed: {i}" for i, v in enumerate(names)]
    # usecols: fields beyond the header are never read (pandas would shift them into an index)
    df = pd.read_csv(io.BytesIO(data), header=0, names=columns, usecols=range(width), nrows=rows, dtype=dtype,
                     sep=sep, **_READ)
    keep = width
    while keep > 1 and not names[keep - 1] and df.iloc[:, keep - 1].isna().all():
        keep -= 1
    notes = []
    if keep < width or overhang:
        notes.append("empty columns without a name after the last column (a spreadsheet's trailing commas) were ignored")
        df = df.iloc[:, :keep]
    return df, notes


def csv_preview(raw: bytes, rows: int = 200) -> pd.DataFrame:
    """The first ``rows`` rows of an upload, read by :func:`from_csv`'s rules and as text (the
    Datasets view offers its columns from it; the label's classes: :func:`csv_classes`)."""
    text, data, _, sep = _decoded(raw)
    df, _ = _read(text, data, _header(text, sep=sep), rows, dtype=str, sep=sep)
    return df


def csv_classes(raw: bytes, label_column: str) -> list[str]:
    """Every class of the label column, sorted, as :func:`from_csv` reads them (stripped, missing
    values left out): the whole column is scanned, only that column parsed."""
    text, data, _, sep = _decoded(raw)
    names = _header(text, sep=sep)
    if label_column not in names:
        raise DatasetError(f"label column {label_column!r} is not in the header.")
    col = pd.read_csv(io.BytesIO(data), usecols=[names.index(label_column)], dtype=str, sep=sep,
                      **_READ).iloc[:, 0]
    return sorted(col.dropna().astype(str).str.strip().unique())


def from_csv(
    path_or_buffer: str | os.PathLike | io.IOBase | bytes,
    label_column: str,
    positive_class: Any = None,
    **kwargs: Any,
) -> Dataset:
    """Read a CSV (path, file object or bytes) and preprocess it like the bundled data.

    Read as the file says (the module docstring: encoding, header first, trailing commas).
    Read as the user wrote it: only empty fields and ``?`` count as missing (``NA``, ``None``,
    ``null`` are values, e.g. a class called "NA"); spaces after the commas are ignored; a
    column name given twice is refused with its name (pandas would rename the copy, which
    then becomes a feature, a duplicated label a perfect one); a column of numbers written
    with decimal commas (``"1,5"``) is read as numbers and the dataset's notes say so.
    Keyword arguments go to :func:`~dpcore.datasets.preprocess.from_dataframe`.
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
    text, data, notes, sep = _decoded(raw)
    names = _header(text, len(set(kwargs.get("drop", ()))), sep)  # before the body is parsed
    try:
        # the label as written ("1" stays "1" even when a later row leaves it empty)
        df, dropped = _read(text, data, names, dtype={label_column: str} if label_column in names else None,
                            sep=sep)
    except pd.errors.EmptyDataError:
        raise DatasetError("the CSV file is empty: it needs a header row and data rows.") from None
    except pd.errors.ParserError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DatasetError(f"the CSV file cannot be parsed: {first}") from None
    notes += dropped
    if df.shape[0] == 0:
        raise DatasetError("the CSV file has a header but no data rows.")
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
