"""``python -m dpcore export``: a view's link as a notebook or a script that computes the view again
(:func:`dpcore.export.writer.export_view`), written to a file or to standard output."""

from __future__ import annotations

from typing import Any

from .common import check_output, writing
from ..export.writer import export_view, parse_link

__all__ = ["cmd_export"]


def cmd_export(args) -> Any:
    """The export of ``--view`` in ``--format``: the text itself on standard output, or (``--output``)
    written to that file; ``--json``: one JSON document saying what was written (and the text, when
    it went to no file)."""
    target = None if args.output is None else check_output(args.output, "--output")
    text = export_view(args.view, fmt=args.format)
    view, _ = parse_link(args.view)
    if target is not None:
        with writing("--output", target):
            target.write_text(text)
    if args.json:
        doc = {"view": view, "format": args.format, "output": None if target is None else str(target),
               "characters": len(text)}
        return doc if target is not None else {**doc, "text": text}
    if target is not None:
        return f"wrote the {view} view as a {'notebook' if args.format == 'ipynb' else 'script'} to {target}"
    return text.rstrip("\n")
