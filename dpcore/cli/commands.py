"""Command line (SPEC §7): ``python -m dpcore <command> … [--json]``.

With ``--json`` one strict JSON document goes to stdout (an infinite ε is
``null``).  Bad input exits with code 2 and one line on stderr: a value outside its declared
range (:mod:`dpcore.params`), two flags that set one thing two ways, an output that cannot be
written (checked before any work), every setting refused.  An error while writing, to a file or
to stdout, is one line too (exit 2); a reader that went away (``| head``) the quiet exit 141.

This module reads the command line and dispatches it (:data:`COMMANDS`); the commands live in
:mod:`dpcore.cli.run` (datasets, mechanisms, run, tradeoff, bounds), :mod:`dpcore.cli.audit`,
:mod:`dpcore.cli.sweep` (sweep, tune, prepare) and :mod:`dpcore.cli.certify`, what they share in
:mod:`dpcore.cli.common`.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Sequence

import importlib

from .parser import ParserExit, build_parser, flag_given
from ..exceptions import DPCoreError
from ..jsonutil import dumps
from ..params import PARAMS, check_conflicts

__all__ = ["main", "build_parser"]

def _refuse_conflicts(parser: argparse.ArgumentParser, args) -> None:
    """Two flags that set one thing two ways (:data:`~dpcore.params.CONFLICTS`, by setting name:
    a typed flag's declared parameter, else its destination) are refused together, never one of
    them dropped.  Every subcommand, from the one declaration."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[args.command]
    given: dict[str, str] = {}
    for action in sub._actions:
        if not action.option_strings or action.dest == "help":
            continue
        name = getattr(action.type, "__name__", None)
        value = getattr(args, action.dest, None)
        if flag_given(args, *action.option_strings) or (value is not None and value != action.default):
            given[name if name in PARAMS else action.dest] = action.option_strings[0]
    check_conflicts(given, "", names=given.get)


#: each subcommand's function, by module: a command imports only its own module (``certify`` needs no
#: solver, no audit), so a short command answers in a fraction of the whole package's import time
COMMANDS = {"prepare": ".sweep", "tune": ".sweep", "sweep": ".sweep", "datasets": ".run",
            "mechanisms": ".run", "run": ".run", "tradeoff": ".run", "bounds": ".run",
            "audit": ".audit", "certify": ".certify", "export": ".export"}


def command(name: str):
    """The function that runs subcommand ``name`` (``cmd_<name>`` of its module, :data:`COMMANDS`; an
    entry that is a function already is that function)."""
    entry = COMMANDS[name]
    return entry if callable(entry) else getattr(importlib.import_module(entry, __package__), f"cmd_{name}")


#: an error line longer than this has its long echoed values (over 40 characters) cut to their ends
MAX_ERROR_CHARS = 300
#: and is never longer than this (lists of choices are grouped to fit: exceptions.unknown_choice)
MAX_LINE_CHARS = 300


def _one_line(message: str) -> str:
    """One line: a long echoed value (a 400-digit number) keeps only its ends, so what the user
    typed never drowns what to change."""
    text = " ".join(message.split())
    if len(text) > MAX_ERROR_CHARS:
        text = re.sub(r"\S{41,}", lambda m: f"{m.group(0)[:16]}…{m.group(0)[-8:]} ({len(m.group(0))} characters)",
                      text)
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS - 1] + "…"


def main(argv: Sequence[str] | None = None) -> int:
    if sys.stdout is None:  # started with stdout closed (`>&-`): every answer would be lost
        print("dpcore: error: standard output is closed: nothing could be printed", file=sys.stderr)
        return 2
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        args.argv = list(sys.argv[1:] if argv is None else argv)  # the command, for provenance
        _refuse_conflicts(parser, args)
        out = command(args.command)(args)
        for note in getattr(args, "notes", ()):  # not errors: the command succeeded (exit 0)
            print(_one_line(f"note: {note}"), file=sys.stderr)
    except ParserExit as exc:
        print(_one_line(str(exc)), file=sys.stderr)
        return exc.code
    except DPCoreError as exc:
        print(_one_line(f"dpcore: error: {exc}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dpcore: interrupted", file=sys.stderr)
        return 130
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except Exception as exc:  # a bug, not bad input: still one line unless debugging
        if os.environ.get("DPCORE_DEBUG"):
            raise
        print(_one_line(f"dpcore: internal error ({type(exc).__name__}): {exc}; "
                        "set DPCORE_DEBUG=1 for the traceback"), file=sys.stderr)
        return 1
    try:
        print(out if isinstance(out, str) else dumps(out, indent=None))
        sys.stdout.flush()  # a full disk shows here, not at exit after the code is returned
    except BrokenPipeError:  # e.g. piped into `head`, which has what it wanted: quiet
        _drop_stdout()
        return BROKEN_PIPE
    except OSError as exc:  # /dev/full, a full disk
        _drop_stdout()
        print(_one_line(f"dpcore: error: could not write to standard output: {exc.strerror or exc}"),
              file=sys.stderr)
        return 2
    return 0


#: exit code after a broken pipe: what a shell reports for a program killed by SIGPIPE (128 + 13)
BROKEN_PIPE = 141


def _drop_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's flush at exit does not meet
    the same error again (and print it) after the one line was said."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (a test's StringIO)
        pass
