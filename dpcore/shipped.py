"""The one rule by which every shipped file is read: ``data/results``, ``data/tuned``, ``data/references``,
``data/calibrations``.

A number shipped with the package is shown only after four checks, in this order (the readers of each
kind add the last two; the contract is §9, "Reproducibility contract", of ``docs/spec.md``):

1. **The file itself**: a regular file (a FIFO, a device, or a link to one is refused, never opened
   for a blocking read) of at most its kind's size cap (:data:`KINDS`).
2. **The manifest**: ``MANIFEST.json`` in the data folder lists every shipped file with its SHA-256
   and size, written by the command that ships the files (:func:`record`, called by ``sweep --out``,
   ``tune --out`` and ``prepare --ship`` when they write into the data folder).  A file whose content
   is not the one listed (edited, truncated, replaced, or not listed at all) is refused.
3. **A schema and ranges**: strict JSON (no ``NaN`` or ``Infinity``), the columns and fields its kind
   declares, each number of its type and in its range (an accuracy in [0, 1], an ε ≥ 0, …).
4. **Certificates recomputed**: each stored certified ε is recomputed from its configuration by this
   code and must agree within the accountant's own error (:func:`dpcore.privacy.core.same_certificate`).

A file that fails any of them raises :class:`ShippedFileError` (a :class:`~dpcore.exceptions.DPCoreError`:
one line, saying which file and what to do); its reader turns that into a recomputation (Compare's
first preset, the exact references) or a refusal (a paper figure, a tuning): a mismatch is never shown.

The folder is :func:`dpcore.datasets.data_folder` (``data/`` in a checkout, ``dpcore/_data`` in an
installed package, ``DPCORE_DATA_DIR`` when set), looked up at each call.

>>> kind_of("results/001-fig2.csv"), kind_of("tuned/adult-logreg.json"), kind_of("adult.csv.gz")
('results', 'tuned', None)
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Iterable

import pandas as pd

from .datasets import data_folder
from .exceptions import DPCoreError
from .jsonutil import read_regular, write_atomic

__all__ = ["KINDS", "MANIFEST", "ShippedFileError", "kind_of", "missing_manifest", "read_bytes", "read_json", "read_csv",
           "record", "manifest_problems", "relative", "folder_of", "path_of", "digest", "shipped_files"]

#: the manifest's name in the data folder
MANIFEST = "MANIFEST.json"


@dataclass(frozen=True)
class Kind:
    """A kind of shipped file: where it lives, its suffixes, its size cap, and what makes it."""

    folder: str
    suffixes: tuple[str, ...]
    max_bytes: int
    made_by: str


#: every kind of shipped file (a file the package reads a number from), declared once: the readers,
#: the manifest's writer and the tests' generated bad files all take them from here
KINDS: dict[str, Kind] = {
    "results": Kind("results", (".csv", ".json"), 4 * 2**20,
                    "python -m dpcore sweep --preset ID --out data/results (Compare's first preset: "
                    "python -m dpcore prepare --ship)"),
    "tuned": Kind("tuned", (".json",), 2 * 2**20, "python -m dpcore tune … --out data/tuned/DATASET-MODEL.json"),
    "references": Kind("references", (".json",), 4 * 2**20, "python -m dpcore prepare --ship"),
    "calibrations": Kind("calibrations", (".json",), 2**16, "python -m dpcore prepare --ship"),
}
#: the manifest itself: one entry per shipped file (a few hundred bytes each)
MAX_MANIFEST_BYTES = 2**20


class ShippedFileError(DPCoreError):
    """A shipped file that is not what this package shipped, or whose numbers this code does not
    reproduce: never shown (the message names the file and what to do)."""


def kind_of(relpath: str | os.PathLike) -> str | None:
    """The kind of a path relative to the data folder (``results/001-fig2.csv`` → ``results``), or
    ``None`` for a file that is no shipped result (a dataset)."""
    parts = PurePosixPath(Path(relpath).as_posix()).parts
    if len(parts) != 2:
        return None
    kind = KINDS.get(parts[0])
    return parts[0] if kind is not None and parts[1].endswith(kind.suffixes) else None


def relative(path: str | os.PathLike, folder: str | os.PathLike | None = None) -> str | None:
    """``path`` relative to the data folder, when it is a shipped file's place there (else ``None``)."""
    folder = Path(data_folder(folder)).resolve()
    try:
        rel = Path(os.path.abspath(path)).relative_to(folder).as_posix()
    except ValueError:
        try:  # the folder reached through a link
            rel = Path(path).resolve().relative_to(folder).as_posix()
        except (ValueError, OSError):
            return None
    return rel if kind_of(rel) else None


def folder_of(kind: str, folder: str | os.PathLike | None = None) -> Path:
    """Where a kind of shipped file lives in the data folder ``folder`` (default :func:`data_folder`).

    >>> folder_of("tuned", "/srv/class/data")
    PosixPath('/srv/class/data/tuned')
    """
    return Path(data_folder(folder)) / KINDS[kind].folder


def path_of(relpath: str, folder: str | os.PathLike | None = None) -> Path:
    """Where a shipped file (a path relative to the data folder) lies."""
    return Path(data_folder(folder)) / relpath


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is not a finite number")
    return value


def _strict_json(raw: bytes) -> Any:
    """JSON with finite numbers only: no ``NaN`` or ``Infinity`` token, no ``1e400``."""
    def refuse(token):
        raise ValueError(f"{token} is not a JSON number")
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=refuse, parse_float=_finite)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not JSON ({str(exc)[:80]})") from None


# ---------------------------------------------------------------------------------------- manifest

_LOCK = threading.Lock()


def _manifest(folder: Path) -> dict[str, dict[str, Any]]:
    """The manifest's entries (relative path → {"sha256", "bytes"}); empty when there is none."""
    try:
        raw = read_regular(folder / MANIFEST, MAX_MANIFEST_BYTES)
    except (OSError, ValueError) as exc:
        raise ShippedFileError(f"the shipped files' manifest ({folder / MANIFEST}) is damaged ({exc}): "
                               "restore it (git checkout data/MANIFEST.json) or reinstall the package") from None
    if raw is None:
        return {}
    try:
        doc = _strict_json(raw)
        files = doc["files"]
        if not isinstance(files, dict) or not all(
                isinstance(k, str) and isinstance(v, dict) and isinstance(v.get("sha256"), str)
                and isinstance(v.get("bytes"), int) and not isinstance(v.get("bytes"), bool) for k, v in files.items()):
            raise ValueError("its entries are not path → {sha256, bytes}")
        return files
    except (ValueError, KeyError, TypeError) as exc:
        raise ShippedFileError(f"the shipped files' manifest ({folder / MANIFEST}) is damaged ({exc}): "
                               "restore it (git checkout data/MANIFEST.json) or reinstall the package") from None


def _entry(raw: bytes) -> dict[str, Any]:
    return {"sha256": hashlib.sha256(raw).hexdigest(), "bytes": len(raw)}


def read_bytes(relpath: str, folder: str | os.PathLike | None = None) -> bytes | None:
    """A shipped file's bytes, checked against its kind and the manifest; ``None`` when it is not
    there.  Raises :class:`ShippedFileError` (one line) for anything else."""
    kind = kind_of(relpath)
    if kind is None:
        raise ValueError(f"{relpath!r} is not a shipped file's place ({', '.join(k + '/' for k in KINDS)})")
    folder = Path(data_folder(folder))
    path = folder / relpath
    made_by = KINDS[kind].made_by
    try:
        raw = read_regular(path, KINDS[kind].max_bytes)
    except (OSError, ValueError) as exc:
        raise ShippedFileError(f"the shipped {relpath} is refused ({exc}): restore it, or compute it again "
                               f"with `{made_by}`") from None
    if raw is None:
        return None
    listed = _manifest(folder).get(relpath)
    if listed is None and (missing := missing_manifest(folder)):
        raise ShippedFileError(missing)
    if listed is None:
        raise ShippedFileError(f"the shipped {relpath} is not in the manifest ({MANIFEST}) of the files this "
                               f"package ships: remove it, or compute it with `{made_by}`, which lists it")
    if _entry(raw) != listed:
        raise ShippedFileError(f"the shipped {relpath} is not the file that was shipped (its content is not the "
                               f"manifest's): restore it (git checkout / reinstall), or compute it again with "
                               f"`{made_by}`")
    return raw


def digest(relpath: str, folder: str | os.PathLike | None = None) -> str:
    """The SHA-256 the manifest lists for ``relpath`` (what :func:`read_bytes` accepted: call it after)."""
    return _manifest(Path(data_folder(folder))).get(relpath, {}).get("sha256", "")


def read_json(relpath: str, folder: str | os.PathLike | None = None) -> Any:
    """:func:`read_bytes` as strict JSON (``None`` when there is no file)."""
    raw = read_bytes(relpath, folder)
    if raw is None:
        return None
    try:
        return _strict_json(raw)
    except ValueError as exc:
        raise ShippedFileError(f"the shipped {relpath} is refused ({exc})") from None


def read_csv(relpath: str, folder: str | os.PathLike | None = None, **kwargs: Any):
    """:func:`read_bytes` as a pandas table (``None`` when there is no file)."""
    raw = read_bytes(relpath, folder)
    if raw is None:
        return None
    try:
        table = pd.read_csv(io.BytesIO(raw), **kwargs)
        header = next(csv.reader([raw.split(b"\n", 1)[0].decode("utf-8").rstrip("\r")]))
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise ShippedFileError(f"the shipped {relpath} is not a table ({str(exc)[:80]})") from None
    twice = sorted({name for name in header if header.count(name) > 1})
    if twice:  # pandas would read the second as "name.1": a column the reader looks for by name is lost
        raise ShippedFileError(f"the shipped {relpath} names the column {twice[0]!r} twice in its header")
    return table


def record(paths: Iterable[str | os.PathLike], folder: str | os.PathLike | None = None,
           remove: Iterable[str] = ()) -> list[str]:
    """List the shipped files ``paths`` (those inside the data folder; others are ignored) in the
    manifest with their content's hash, and drop the entries ``remove`` (relative paths): what the
    commands that ship files call after writing them.  Returns the relative paths listed."""
    folder = Path(data_folder(folder))
    ours = [rel for rel in (relative(p, folder) for p in paths) if rel is not None]
    remove = [rel for rel in remove if kind_of(rel)]
    if not ours and not remove:
        return []  # nothing of the data folder's: no manifest is touched
    listed = []
    with _LOCK:
        try:
            files = dict(_manifest(folder))
        except ShippedFileError:
            files = {}
        for rel in ours:
            raw = read_regular(folder / rel, KINDS[kind_of(rel)].max_bytes)
            if raw is None:
                files.pop(rel, None)
                continue
            files[rel] = _entry(raw)
            listed.append(rel)
        for rel in remove:
            files.pop(rel, None)
        write_atomic(folder / MANIFEST, {"about": "the files this package ships with their content's SHA-256: "
                                                  "written by the commands that ship them, checked at every read "
                                                  "(dpcore/shipped.py)",
                                         "files": dict(sorted(files.items()))}, indent=1)
    return listed


def shipped_files(folder: str | os.PathLike | None = None) -> list[str]:
    """Every shipped file in the data folder (relative paths), whether listed or not."""
    folder = Path(data_folder(folder))
    out = []
    for name, kind in KINDS.items():
        d = folder / kind.folder
        if d.is_dir():
            out += sorted(f"{name}/{p.name}" for p in d.iterdir() if p.name.endswith(kind.suffixes))
    return out


def missing_manifest(folder: str | os.PathLike | None = None) -> str | None:
    """What to say when the data folder holds shipped files but no manifest to check them by (``None``
    when it has one, or ships nothing): every such file would be refused one at a time, so a reader
    or ``prepare`` says this once instead."""
    folder = Path(data_folder(folder))
    files = [] if (folder / MANIFEST).exists() else shipped_files(folder)
    if not files:
        return None
    return (f"the shipped files' manifest ({folder / MANIFEST}) is missing, so none of the {len(files)} "
            "shipped files can be checked: restore it (git checkout data/MANIFEST.json) or reinstall the package")


def manifest_problems(folder: str | os.PathLike | None = None) -> list[str]:
    """What keeps the manifest from listing exactly the shipped files as they are (empty when all is
    well): for the tests and for a maintainer before a release."""
    folder = Path(data_folder(folder))
    files = _manifest(folder)
    present = shipped_files(folder)
    problems = [f"{rel}: not in the manifest" for rel in present if rel not in files]
    problems += [f"{rel}: listed but not shipped" for rel in files if rel not in present]
    for rel in present:
        if rel in files:
            try:
                read_bytes(rel, folder)
            except ShippedFileError as exc:
                problems.append(str(exc))
    return problems


def is_finite_number(value: Any) -> bool:
    """A real number (not a bool) that is finite."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
