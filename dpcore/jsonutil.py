"""Strict JSON: no NaN or Infinity tokens; an infinite ε (no guarantee) is ``null``."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np


def to_jsonable(obj: Any) -> Any:
    """Convert numpy values, dataclasses and non-finite floats for strict JSON."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return to_jsonable(dataclasses.asdict(obj))
    return obj


def dumps(obj: Any, **kwargs: Any) -> str:
    return json.dumps(to_jsonable(obj), allow_nan=False, **kwargs)


def write_atomic(path: str | os.PathLike, obj: Any, **kwargs: Any) -> None:
    """Write strict JSON to ``path`` through a temporary file and ``os.replace``, so a
    reader (or a process killed mid-write) never sees half a file."""
    path = Path(path)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(dumps(obj, **kwargs))
    os.replace(tmp, path)
