"""Read the figures back out of an exported Plotly HTML file.

Tests assert on what a figure means (its title, traces, axes), never on how a
Plotly release happens to serialise it (plotly 7 escapes non-ASCII text as
``\\u03b5``; earlier releases wrote ``ε``).
"""

from __future__ import annotations

import json

_CALL = "Plotly.newPlot("


def figures(html: str) -> list[dict]:
    """Every ``Plotly.newPlot(div, data, layout, config)`` call in ``html`` as
    ``{"data": [...], "layout": {...}}``, decoded with the JSON parser."""
    decoder = json.JSONDecoder()
    out, pos = [], 0
    while (start := html.find(_CALL, pos)) >= 0:
        pos = start + len(_CALL)
        args = []
        for _ in range(3):  # the div id, the traces, the layout
            while html[pos] in " \t\r\n,":
                pos += 1
            value, pos = decoder.raw_decode(html, pos)
            args.append(value)
        out.append({"data": args[1], "layout": args[2]})
    return out


def title(figure: dict) -> str:
    t = figure["layout"].get("title", "")
    return t.get("text", "") if isinstance(t, dict) else t
