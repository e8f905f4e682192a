"""``main(argv)`` of the command line in this process, its exit code and what it printed."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

from dpcore.cli.commands import main


def run_cli(*argv: str) -> tuple[int, str, str]:
    """(exit code, standard output, standard error) of ``python -m dpcore *argv``."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()
