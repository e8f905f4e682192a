"""Lecture material: a lesson as one offline HTML file.

:func:`lesson_html` writes every step of a lesson — its heading, its text, its chart, the
settings that made the chart and a link that reopens the step live — into one HTML document
that opens without a network (plotly.js is embedded once, at the top).  The step texts use the
small part of Markdown the app's lesson uses (``**bold**``, ``*italic*``, ``[text](url)``); all
other characters are escaped, so a text can never inject markup.

Each chart is laid out as the app lays it out (:func:`dpcore.figures.charts.on_screen`): its title and
the notes below it are page text (they wrap at any window width; Plotly's title is one line,
cut at both ends when it is long), the legend sits above the plot, and every axis takes the
margin its tick labels need (``automargin``: the app's page does that; Streamlit's Plotly
template, the default where the app makes the figures, does not, and the file's charts cut
labels such as 0.85 to ".8").  The charts are drawn with Plotly's light template
(``plotly_white``): Streamlit's leaves the colours to the app's page.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from .figures.charts import on_screen

__all__ = ["LessonStep", "lesson_html", "inline_markdown"]


@dataclass(frozen=True)
class LessonStep:
    title: str
    text: str  # the step's words (inline Markdown)
    figure: go.Figure
    settings: str  # what made the chart, in words
    link: str  # reopens the step live in the app
    note: str = ""  # a line the step prints beside its chart (inline Markdown)


def inline_markdown(text: str) -> str:
    """Escaped HTML with ``**bold**``, ``*italic*`` and ``[text](http… or /path)`` kept.

    >>> inline_markdown("a **b** *c* <d> [e](/f?x=1&y=2)")
    'a <strong>b</strong> <em>c</em> &lt;d&gt; <a href="/f?x=1&amp;y=2">e</a>'
    """
    out = html.escape(text, quote=True)
    out = re.sub(r"\[([^\]]+)\]\(((?:https?://|/)[^)\s]*)\)", lambda m: f'<a href="{m.group(2)}">{m.group(1)}</a>', out)
    out = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)
    return re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<em>\1</em>", out)


_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em; line-height: 1.5; }
section { border-top: 1px solid #ccc; padding-top: 1em; margin-top: 2em; page-break-before: always; }
.settings { color: #555; font-size: 0.9em; }
.chart-title { font-weight: bold; margin-bottom: 0.2em; }
.note { color: #b03a2e; }
"""


def lesson_html(title: str, steps: list[LessonStep], source: str = "") -> str:
    """The whole lesson as one self-contained HTML document (see the module docstring)."""
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
             f"<style>{_STYLE}</style>",
             # plotly.js once, for every chart below: the file then opens offline
             f"<script type=\"text/javascript\">{get_plotlyjs()}</script>",
             f"</head><body><h1>{html.escape(title)}</h1>"]
    if source:
        parts.append(f"<p class=\"settings\">{inline_markdown(source)}</p>")
    for k, step in enumerate(steps, 1):
        heading, figure, notes = on_screen(step.figure)  # a copy: the step's figure keeps its title
        # Plotly's own light template: the app's (Streamlit's) leaves colours to the app's page
        # (a bar came out black in the file) and the margins too
        figure.update_layout(template="plotly_white")
        figure.update_xaxes(automargin=True).update_yaxes(automargin=True)
        chart = pio.to_html(figure, include_plotlyjs=False, full_html=False, default_width="100%",
                            default_height="520px")
        parts.append(
            f"<section id=\"step-{k}\"><h2>{k}. {html.escape(step.title)}</h2><p>{inline_markdown(step.text)}</p>"
            + (f"<p>{inline_markdown(step.note)}</p>" if step.note else "")
            + (f"<p class=\"chart-title\">{html.escape(heading)}</p>" if heading else "")
            + chart + "".join(f"<p class=\"note\">{html.escape(n)}</p>" for n in notes)
            + f"<p class=\"settings\">Settings: {inline_markdown(step.settings)}</p>"
            f"<p><a href=\"{html.escape(step.link, quote=True)}\">Open this step live in the app</a></p></section>")
    parts.append("</body></html>")
    return "\n".join(parts)
