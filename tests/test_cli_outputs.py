"""Where the command line writes (issue 43): every output is checked before the work starts, and
an error while writing, on a file or on standard output, is one line, never a traceback.

* ``--out`` (tune: a file; sweep: a folder and the files in it) and ``prepare``'s cache folder
  (and, with ``--ship``, the repository's shipped files) are refused up front, exit 2 and one
  line, when they are a folder where a file is wanted (or the other way round), lie under a
  regular file, or cannot be written: the work itself is replaced here by a function that fails
  the test if it is reached.
* A write that fails after the work (``/dev/full``: no space left) is one line, exit 2.
* Standard output: full (``/dev/full``) is one line, exit 2; a reader that went away (a broken
  pipe, ``| head``) is the quiet exit 141 (what a shell reports for SIGPIPE); closed (``>&-``)
  is refused before any work.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys

import pytest

from dpcore import cli  # the names the command line kept under dpcore.cli
from dpcore.cli import run as cli_run
from dpcore.cli import sweep as cli_sweep
from dpcore.cli.commands import main

TUNE = ["tune", "--dataset", "breast-cancer", "--mechanisms", "output-gaussian", "--epsilons", "1",
        "--final-repeats", "1"]
SWEEP = ["sweep", "--preset", "002-appendix", "--quick", "--set", "datasets=iris", "--set", "epsilons=1",
         "--set", "learning_rates=1", "--workers", "1"]


def _never(*args, **kwargs):
    raise AssertionError("the work started although its output could not be written")


def _one_line(capsys, *fragments: str) -> str:
    cap = capsys.readouterr()
    lines = [ln for ln in cap.err.strip().splitlines() if not ln.startswith("[")]  # progress
    assert cap.out == "" and len(lines) == 1 and "Traceback" not in cap.err, cap.err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def place(tmp_path):
    """A folder with a regular file in it."""
    (tmp_path / "file.json").write_text("{}")
    return tmp_path


def _bad_files(place):
    return [(str(place), "is a folder"), (str(place / "file.json" / "x.json"), "a file, not a folder"),
            ("/proc/dpcore-cannot-write.json", "cannot be written"), ("", "needs a file path"),
            ("a\x00b", "needs a file path"), (str(place / ("x" * 300)), "cannot be written")]


def test_tune_refuses_an_out_it_cannot_write_before_tuning(place, capsys, monkeypatch):
    monkeypatch.setattr(cli_sweep, "tune", _never)
    for path, said in _bad_files(place):
        assert main([*TUNE, "--out", path]) == 2, path
        _one_line(capsys, "--out", said)
    assert (place / "file.json").read_text() == "{}"  # what was there stays as it was
    assert sorted(p.name for p in place.iterdir()) == ["file.json"]  # and the check leaves nothing


def test_tune_out_makes_its_folder_and_writes_strict_json_and_a_full_device_is_one_line(place, capsys):
    out = place / "new" / "deeper" / "tuned.json"
    assert main([*TUNE, "--out", str(out)]) == 0
    capsys.readouterr()
    json.loads(out.read_text(), parse_constant=lambda t: (_ for _ in ()).throw(ValueError(t)))
    if os.path.exists("/dev/full"):  # the tuning runs (there is no way to know before), the write fails
        assert main([*TUNE, "--out", "/dev/full"]) == 2
        _one_line(capsys, "/dev/full", os.strerror(errno.ENOSPC))


def test_sweep_refuses_an_out_it_cannot_write_before_sweeping(place, capsys, monkeypatch):
    monkeypatch.setattr(cli_sweep, "run_preset", _never)
    for path, said in [(str(place / "file.json"), "is a file, not a folder"),
                       (str(place / "file.json" / "x"), "a file, not a folder"),
                       ("/proc/dpcore-cannot-write", "cannot be written"), ("", "needs --preset ID and --out DIR")]:
        assert main([*SWEEP, "--out", path]) == 2, path
        _one_line(capsys, "--out", said)
    # one of the files the sweep writes in its folder is a folder: refused before the work too
    out = place / "sweep"
    (out / "002-appendix-set520664-quick.csv").mkdir(parents=True)
    assert main([*SWEEP, "--out", str(out)]) == 2
    _one_line(capsys, "002-appendix-set520664-quick.csv", "is a folder")


def test_the_sweep_outputs_checked_are_the_ones_it_writes(place, capsys):
    """:func:`dpcore.cli.sweep.sweep_outputs` (also `dpcore.cli._sweep_outputs`) repeats run_preset's file names: the record says which."""
    out = place / "sweep"
    assert main([*SWEEP, "--out", str(out), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    args = cli.build_parser().parse_args([*SWEEP, "--out", str(out)])
    preset = cli.with_overrides(cli.get_preset(args.preset), args.set)
    checked = {path for path, folder in cli._sweep_outputs(preset, args) if not folder}
    assert len(checked) == 4 and {os.path.basename(p) for p in checked} == {
        os.path.basename(p) for p in rec["outputs"].values()}


def test_prepare_refuses_a_cache_folder_it_cannot_make_before_preparing(place, capsys, monkeypatch):
    monkeypatch.setattr(cli_sweep, "prepare_for_class", _never)
    monkeypatch.setattr(cli_sweep, "ship_references", _never)
    for folder, said in [(place / "file.json", "is a file, not a folder"),
                         (place / "file.json" / "cache", "a file, not a folder"),
                         ("/proc/dpcore-cannot-write", "cannot be written")]:
        monkeypatch.setenv("DPCORE_CACHE_DIR", str(folder))
        assert main(["prepare", "--no-mlp"]) == 2
        _one_line(capsys, "DPCORE_CACHE_DIR", said)
    monkeypatch.setenv("DPCORE_CACHE_DIR", str(place / "cache"))
    (place / "cache" / "erm").mkdir(parents=True)
    (place / "cache" / "results").write_text("")  # where prepare keeps results: a file
    assert main(["prepare", "--no-mlp"]) == 2
    _one_line(capsys, "results", "is a file, not a folder")


class _Stdout:
    """A standard output whose write fails with ``error``."""

    def __init__(self, error: OSError):
        self.error = error

    def write(self, text):
        raise self.error

    def flush(self):
        pass


@pytest.mark.parametrize("error, code, said", [
    (OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), 2, "could not write to standard output"),
    (BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE)), cli.BROKEN_PIPE, None),
])
def test_an_error_on_standard_output_is_one_line_or_the_quiet_broken_pipe(error, code, said, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdout", _Stdout(error))
    assert main(["datasets", "--json"]) == code
    err = capsys.readouterr().err
    if said is None:
        assert err == ""
    else:
        assert len(err.strip().splitlines()) == 1 and said in err and "Traceback" not in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_real_full_closed_or_broken_standard_output(tmp_path):
    """The interpreter flushes stdout once more at exit: nothing may be said twice, or as a
    traceback.  Three processes at once: full (/dev/full), closed (`>&-`: refused at once), and a
    reader that went away before reading (`| head -0`: the quiet exit)."""
    command = [sys.executable, "-m", "dpcore", "datasets", "--json"]
    with open("/dev/full", "w") as full:
        procs = {"full": subprocess.Popen(command, stdout=full, stderr=subprocess.PIPE, text=True),
                 "closed": subprocess.Popen(["sh", "-c", 'exec "$@" >&-', "sh", *command], stderr=subprocess.PIPE,
                                            text=True),
                 "broken": subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)}
    procs["broken"].stdout.close()
    said = {k: p.communicate(timeout=120)[1] for k, p in procs.items()}
    codes = {k: p.returncode for k, p in procs.items()}
    assert codes == {"full": 2, "closed": 2, "broken": cli.BROKEN_PIPE}, (codes, said)
    for kind, fragment in (("full", "could not write to standard output"), ("closed", "standard output is closed")):
        lines = said[kind].strip().splitlines()
        assert len(lines) == 1 and fragment in lines[0], said[kind]
    assert said["broken"] == ""


RUN = ["run", "--dataset", "breast-cancer", "--mechanism", "gradient-dpgd", "-R", "1"]


@pytest.mark.parametrize("command, work", [(RUN, "run"), (TUNE, "tune")], ids=["run", "tune"])
def test_plan_out_is_refused_before_the_work(place, capsys, monkeypatch, command, work):
    monkeypatch.setattr({"run": cli_run, "tune": cli_sweep}[work], work, _never)
    for path, said in _bad_files(place):
        assert main([*command, "--plan-out", path]) == 2, path
        _one_line(capsys, "--plan-out", said)
    assert sorted(p.name for p in place.iterdir()) == ["file.json"]
