"""What every plot over ε must show: which points miss their target ε.

A mechanism whose noise certifies less than the ε it is drawn at (a published
formula that under-calibrates, a heuristic with no guarantee) must never read as
the winner.  Plots keep the target ε on the axis (that is what the papers
draw), and every point carries its certified ε in the hover; a point that
misses its target gets a hollow red ring on top, and a note under the figure
names the mechanisms and what they really certify.  Used by the app's views
and by the presets' exported figures.
"""

from __future__ import annotations

import math
from typing import Iterable

import plotly.graph_objects as go

from ..mechanisms import short_name

__all__ = ["MISS_RTOL", "MISS_NAME", "misses_target", "fmt_epsilon", "hover_texts", "mark_missed", "target_note",
           "NOTE_LEAD", "join_words", "figure_note"]

# Calibrations round up by about 1e-9; anything above this relative slack misses.
MISS_RTOL = 1e-6
MISS_NAME = "misses its target ε"


def misses_target(target, certified) -> bool:
    """True when the certified ε is above the target (or there is none: ∞, null)."""
    if target is None or not math.isfinite(float(target)):
        return False  # the non-private baseline claims nothing
    if certified is None or not math.isfinite(float(certified)):
        return True
    return float(certified) > float(target) * (1 + MISS_RTOL)


def fmt_epsilon(value) -> str:
    if value is None or not math.isfinite(float(value)):
        return "∞ (no guarantee)"
    return f"{float(value):.4g}"


def hover_texts(targets: Iterable, certs: Iterable) -> list[str]:
    """Hover lines: 'ε target 1, certified 2.04 — misses its target'."""
    out = []
    for t, c in zip(targets, certs):
        line = f"ε target {fmt_epsilon(t)}, certified {fmt_epsilon(c)}"
        out.append(line + (" — MISSES ITS TARGET" if misses_target(t, c) else ""))
    return out


def mark_missed(fig, xs, ys, targets, certs, *, legend: bool = True, **where) -> int:
    """Overlay hollow red rings on the points that miss their target; returns how many.

    ``where`` passes ``row``/``col`` for subplots.
    """
    pts = [(x, y, t, c) for x, y, t, c in zip(xs, ys, targets, certs) if misses_target(t, c)]
    if not pts:
        return 0
    already = any(tr.name == MISS_NAME for tr in fig.data)
    fig.add_trace(go.Scatter(
        x=[p[0] for p in pts], y=[p[1] for p in pts], mode="markers", name=MISS_NAME,
        legendgroup=MISS_NAME, showlegend=legend and not already,
        marker=dict(symbol="circle-open", size=16, line=dict(width=3, color="#d62728"), color="#d62728"),
        hovertext=hover_texts([p[2] for p in pts], [p[3] for p in pts]), hoverinfo="text"), **where)
    return len(pts)


def target_note(rows: Iterable[dict], *, group: str = "mechanism", target: str = "epsilon",
                certified: str = "epsilon_certified", x: str | None = None) -> str | None:
    """The note under a single chart (Compare, Local vs central, Distributed): every group with
    points that miss their target, or ``None``.  The rows go through :func:`figure_note`, the one
    formatter every note is written by (``x``: a swept coordinate other than ε, e.g. ``"skew"``)."""
    points = [{"series": short_name(r.get(group)) if group == "mechanism" else str(r.get(group)),
               "mechanism": r.get(group) if group == "mechanism" else None, "calibration": r.get("calibration"),
               "epsilon": r.get(target), "epsilon_certified": r.get(certified),
               **({x: r.get(x)} if x else {})} for r in rows]
    return figure_note(points, x=x)


#: The note's first sentence: what a ring means.
NOTE_LEAD = ("Ringed points miss their target ε: the noise that ran certifies more than the ε they are "
             "drawn at, so read them as leaking, not as winners.")
#: How a note names a swept coordinate other than ε ("… with n = 2^7").
_X_NAMES = {"n": "n", "skew": "u"}


def _text(value) -> str:
    """A name as text: ``None``, NaN and blanks are empty, and a name in parts (a tuple or
    list: ``("input (Kang)", "(published)")``) joins its non-empty parts with a space, so an
    empty part never leaves a separator behind."""
    if isinstance(value, (tuple, list)):
        return " ".join(p for p in (_text(v) for v in value) if p)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return " ".join(str(value).split())


def _certified(value) -> float:
    """A certified ε as a float: missing (``None``, NaN) is ∞ (no guarantee)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return math.inf
    return math.inf if math.isnan(v) else v


def _fmt_x(key: str, value) -> str:
    v = float(value)
    if key == "n" and v >= 4 and v == int(v) and int(v) & (int(v) - 1) == 0:
        return f"2^{int(v).bit_length() - 1}"  # the papers' n = 2^7 … 2^21
    return f"{v:g}"


def join_words(parts: Iterable[str], last: str = " and ") -> str:
    """'a', 'a and b', 'a, b and c': the non-empty parts as an English list."""
    parts = [p for p in (_text(p) for p in parts) if p]
    return last.join(parts) if len(parts) <= 2 else ", ".join(parts[:-1]) + last + parts[-1]


def figure_note(rows: Iterable[dict], *, panels: Iterable[str] | None = None, x: str | None = None,
                limit: int | None = 4) -> str | None:
    """The note under a figure: which series have points that miss their target ε, what those
    points certify, and in which panel; ``None`` when no point misses.

    ``rows``: one dict per point drawn (those that miss and the others), with ``series`` (the
    legend name, or its parts as a tuple), ``epsilon`` (the target), ``epsilon_certified``
    (``None``/NaN: ∞) and optionally ``panel`` (the subplot's title), ``mechanism`` and
    ``calibration`` (two series drawing the same runs are one entry, naming both) and, when
    ``x`` names a swept coordinate other than ε (``"n"``, ``"skew"``), the point's value of it
    (``None``: one run drawn flat across the panel).  ``panels``: the figure's panels in order
    (default: as the rows come).

    The text is generated from the entries, never from pieces of text: one entry per series ×
    panel × x × target ε (a duplicate keeps the larger certified ε); a series that reads the
    same in several panels is listed once for them; with more than one panel every number is in
    a sentence that names its panels ("In every panel: …", "In the Adult (LR) panel: …"); the
    swept coordinate is named when it takes more than one value; empty name parts leave no
    separator behind.  At most ``limit`` values per entry (then "…"; ``None``: all).
    """
    rows = list(rows)
    key_x = x if x not in (None, "epsilon") else None
    given = [] if panels is None else [_text(p) for p in panels]
    panels = list(dict.fromkeys([*given, *(_text(r.get("panel")) for r in rows)]))
    show_x = key_x is not None and len({float(r[key_x]) for r in rows if r.get(key_x) is not None}) > 1
    x_name = _X_NAMES.get(key_x or "", key_x)
    names: dict[tuple, list[str]] = {}  # a series' runs -> the legend names drawing them
    drawn: dict[tuple, set] = {}  # (runs, panel) -> every x drawn
    missed: dict[tuple, dict[tuple, float]] = {}  # (runs, panel) -> (x, target) -> certified
    for r in rows:
        mechanism = _text(r.get("mechanism"))
        name = _text(r.get("series")) or (_text(short_name(mechanism)) if mechanism else "") or "an unnamed series"
        runs = (mechanism or name, _text(r.get("calibration")))
        panel = _text(r.get("panel"))
        xv = float(r[key_x]) if key_x is not None and r.get(key_x) is not None else None
        drawn.setdefault((runs, panel), set()).add(xv)
        target, cert = r.get("epsilon"), _certified(r.get("epsilon_certified"))
        if not misses_target(target, cert):
            continue
        if name not in names.setdefault(runs, []):
            names[runs].append(name)
        at = missed.setdefault((runs, panel), {})
        at[xv, float(target)] = max(at.get((xv, float(target)), -math.inf), cert)
    if not missed:
        return None

    def number(c: float) -> str:
        return "∞" if math.isinf(c) else f"{c:.4g}"

    def detail(at: dict[tuple, float], xs: set) -> str:
        if all(math.isinf(c) for c in at.values()):
            return "no guarantee at all: certified ε = ∞"
        shown = {(number(c), t) for (_, t), c in at.items()}
        if show_x and len(shown) == 1 and len(at) > 1 and {xv for xv, _ in at} == xs:
            (c, t), = shown  # the same at every x of the panel
            return f"certified {c} at {t:g} for every {x_name}"

        def at_x(xv) -> str:
            return f" with {x_name} = {_fmt_x(key_x, xv)}" if show_x and xv is not None else ""

        pairs = [f"{number(c)} at {t:g}{at_x(xv)}" for (xv, t), c in
                 sorted(at.items(), key=lambda kv: (-math.inf if kv[0][0] is None else kv[0][0], kv[0][1]))]
        if limit is not None and len(pairs) > limit:
            pairs = [*pairs[:limit], "…"]
        return "certified " + ", ".join(pairs)

    # panels -> detail -> the series' names: a series goes with every panel where it reads the
    # same, and series that read the same there share one entry
    groups: dict[tuple[str, ...], dict[str, list[str]]] = {}
    for runs, labels in names.items():
        same: dict[str, list[str]] = {}  # detail -> the panels where the series reads so
        for panel in panels:
            if (runs, panel) in missed:
                same.setdefault(detail(missed[runs, panel], drawn[runs, panel]), []).append(panel)
        for text, ps in same.items():
            entry = groups.setdefault(tuple(ps), {}).setdefault(text, [])
            entry += [n for n in labels if n not in entry]

    def entries(by_detail: dict[str, list[str]]) -> str:
        return "; ".join(f"{join_words(labels)} ({text})" for text, labels in by_detail.items())

    if len(panels) == 1:
        return f"{NOTE_LEAD} The ringed series: {entries(next(iter(groups.values())))}."
    order = {p: i for i, p in enumerate(panels)}

    def heading(where: tuple[str, ...]) -> str:
        if len(where) == len(panels):
            return "In every panel"
        return f"In the {join_words(p or 'untitled' for p in where)} panel{'s' if len(where) > 1 else ''}"

    sentences = [f"{heading(where)}: {entries(by_detail)}."
                 for where, by_detail in sorted(groups.items(), key=lambda g: (order[g[0][0]], -len(g[0])))]
    return " ".join([NOTE_LEAD, *sentences])
