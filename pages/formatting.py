"""Numbers for display: ε (∞ when there is no guarantee), a table's rows, a missing value."""

from __future__ import annotations

import math


def fmt_eps(value) -> str:
    """ε for display: ∞ when there is no guarantee."""
    if value is None or (isinstance(value, float) and math.isinf(value)):
        return "∞"
    return f"{value:.3g}"


def readable(rows: list[dict]) -> list[dict]:
    """Rows for an on-screen table: ∞ for an infinite ε (no guarantee), — for a missing value,
    lists joined.  A column holding either is shown as text throughout (one type per column,
    as Arrow needs); the other columns keep their numbers.  Downloads keep the raw values."""
    def special(v):
        return v is None or isinstance(v, (list, tuple)) or (isinstance(v, float) and not math.isfinite(v))

    def text(v):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "—"
        if isinstance(v, float) and math.isinf(v):
            return "∞" if v > 0 else "−∞"
        if isinstance(v, (list, tuple)):
            return ", ".join(text(x) for x in v)
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    keys = list(dict.fromkeys(k for r in rows for k in r))
    as_text = {k for k in keys if any(special(r.get(k)) or isinstance(r.get(k), str) for r in rows)}
    return [{k: text(r.get(k)) if k in as_text else r.get(k) for k in keys} for r in rows]


def fmt_num(value, spec: str = ".4f") -> str:
    return "—" if value is None else format(value, spec)
