"""Generated hostile files for the command line (issue 55): nothing a user or a file can hand it makes
it hang, crash or lie.

Three generators, each from a declaration:

* **plan files** (``certify --plan``): for every release kind of
  :data:`dpcore.privacy.events.RELEASE_FIELDS`, a genuine plan of that kind (:data:`KIND_PLANS`, exported
  by :meth:`~dpcore.privacy.core.NoisePlan.to_dp_events`), each of its declared fields set to each value of
  :data:`HOSTILE` (NaN, Infinity, 1e400, −1, 0, a text, ``true``, 50.5, a count of 10¹², a 400-digit
  integer), each field its kind does not read set to something other than its default, and the noise
  at and beyond :data:`~dpcore.privacy.events.MAX_NOISE_MULTIPLIER` times the sensitivity.  What the
  declaration accepts (read by :func:`accepts`, a second reading of it) must certify, at the ε the plan
  gives; what it refuses must be refused in one line naming the field.  The document's stated event
  (advisory: certify composes the plan's) garbled must be said in a note, never crash; and
  :func:`dpcore.privacy.events.event_from_json` refuses exactly what :data:`EVENT_FIELDS` refuses (in this
  process: no command reads an event to compose it).
* **file arguments**: every flag of every subcommand that reads a file (:func:`file_flags`: the
  parser's PATH and FILE options that are not outputs) given a FIFO, a folder, ``/dev/zero``, a file
  one byte over its cap (sparse), a link to a FIFO, a file that does not exist: exit 2 in one line, at
  once (a FIFO within :data:`FIFO_SECONDS`, interpreter start included); the same flag given a good
  file runs (the base is sound, so the refusal is the file's).
* **CSV files** (``--csv`` of every command that reads one): empty labels, Latin-1, Excel's ``sep=``
  line (with ``;`` and decimal commas), UTF-16, a regression with a constant column and with a
  repeated one, every label empty: exit 0 with what the upload noticed as ``note:`` lines on standard
  error (each one :data:`CSV_CASES` expects), or exit 2 in one line.

Every case is a subprocess (``python -m dpcore``) under a timeout (:data:`TIMEOUT`), with the fuzzers'
budgets (:data:`WORK`, :data:`MEMORY`); :func:`judge` says what is wrong with an outcome: exit 1 or a
traceback (crash), a timeout (hang), exit 0 where the declaration refuses (silently wrong), an ε that is
not the plan's (a lie), more than one line on exit 2.  The default run keeps a sample (:func:`sample`:
every field of every kind, every hostile value, every flag, every kind of file and every CSV at least
once); ``-m slow`` runs the cross product.  The check of the check takes a guard away in this process and
sees :func:`judge` catch it.

``python tests/test_fuzz_files.py [COUNT] [SEED]`` runs a random campaign (:func:`campaign`: random
mutations of genuine plans — half of them values their declaration accepts, anywhere in its range, the
accountants' turn — and of CSVs, and odd files, none of them a case above) and prints its tally.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import os
import random
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if __name__ == "__main__":  # run as a script (the campaign): what tests/conftest.py does for pytest
    import tempfile

    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DPCORE_CACHE_DIR", tempfile.mkdtemp(prefix="dpcore-files-"))
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from dpcore.cli import common as cli_common  # noqa: E402
from dpcore.privacy import events as plan_events  # noqa: E402
from dpcore.privacy import core as P  # noqa: E402
from dpcore.cli import MAX_PLAN_BYTES  # noqa: E402
from dpcore.cli.parser import build_parser  # noqa: E402
from dpcore.datasets.upload import MAX_UPLOAD_BYTES  # noqa: E402
from dpcore.params import Interval, Param  # noqa: E402
from dpcore.privacy.events import EVENT_FIELDS, RELEASE_DEFAULTS, RELEASE_FIELDS, Field  # noqa: E402

#: budgets while fuzzing (as tests/test_fuzz_cli.py's): an accepted plan is one priced at a few seconds
WORK, MEMORY = 3e9, 512 * 2**20
#: a case that takes longer is a hang
TIMEOUT = 60.0
#: a FIFO (or any file refused for what it is) must be refused within this, interpreter start included:
#: a blocking read never answers, and an interpreter starting on a 2-core machine at load 10 took
#: over 15 s to refuse (4–5 s idle), so the bound leaves room for the load and none for a wait
FIFO_SECONDS = 45.0
DELTA = 1e-5

# -------------------------------------------------------------------------------- the declarations

#: a genuine plan of each release kind: the one whose first release of that kind is fuzzed
KIND_PLANS = {
    "gaussian": lambda: P.gaussian("a sum", 2.0, 4.0, count=10),
    "sampled-gaussian": lambda: P.sampled_gaussian("DP-SGD's steps", 1.0, 1.1, 0.01, 100),
    "gamma-norm": lambda: P.gamma_norm("a minimiser", 1.0, 2.0),
    "randomized-response": lambda: P.NoisePlan((P.Release("gaussian", "the features", 2.0, 3.0),
                                                P.randomized_response("the labels", 1.0))),
    "theorem": lambda: P.theorem("a theorem's release", 1.0, 1e-7),
    "any-of": lambda: P.any_of("the final run", [P.sampled_gaussian("steps", 1.0, 3.0, 0.01, 5),
                                                 P.sampled_gaussian("steps", 1.0, 4.0, 0.01, 5)]),
}

#: values a field of a file is given, as the file spells them
HOSTILE = {"NaN": "NaN", "Infinity": "Infinity", "1e400": "1e400", "-1": "-1", "0": "0", "a text": '"text"',
           "true": "true", "50.5": "50.5", "count 10^12": "1000000000000", "400 digits": "1" + "0" * 400}
#: what a field a kind does not read is given instead of its default
NOT_DEFAULT = {"sensitivity": "2.0", "noise": "2.0", "count": "2", "sample_rate": "0.5", "epsilon": "1.0",
               "delta": "1e-6", "alternatives": "[{}]"}


def accepts(fld: Field, value) -> bool:
    """Whether the declaration of a number accepts ``value`` (a second reading of
    :func:`dpcore.params.check`: a number of the declared type, finite, in the declared range)."""
    if value is None:
        return fld.optional
    if fld.shape == "text":
        return isinstance(value, str)
    if fld.param is None:  # a list of plans or events: no number is one
        return False
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        number = float(value)
    except OverflowError:
        return False
    if not math.isfinite(number) or (fld.param.constraint.kind is int and not number.is_integer()):
        return False
    return fld.param.constraint.contains(value)


def _plan_document(kind: str) -> tuple[dict, int]:
    """The genuine document of ``kind`` (a copy of it) and the place of its first release of that kind."""
    text, i = _plan_text(kind)
    return json.loads(text), i


@functools.lru_cache(maxsize=None)
def _plan_text(kind: str) -> tuple[str, int]:
    doc = KIND_PLANS[kind]().to_dp_events(DELTA)  # certified once: an any-of plan's PLD takes a second
    return json.dumps(doc), next(i for i, r in enumerate(doc["plan"]["releases"]) if r["kind"] == kind)


def _with_token(doc: dict, path: list, token: str) -> str:
    """``doc`` as JSON text, the value at ``path`` replaced by the raw ``token`` (NaN and Infinity
    included: what a hand or another program may write)."""
    doc = copy.deepcopy(doc)
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = "\u0000HOSTILE\u0000"
    return json.dumps(doc).replace(json.dumps("\u0000HOSTILE\u0000"), token)


@dataclass
class Case:
    """One command line on one generated file: what :func:`judge` expects of it."""

    id: str
    argv: list  # "{F}" is the file
    content: object = None  # the file's bytes, or a function giving them (None: ``special`` makes it)
    special: str | None = None  # fifo, folder, devzero, oversized, fifo-link, missing
    refusal: str | None = None  # a refusal is due, and its line holds this
    notes: tuple = ()  # on exit 0, standard error holds these
    epsilon_of: object = None  # the ε the output must state (a callable of nothing)
    group: tuple = ()  # the member of a contract the default sample keeps at least once (a field of a kind …)
    share: tuple = ()  # the kind of value the sample shares out among a contract's members
    seconds: float = TIMEOUT
    slow: bool = False  # never the default run's (a file of tens of MB)


def plan_cases() -> list[Case]:
    """Every declared field of every release kind × :data:`HOSTILE`; every field a kind does not read
    set; the stated event garbled; each genuine plan as it is."""
    cases = []
    for kind in RELEASE_FIELDS:
        doc, i = _plan_document(kind)
        cases.append(Case(f"plan {kind} as written", ["certify", "--plan", "{F}", "--json"],
                          json.dumps(doc).encode(), epsilon_of=_epsilon(doc), group=("genuine plan",),
                          share=("genuine plan",)))
        for name, fld in RELEASE_FIELDS[kind].items():
            for label, token in HOSTILE.items():
                text = _with_token(doc, ["plan", "releases", i, name], token)
                cases.append(_plan_case(f"plan {kind}.{name} = {label}", text, f"releases[{i}].{name}", fld, token,
                                        ("plan field", kind, name), ("plan value", label)))
        if {"noise", "sensitivity"} <= set(RELEASE_FIELDS[kind]):  # the one rule across fields: σ/Δ ≤ 1e100
            sensitivity = doc["plan"]["releases"][i]["sensitivity"]
            for factor, refusal in ((plan_events.MAX_NOISE_MULTIPLIER, None), (10 * plan_events.MAX_NOISE_MULTIPLIER,
                                                                               "noise over its sensitivity")):
                text = _with_token(doc, ["plan", "releases", i, "noise"], repr(sensitivity * factor))
                cases.append(Case(f"plan {kind} noise over sensitivity {factor:g}", ["certify", "--plan", "{F}", "--json"],
                                  text.encode(), refusal=refusal, epsilon_of=None if refusal else _epsilon(json.loads(text)),
                                  group=("noise over sensitivity", refusal is None), share=("ratio", kind)))
        for name, token in NOT_DEFAULT.items():
            if name not in RELEASE_FIELDS[kind]:
                text = _with_token(doc, ["plan", "releases", i, name], token)
                cases.append(Case(f"plan {kind}.{name} (not its field) = {token}", ["certify", "--plan", "{F}"],
                                  text.encode(), refusal=f"releases[{i}].{name}", group=("not its field",),
                                  share=("not its field", name)))
    for label, (text, refusal, epsilon_of, slow) in SHAPES.items():
        cases.append(Case(f"plan shape: {label}", ["certify", "--plan", "{F}", "--json"],
                          lambda text=text: text().encode(), refusal=refusal, epsilon_of=epsilon_of,
                          group=("plan shape", label), share=("plan shape",), slow=slow))
    doc, _ = _plan_document("sampled-gaussian")
    for label, token in (("a text", '"text"'), ("-1", "-1"), ("an object", "{}")):
        text = _with_token(doc, ["event", "event", "event", "noise_multiplier"], token)
        cases.append(Case(f"plan stated event's noise_multiplier = {label}", ["certify", "--plan", "{F}", "--json"],
                          text.encode(), notes=("event is not its plan's",), epsilon_of=_epsilon(doc),
                          group=("stated event",), share=("stated event",)))
    return cases


def _shape(what: str) -> str:
    """A plan whose size or shape is the hazard (the reported hangs among them), as JSON text."""
    doc, i = _plan_document("sampled-gaussian")
    one = doc["plan"]["releases"][i]
    if what == "many":  # 10,000 distinct releases: 2.4 MB, hours of accounting
        doc["plan"]["releases"] = [{**one, "count": 1, "noise": one["noise"] * (1 + k / 1e4)} for k in range(10_000)]
    elif what == "copies":  # a genuine list of 1,000 identical documents: certified once
        doc = P.dp_events_list([("a run", KIND_PLANS["sampled-gaussian"](), DELTA)] * 1000)
    elif what == "deep":
        deep: dict = {"releases": [one], "parts": [], "void": None, "neighbouring": P.NEIGHBOURING}
        for _ in range(plan_events.MAX_DEPTH + 1):
            deep = {"releases": [], "parts": [deep, deep], "void": None, "neighbouring": P.NEIGHBOURING}
        doc["plan"] = deep
    elif what == "disjoint":  # a part of next to no noise: ε astronomical, dp-accounting's grid beyond any budget
        tiny = {**one, "kind": "gaussian", "noise": 1e-61, "sample_rate": 1.0, "count": 287}
        doc["plan"] = {"releases": [], "parts": [{"releases": [{**one, "count": 5}], "parts": [], "void": None,
                                                   "neighbouring": P.NEIGHBOURING},
                                                  {"releases": [tiny], "parts": [], "void": None,
                                                   "neighbouring": P.NEIGHBOURING}],
                       "void": None, "neighbouring": P.NEIGHBOURING}
    else:  # one release more than a file may hold: 24 MB
        doc["plan"]["releases"] = [{**one, "count": 1}] * (plan_events.MAX_RELEASES + 1)
    return json.dumps(doc)


#: the shapes: (text, the refusal due or None, the ε due, slow)
SHAPES = {
    "10,000 releases": (lambda: _shape("many"), "budget", None, False),
    "1,000 copies of a genuine plan": (lambda: _shape("copies"), None,
                                       lambda: _epsilon(_plan_document("sampled-gaussian")[0])(), False),
    f"nested {plan_events.MAX_DEPTH + 1} deep": (lambda: _shape("deep"), "nested more than", None, False),
    # issue 55's campaign: dp-accounting composes disjoint parts one by one, so they are priced one by one
    "disjoint parts, one of next to no noise": (lambda: _shape("disjoint"), None,
                                                lambda: _epsilon(json.loads(_shape("disjoint")))(), False),
    f"{plan_events.MAX_RELEASES + 1:,} releases": (lambda: _shape("wide"), "releases in one file", None, True),
}


def _plan_case(case_id, text, where, fld, token, group, share) -> Case:
    argv = ["certify", "--plan", "{F}", "--json"]
    if token in ("NaN", "Infinity"):
        return Case(case_id, argv, text.encode(), refusal="strict JSON", group=group, share=share)
    if accepts(fld, json.loads(token)):
        return Case(case_id, argv, text.encode(), epsilon_of=_epsilon(json.loads(text)), group=group, share=share)
    return Case(case_id, argv, text.encode(), refusal=where, group=group, share=share)


def _epsilon(doc: dict):
    """The ε the document's plan certifies at its δ (None where it states none)."""
    def value():
        eps = P.certify(P.NoisePlan.from_dp_events(doc), DELTA)
        return eps if math.isfinite(eps) else None
    return value


def file_flags() -> list[tuple[str, str]]:
    """(subcommand, flag) of every option that names a file to read: a PATH or FILE metavar, not an output."""
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction").choices
    return [(command, action.option_strings[0]) for command, parser in sub.items() for action in parser._actions
            if action.metavar in ("PATH", "FILE") and not action.option_strings[0].endswith("-out")]


#: each file flag's command line around it (quick: a few steps, runs, trials)
FLAG_BASES = {
    ("run", "--csv"): ["run", "--mechanism", "gradient-dpgd", "-R", "1", "-T", "3", "--label", "y"],
    ("audit", "--csv"): ["audit", "--mechanism", "gradient-dpgd", "-T", "3", "--trials", "20", "--label", "y"],
    ("tune", "--csv"): ["tune", "--mechanisms", "output-gaussian", "--epsilons", "1", "-R", "1", "--final-repeats",
                        "1", "--label", "y"],
    ("certify", "--csv"): ["certify", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "100",
                           "--label", "y"],
    ("certify", "--plan"): ["certify"],
}
#: files no command reads: (what its refusal line says)
BAD_FILES = {"fifo": "cannot be read", "folder": "cannot be read", "devzero": "cannot be read",
             "oversized": "larger than", "fifo-link": "cannot be read", "missing": "cannot be read"}
#: each flag's cap (an oversized file is one byte more, sparse)
CAPS = {"--csv": MAX_UPLOAD_BYTES, "--plan": MAX_PLAN_BYTES}


def _good_csv(rows: int = 120, label: str = "y", seed: int = 3) -> str:
    rng = random.Random(seed)
    lines = ["a,b,colour," + label]
    for _ in range(rows):
        a, b = rng.gauss(0, 1), rng.gauss(0, 1)
        lines.append(f"{a:.4f},{b:.4f},{rng.choice(['red', 'blue'])},{'yes' if a - b + rng.gauss(0, .3) > 0 else 'no'}")
    return "\n".join(lines) + "\n"


def _good_file(flag: str) -> bytes:
    if flag == "--plan":
        return json.dumps(P.dp_events_list([("a sum", P.gaussian("a sum", 1.0, 2.0, 3), DELTA)])).encode()
    return _good_csv().encode()


def file_cases() -> list[Case]:
    cases = []
    flags = file_flags()
    for command, flag in flags:
        base = FLAG_BASES[(command, flag)]
        cases.append(Case(f"{command} {flag} a good file", base + [flag, "{F}"], _good_file(flag),
                          group=("file", command, flag), share=("file", "good")))
        for special, said in BAD_FILES.items():
            cases.append(Case(f"{command} {flag} {special}", base + [flag, "{F}"], special=special, refusal=said,
                              group=("file", command, flag), share=("file", special), seconds=FIFO_SECONDS))
    return cases


def _csv(text: str, encoding: str = "utf-8") -> bytes:
    return text.encode(encoding)


def _empty_labels() -> str:
    lines = _good_csv(200).splitlines()
    return "\n".join([lines[0]] + [ln.rsplit(",", 1)[0] + "," if i % 3 == 0 else ln
                                   for i, ln in enumerate(lines[1:])]) + "\n"


def _regression(extra: str) -> str:
    rng = random.Random(5)
    lines = ["y,a,b," + extra]
    for _ in range(150):
        a, b = rng.gauss(0, 1), rng.gauss(0, 1)
        lines.append(f"{2 * a - b + rng.gauss(0, .1):.4f},{a:.4f},{b:.4f},{1.0 if extra == 'k' else a:.4f}")
    return "\n".join(lines) + "\n"


#: CSVs the upload reads: (bytes, extra flags, the notes exit 0 must carry, a refusal due, commands it applies to)
CSV_CASES = {
    "67 of 200 labels empty": (_csv(_empty_labels()), [], ("note: 67 rows with a missing value were dropped",), None,
                               None),
    "Latin-1": (_csv(_good_csv().replace("red", "rouge é").replace("blue", "bleu ç"), "latin-1"), [],
                ("note: the file is not UTF-8",), None, None),
    "sep=,": (_csv("sep=,\n" + _good_csv()), [], ("Excel's separator line",), None, None),
    "sep=; and decimal commas": (_csv("sep=;\r\n" + _good_csv().replace(",", ";").replace(".", ",")), [],
                                 ("Excel's separator line", "decimal commas"), None, None),
    "UTF-16": (_csv(_good_csv(), "utf-16"), [], (), None, None),
    "every label empty": (_csv("a,b,y\n" + "".join(f"{i},{i % 3}, \n" for i in range(50))), [], (),
                          "no rows left", None),
    "regression, a constant column": (_csv(_regression("k")), ["--task", "regression", "--model", "linreg"], (),
                                      None, ("run", "audit", "certify")),
    "regression, a repeated column": (_csv(_regression("a2")), ["--task", "regression", "--model", "linreg"], (),
                                      None, ("run", "audit", "certify")),
}


def csv_cases() -> list[Case]:
    cases = []
    for command, flag in file_flags():
        if flag != "--csv":
            continue
        base = FLAG_BASES[(command, flag)]
        for name, (content, extra, notes, refusal, commands) in CSV_CASES.items():
            if commands is not None and command not in commands:
                continue
            argv = [a for a in base if a not in ("--label", "y")] + ["--label", "y", *extra, "--csv", "{F}"]
            if command == "certify" and extra:
                argv = [a for a in argv if a not in ("--model", "linreg")]
            cases.append(Case(f"{command} --csv {name}", argv, content, refusal=refusal, notes=notes,
                              group=("csv", name), share=("csv command", command)))
    return cases


def sample(cases: list[Case]) -> list[Case]:
    """The default run's cases, deterministic: each contract's every member (:attr:`Case.group`: a
    field of a release kind, a file flag, a CSV) at least once, with the kind of value tried least so
    far (:attr:`Case.share`), then each kind of value not yet tried once; and every FIFO."""
    kept, tried = [], {}
    groups: dict = {}
    for case in cases:
        if not case.slow:
            groups.setdefault(case.group, []).append(case)
    for group in groups.values():
        first = min(group, key=lambda c: tried.get(c.share, 0))  # min keeps the earliest of a tie
        kept.append(first)
        tried[first.share] = tried.get(first.share, 0) + 1
    for case in cases:
        if case.slow:
            continue
        if case.share not in tried or (case.special == "fifo" and case not in kept):
            kept.append(case)
            tried[case.share] = tried.get(case.share, 0) + 1
    return kept


ALL_CASES = plan_cases() + file_cases() + csv_cases()
SAMPLED = {c.id for c in sample(ALL_CASES)}

# -------------------------------------------------------------------------------- running and judging


def make_file(case: Case, folder: Path) -> str:
    path = folder / "input"
    if case.special == "missing":
        return str(folder / "no-such-file")
    if case.special == "folder":
        path.mkdir()
    elif case.special == "fifo":
        os.mkfifo(path)
    elif case.special == "fifo-link":
        os.mkfifo(folder / "fifo")
        path.symlink_to(folder / "fifo")
    elif case.special == "devzero":
        return "/dev/zero"
    elif case.special == "oversized":
        flag = next(a for a in case.argv if a in CAPS)
        with open(path, "wb") as f:
            f.truncate(CAPS[flag] + 1)  # sparse: no disk spent
    else:
        path.write_bytes(case.content() if callable(case.content) else case.content)
    return str(path)


def run_case(case: Case, folder: Path, env: dict | None = None) -> tuple[int | None, str, str, float]:
    """The case as a subprocess: (exit code, None on a timeout; stdout; stderr; seconds)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = make_file(case, folder)
    argv = [a.replace("{F}", path) for a in case.argv]
    environ = {**os.environ, "DPCORE_WORK_BUDGET": repr(WORK), "DPCORE_MEMORY_BUDGET": repr(MEMORY),
               "DPCORE_CACHE_DIR": str(folder / "cache"), "PYTHONPATH": str(ROOT), **(env or {})}
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "dpcore", *argv], capture_output=True, text=True,
                              timeout=case.seconds, env=environ, cwd=folder, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        return None, _text(exc.stdout), _text(exc.stderr), time.perf_counter() - started
    return done.returncode, done.stdout, done.stderr, time.perf_counter() - started


def _text(data) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


#: standard-error lines an exit 0 may carry besides the result: notes, warnings, progress
_CHATTER = re.compile(r"^(note: |warning: |\[|tuned at )")


def judge(case: Case, code: int | None, out: str, err: str) -> list[str]:
    """What is wrong with an outcome (nothing: ``[]``): ``crash`` (exit 1, a traceback, another code),
    ``hang`` (no answer within the case's time), ``silent`` (exit 0 where a refusal is due, or a note
    it owes missing), ``lie`` (an ε that is not the plan's), ``lines`` (exit 2 with more than one line
    or with output), ``reason`` (refused, but not for the reason due)."""
    lines = err.strip().splitlines()
    if code is None:
        return [f"hang: no answer within {case.seconds:g} s"]
    if "Traceback" in err or code not in (0, 2):
        return [f"crash: exit {code}: {err.strip()[-300:]}"]
    if code == 2:
        bad = [] if len(lines) == 1 and not out else [f"lines: exit 2 with {len(lines)} lines, {len(out)} chars out"]
        line = lines[-1] if lines else ""
        if case.refusal is not None and case.refusal not in line:
            bad.append(f"reason: refused, but not for {case.refusal!r}: {line}")
        if case.refusal is None and "budget" not in line:  # a fact of the machine is always a refusal allowed
            bad.append(f"reason: refused what the declaration accepts: {line}")
        return bad
    if case.refusal is not None:
        return [f"silent: exit 0 where a refusal naming {case.refusal!r} is due"]
    bad = [f"silent: a note missing: {n!r}" for n in case.notes if n not in err and n not in out]
    bad += [f"lines: {ln!r} on standard error of exit 0" for ln in lines if not _CHATTER.match(ln)]
    if case.epsilon_of is not None:
        try:
            stated = json.loads(out)
        except ValueError:
            return bad + [f"lie: not one JSON document: {out[:200]!r}"]
        stated = stated[0] if isinstance(stated, list) else stated  # a list's first document
        want = case.epsilon_of()
        if stated.get("epsilon") != want:
            bad.append(f"lie: ε {stated.get('epsilon')!r} printed, the plan certifies {want!r}")
    return bad


# -------------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=[] if c.id in SAMPLED else [pytest.mark.slow])
                                  for c in ALL_CASES])
def test_a_generated_file_runs_or_is_refused_in_one_line(case, tmp_path):
    code, out, err, seconds = run_case(case, tmp_path)
    assert judge(case, code, out, err) == [], (case.argv, code, err[-600:], out[:300])
    if case.special is not None:
        assert seconds < FIFO_SECONDS, f"{case.id}: refused after {seconds:.1f} s, not at once"


def test_the_generators_cover_every_declaration():
    """A new release kind needs a genuine plan; every file flag a base; every kind's every field and
    every hostile value are tried, and the default sample keeps each of them."""
    assert set(KIND_PLANS) == set(RELEASE_FIELDS)
    assert set(file_flags()) == set(FLAG_BASES) == {("run", "--csv"), ("audit", "--csv"), ("tune", "--csv"),
                                                    ("certify", "--csv"), ("certify", "--plan")}
    fields = {(k, f) for k, fs in RELEASE_FIELDS.items() for f in fs}
    for cases in (ALL_CASES, [c for c in ALL_CASES if c.id in SAMPLED]):
        assert {c.group[1:] for c in cases if c.group[0] == "plan field"} == fields
        assert {c.share[1] for c in cases if c.share[0] == "plan value"} == set(HOSTILE)
        assert {c.share[1] for c in cases if c.share[0] == "not its field"} == set(NOT_DEFAULT) - {"count"}
        assert {c.share[1] for c in cases if c.share[0] == "file"} == {"good", *BAD_FILES}
        assert {c.group[1:] for c in cases if c.group[0] == "file"} == set(file_flags())
        assert {c.group[1] for c in cases if c.group[0] == "csv"} == set(CSV_CASES)
        assert {c.share[1] for c in cases if c.share[0] == "csv command"} == {c for c, f in file_flags() if f == "--csv"}
    # every FIFO in the default run, whatever the sample: the hang this file was written for
    assert {c.id for c in ALL_CASES if c.special == "fifo"} <= SAMPLED
    assert 30 <= len(SAMPLED) <= 60 < len(ALL_CASES)


class _Hang(BaseException):
    """Raised by :func:`_in_process`'s alarm: a ``BaseException``, so that neither ``main`` (an
    internal error) nor a reader (``TimeoutError`` is an ``OSError``) can take it for another failure."""


def _in_process(case: Case, folder: Path, limit: float = 20.0) -> tuple[int | None, str, str]:
    """The case through ``main`` in this process (for a guard patched away), under a time limit."""
    import signal

    from clirun import run_cli  # tests/clirun.py

    folder.mkdir(parents=True, exist_ok=True)
    path = make_file(case, folder)

    def hang(signum, frame):
        raise _Hang(case.id)

    old = signal.signal(signal.SIGALRM, hang)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        code, out, err = run_cli(*[a.replace("{F}", path) for a in case.argv])
    except _Hang:
        return None, "", ""
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return code, out, err


def test_check_of_the_check_a_plan_guard_taken_away_is_caught(tmp_path, monkeypatch):
    """Without the declaration's check of a number, a negative sampling rate certifies ε = 0 (or
    crashes): the judge calls it what it is; with the check, the same case is refused for its field."""
    case = next(c for c in ALL_CASES if c.id == "plan sampled-gaussian.sample_rate = -1")
    monkeypatch.setenv("DPCORE_WORK_BUDGET", repr(WORK))
    assert judge(case, *_in_process(case, tmp_path / "guarded")) == []
    monkeypatch.setattr(plan_events, "_check_field", lambda fld, value, where: value)
    problems = judge(case, *_in_process(case, tmp_path / "unguarded"))
    assert problems and problems[0].split(":")[0] in ("silent", "crash", "lie"), problems


def test_check_of_the_check_a_blocking_reader_hangs_on_a_fifo(tmp_path, monkeypatch):
    """The one way files are read is what keeps a FIFO from hanging the command: a plain ``open``
    in its place waits for a writer that never comes, and the judge calls it a hang (or, interrupted
    inside ``main``, a crash)."""
    case = next(c for c in ALL_CASES if c.id == "certify --plan fifo")
    assert judge(case, *_in_process(case, tmp_path / "guarded", 5.0)) == []

    def naive(path, limit):
        with open(path, "rb") as f:
            return f.read(limit + 1)

    monkeypatch.setattr(cli_common, "read_regular", naive)  # cli_common.read_input reads every file
    code, out, err = _in_process(case, tmp_path / "unguarded", 2.0)
    assert judge(case, code, out, err)[0].split(":")[0] in ("hang", "crash")


@pytest.mark.parametrize("kind", sorted(EVENT_FIELDS))
def test_event_from_json_refuses_exactly_what_the_declaration_refuses(kind):
    """Each event type's every field × :data:`HOSTILE` (NaN and Infinity as Python reads them), in this
    process: accepted where :func:`accepts` accepts it, else a :class:`~dpcore.privacy.events.PlanError`
    naming the field; a field the type has not, and a missing one, are refused too."""
    base = _event(kind)
    assert plan_events.event_from_json(base) is not None
    for name, fld in EVENT_FIELDS[kind].items():
        for label, token in HOSTILE.items():
            value = json.loads(token) if token not in ("NaN", "Infinity") else float(token.lower()[:3])
            data = {**base, name: value}
            if fld.param is not None and accepts(fld, value):
                plan_events.event_from_json(data)
                continue
            with pytest.raises(plan_events.PlanError, match=re.escape(f"event.{name}")):
                plan_events.event_from_json(data)
        with pytest.raises(plan_events.PlanError, match="needs its"):
            plan_events.event_from_json({k: v for k, v in base.items() if k != name})
    with pytest.raises(plan_events.PlanError, match="has no field"):
        plan_events.event_from_json({**base, "surplus": 1})


def _event(kind: str) -> dict:
    """A valid event of ``kind`` from its declaration: each number well inside its range, each inner
    event a Gaussian."""
    out: dict = {"type": kind}
    for name, fld in EVENT_FIELDS[kind].items():
        if fld.shape == "event":
            out[name] = {"type": "GaussianDpEvent", "noise_multiplier": 1.0}
        elif fld.shape == "events":
            out[name] = [{"type": "GaussianDpEvent", "noise_multiplier": 1.0}]
        else:
            c = fld.param.constraint
            out[name] = c.kind(2 if c.kind is int else (0.5 if (c.high or 2) <= 1 else 1.0))
            assert c.contains(out[name]), (kind, name)
    return out


def test_every_genuine_event_reads_back_through_the_declaration():
    """What :func:`~dpcore.privacy.events.event_to_json` writes for each kind's genuine plan, the declaration accepts."""
    for kind in RELEASE_FIELDS:
        plan = KIND_PLANS[kind]()
        assert plan_events.event_from_json(plan_events.event_to_json(plan.event())) == plan.event()


def test_a_cache_entry_holding_a_number_no_float_holds_is_computed_again(tmp_path, caplog):
    """A stored calibration whose multiplier is a 400-digit integer: ``float()`` raises
    ``OverflowError``, an ``ArithmeticError``, which the cache layer reads as a bad entry (logged,
    computed again), never an error that escapes the reader."""
    from dpcore.privacy import accounting as acc
    from dpcore.cache import INVALID, DiskCache

    assert issubclass(OverflowError, INVALID[-1]) and ArithmeticError in INVALID
    event = (1.0, 1e-5, 0.01, 100)
    fresh = acc.calibrate_sampled_gaussian(*event)
    table = acc.CalibrationTable(tmp_path)
    assert table.sampled_gaussian(*event) == fresh
    path = table.path(*event)
    rec = json.loads(path.read_text())
    path.write_text(json.dumps(rec).replace(json.dumps(rec["noise_multiplier"]), "1" + "0" * 400))
    assert acc.CalibrationTable(tmp_path).sampled_gaussian(*event) == fresh
    assert "discarding" in caplog.text
    # and the layer itself, for any check: a number no float holds is a bad entry
    cache = DiskCache(tmp_path, prefix="x-")
    (tmp_path / "x-big.json").write_text("1" + "0" * 400)
    assert cache.read_file(tmp_path / "x-big.json", check=float) is None


# -------------------------------------------------------------------------------- the campaign


@dataclass
class Tally:
    total: int = 0
    exit0: int = 0
    exit2: int = 0
    crash: int = 0
    hang: int = 0
    silent: int = 0
    other: int = 0
    failures: list = field(default_factory=list)

    def add(self, case: Case, code, problems: list[str]) -> None:
        self.total += 1
        if code == 0:
            self.exit0 += 1
        elif code == 2:
            self.exit2 += 1
        worst = next((k for k in ("crash", "hang", "silent", "lie") if any(p.startswith(k) for p in problems)), None)
        if worst in ("crash", "hang"):
            setattr(self, worst, getattr(self, worst) + 1)
        elif worst in ("silent", "lie"):
            self.silent += 1
        elif problems:
            self.other += 1
        if problems:
            self.failures.append((case.id, problems))


def _walk(node, path=()):
    """Every (path, value) of a JSON document, leaves and containers."""
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, path + (i,))


def file_refusal(doc) -> str | None:
    """Whether a (mutated) file must be refused, read from the declarations (a second reading): what
    they refuse first, or None.  A list: its version, its documents and omitted tasks; a document: its
    version, its stated certificate and label (:data:`dpcore.certify.core.CERTIFY_PARAMS`' δ), its plan."""
    if not isinstance(doc, dict):
        return "not an object"
    if isinstance(doc.get("format"), str) and doc["format"] == P.DP_EVENTS_LIST_FORMAT:
        docs, omitted = doc.get("documents"), doc.get("omitted") or []
        if type(doc.get("version")) is not int or doc.get("version") != 1:
            return "version"
        if not isinstance(docs, list) or not isinstance(omitted, list) or not (docs or omitted):
            return "documents"
        if any(not (isinstance(o, dict) and isinstance(o.get("label"), str) and isinstance(o.get("reason"), str))
               for o in omitted):
            return "omitted"
        return next((f"documents[{i}]: {bad}" for i, d in enumerate(docs) if (bad := document_refusal(d))), None)
    return document_refusal(doc)


def document_refusal(doc) -> str | None:
    from dpcore.certify.core import CERTIFY_PARAMS

    if not isinstance(doc, dict) or not isinstance(doc.get("format"), str) or doc["format"] != P.DP_EVENTS_FORMAT:
        return "format"
    if type(doc.get("version")) is not int or doc.get("version") != 1:
        return "version"
    if "plan" not in doc:
        return "plan"
    bad = plan_refusal(doc)
    if bad:
        return bad
    if doc.get("label") is not None and not isinstance(doc.get("label"), str):
        return "label"
    stated = doc.get("certified")
    if stated is not None and not isinstance(stated, dict):
        return "certified"
    stated = stated or {}
    if not accepts(Field(CERTIFY_PARAMS["delta"], optional=True), stated.get("delta")):
        return "certified.delta"
    if not accepts(Field(Param("epsilon", Interval(float, 0.0, None, "left"), None, ""), optional=True),
                   stated.get("epsilon")):
        return "certified.epsilon"
    return None


def file_epsilon(doc):
    """The ε (None: ∞) the first document of a file accepted must print: its plan at its δ."""
    from dpcore.certify.core import CERTIFY_PARAMS

    def value():
        if doc.get("format") == P.DP_EVENTS_LIST_FORMAT and not doc["documents"]:
            return None  # an omitted task only: no guarantee
        first = doc["documents"][0] if doc.get("format") == P.DP_EVENTS_LIST_FORMAT else doc
        plan = P.NoisePlan.from_dp_events(first)
        delta = (first.get("certified") or {}).get("delta") or CERTIFY_PARAMS["delta"].default
        eps = P.certify(plan, delta) if delta >= P.fixed_delta(plan) else math.inf
        return eps if math.isfinite(eps) else None
    return value


def plan_refusal(doc) -> str | None:
    """Whether a (mutated) document's plan must be refused, read from the declarations (a second
    reading): the path of the first field they refuse, or None."""
    plan = doc.get("plan") if isinstance(doc, dict) else None
    if not isinstance(plan, dict):
        return "plan"

    def check_plan(p, where, depth):
        if not isinstance(p, dict) or depth > plan_events.MAX_DEPTH:
            return where
        if set(p) - set(plan_events.PLAN_FIELDS) or p.get("neighbouring", P.NEIGHBOURING) != P.NEIGHBOURING:
            return where
        if p.get("void") is not None and not isinstance(p.get("void"), str):
            return f"{where}.void"
        for key in ("releases", "parts"):
            if not isinstance(p.get(key, []), list):
                return f"{where}.{key}"
        if p.get("void") is None and not p.get("releases") and not p.get("parts"):
            return where
        for i, r in enumerate(p.get("releases", [])):
            at = f"{where}.releases[{i}]"
            if not isinstance(r, dict) or not isinstance(r.get("kind"), str) or r["kind"] not in RELEASE_FIELDS \
                    or not isinstance(r.get("what"), str):
                return at
            fields = RELEASE_FIELDS[r["kind"]]
            if set(r) - set(RELEASE_DEFAULTS) - {"kind", "what"}:
                return at
            for name, default in RELEASE_DEFAULTS.items():
                value = r.get(name, default)
                fld = fields.get(name)
                if fld is None:
                    if value != default or isinstance(value, bool):
                        return f"{at}.{name}"
                elif fld.shape == "plans":
                    if not isinstance(value, list) or not value:
                        return f"{at}.{name}"
                    for j, alt in enumerate(value):
                        bad = check_plan(alt, f"{at}.{name}[{j}]", depth + 1)
                        if bad:
                            return bad
                elif name not in r and not (fld.optional or name == "count"):
                    return at
                elif not accepts(fld, value):
                    return f"{at}.{name}"
            noise, sensitivity = r.get("noise"), r.get("sensitivity")
            if noise is not None and sensitivity is not None and noise / sensitivity > plan_events.MAX_NOISE_MULTIPLIER:
                return f"{at}: noise over sensitivity"
        for j, part in enumerate(p.get("parts", [])):
            bad = check_plan(part, f"{where}.parts[{j}]", depth + 1)
            if bad:
                return bad
        return None

    return check_plan(plan, "plan", 0)


#: genuine plans the campaign mutates: every release kind's, a tuning's kinds together, disjoint parts
def _campaign_plans() -> list[dict]:
    plans = [KIND_PLANS[k]() for k in RELEASE_FIELDS]
    plans.append(P.parallel([P.gaussian("client 1", 1.0, 3.0, 5), P.gaussian("client 2", 1.0, 2.0, 5)]))
    plans.append(P.compose([P.theorem("the choice", 0.5), P.sampled_gaussian("steps", 1.0, 2.0, 0.02, 50)]))
    plans.append(P.NoisePlan((P.Release("gaussian", "features", 2.0, 4.0),
                              P.Release("randomized-response", "labels", epsilon=0.8, count=3))))
    return [json.loads(json.dumps(p.to_dp_events(DELTA))) for p in plans]


_NUMBERS = ("NaN", "Infinity", "-Infinity", "1e400", "-1e400", "-0.0", "5e-324", "1e-310", "1e308", "0.5", "1",
            "2", "3.0", "-3", "1e-12", "0.999999", "1.0000001", "700", "701", "1e6", "1000001", "999999999",
            "1000000001", "true", "false", "null", '""', '"1"', "[]", "{}", "[1]", "12345678901234567890",
            "1" + "0" * 30, "0.1", "100", "1e-300")


def _mutate_plan(rng: random.Random, doc: dict) -> tuple[str, dict | None]:
    """One to three random changes of a genuine document: a value replaced by a random token, a field
    removed or added, a release duplicated or removed, a count multiplied, mostly in its plan, else in
    its stated certificate, label or version; sometimes the document put in a list, with copies and
    an omitted task; (the JSON text, the file as Python reads it, None where it holds NaN or Infinity)."""
    doc = copy.deepcopy(doc)
    if rng.random() < 0.5:  # values the declaration accepts, anywhere in their range: the accountants' turn
        return _in_range(rng, doc)
    if rng.random() < 0.25:
        doc = {"format": P.DP_EVENTS_LIST_FORMAT, "version": 1, "documents": [doc] * rng.randint(1, 3),
               "omitted": [{"label": "a task", "reason": "no plan"}] if rng.random() < 0.5 else []}
    for _ in range(rng.choice((1, 1, 2, 3))):
        root = doc["documents"][0] if "documents" in doc and doc["documents"] else doc
        root = root if isinstance(root, dict) else doc
        target = root if rng.random() < 0.15 else root.get("plan", root)
        target = doc if "documents" in doc and rng.random() < 0.1 else target
        places = [(p, v) for p, v in _walk(target) if p and p[0] != "event"]
        if not places:
            continue
        path, value = rng.choice(places)
        parent = target
        for key in path[:-1]:
            parent = parent[key]
        roll = rng.random()
        if roll < 0.6 or not isinstance(parent, (dict, list)):
            parent[path[-1]] = "\u0000T" + rng.choice(_NUMBERS) + "\u0000"
        elif roll < 0.7 and isinstance(parent, dict):
            parent.pop(path[-1])
        elif roll < 0.8 and isinstance(parent, dict):
            parent[rng.choice(("extra", "kind", "count", "noise", "sample_rate", "epsilon"))] = \
                "\u0000T" + rng.choice(_NUMBERS) + "\u0000"
        elif roll < 0.9 and isinstance(value, list) and value:
            value.extend(copy.deepcopy(value) * rng.choice((1, 2)))
        elif isinstance(parent, dict) and isinstance(value, (int, float)) and not isinstance(value, bool):
            parent[path[-1]] = value * rng.choice((10, 1000, 10**6, -1, 0.5))
        else:
            parent[path[-1]] = "\u0000T" + rng.choice(_NUMBERS) + "\u0000"
    text = re.sub(r'"\\u0000T(.*?)\\u0000"', lambda m: json.loads(f'"{m.group(1)}"'), json.dumps(doc))
    try:
        parsed = json.loads(text, parse_constant=lambda t: (_ for _ in ()).throw(ValueError(t)))
    except ValueError:
        parsed = None
    return text, parsed


def _in_range(rng: random.Random, doc: dict) -> tuple[str, dict]:
    """One to three declared numbers of a genuine document's releases set to random values their
    declaration accepts: an end of the range or a value log-uniform across it (10⁻³⁰⁰ … 10³⁰⁰)."""
    releases = [v for p, v in _walk(doc["plan"]) if isinstance(v, dict) and v.get("kind") in RELEASE_FIELDS]
    for _ in range(rng.choice((1, 1, 2, 3))):
        release = rng.choice(releases)
        numbers = [(k, f) for k, f in RELEASE_FIELDS[release["kind"]].items() if f.param is not None]
        name, fld = rng.choice(numbers)
        c = fld.param.constraint
        low = max(c.low if c.low is not None else 0.0, 1e-300 if c.kind is float else 1)
        high = min(c.high if c.high is not None else 1e300, 1e300)
        roll = rng.random()
        if roll < 0.15 and c.closed in ("both", "left") and c.low is not None:
            value = c.low
        elif roll < 0.3:
            value = high
        elif low > 0:
            value = math.exp(rng.uniform(math.log(low), math.log(high)))
        else:
            value = rng.uniform(low, high)
        value = int(round(value)) if c.kind is int else float(value)
        if not c.contains(value):
            value = release[name] if release.get(name) is not None else value
        release[name] = value
    return json.dumps(doc), json.loads(json.dumps(doc))


def _mutate_csv(rng: random.Random) -> tuple[bytes, list, tuple, str | None, int]:
    """A random CSV: a classification or regression table, cells emptied or made '?', NA or huge, a
    sep= line (with , or ;), Latin-1, UTF-16 or a BOM, blank lines, trailing commas; (bytes, extra
    flags, the notes exit 0 owes, a refusal due if any, the rows a missing value must drop)."""
    regression = rng.random() < 0.3
    rows = rng.randint(20, 150)
    header = ["y", "a", "b", "town"]
    body = []
    for _ in range(rows):
        a, b = rng.gauss(0, 1), rng.gauss(0, 1)
        y = f"{a - b:.3f}" if regression else rng.choice(("yes", "no"))
        body.append([y, f"{a:.4f}", f"{b:.4f}", rng.choice(("Orléans", "Besançon", "Lyon"))])
    missing_rows = set()
    for _ in range(rng.choice((0, 0, 1, 3, 10, rows // 2))):
        i, j = rng.randrange(rows), rng.randrange(4)
        body[i][j] = rng.choice(("", "?", " "))
        missing_rows.add(i)
    for _ in range(rng.choice((0, 0, 1))):
        body[rng.randrange(rows)][rng.choice((1, 2))] = rng.choice(("NA", "1e400", "inf", "-1e308", "x"))
    sep = rng.choice((",", ",", ";"))
    lines = [sep.join(header)] + [sep.join(r) for r in body]
    if rng.random() < 0.2:
        lines.insert(rng.randrange(1, len(lines)), "")
    notes = []
    if sep == ";" or rng.random() < 0.2:
        lines.insert(0, f"sep={sep}")
        notes.append("Excel's separator line")
    elif rng.random() < 0.5 and sep == ";":
        pass
    text = ("\r\n" if rng.random() < 0.3 else "\n").join(lines) + "\n"
    encoding = rng.choice(("utf-8", "utf-8", "latin-1", "utf-16", "utf-8-sig"))
    if encoding == "latin-1":
        notes.append("not UTF-8")
    extra = ["--task", "regression", "--model", "linreg"] if regression else []
    return text.encode(encoding), extra, tuple(notes), None, len(missing_rows)


_ODD_FILES = [b"", b"\xef\xbb\xbf", b"\x00" * 100, b"{}", b"[]", b"null", b"[" * 5000 + b"]" * 5000,
              b'{"format": "dpcore.dp-events-list", "version": 1, "documents": [' + b"{}," * 1000 + b"{}]}",
              b'{"format": "dpcore.dp-events-list", "version": true, "documents": []}',
              b"y\n" + b"1\n" * 10, b"y,a\n" + b"yes,1\n" * 5 + b"no,2\n" * 5, "y,é\nyes,1\n".encode("utf-16-le"),
              b"\xff\xfe\x00", b"sep=\n" + _good_csv().encode(), b"a,a,y\n1,2,yes\n3,4,no\n" * 10]


def campaign(count: int = 300, seed: int = 55, folder: Path | None = None) -> Tally:
    """``count`` random inputs, none of them a case above: mutated genuine plans (about half), mutated
    CSVs through a random command that reads one, and odd files through a random file flag; each judged."""
    import tempfile

    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(prefix="dpcore-campaign-")) if folder is None else folder
    plans = _campaign_plans()
    seen = {c.content for c in ALL_CASES}
    tally = Tally()
    csv_flags = [(c, f) for c, f in file_flags() if f == "--csv"]
    while tally.total < count:
        roll = rng.random()
        if roll < 0.5:
            text, parsed = _mutate_plan(rng, rng.choice(plans))
            due = "strict JSON" if parsed is None else file_refusal(parsed)
            case = Case(f"campaign plan {tally.total}", ["certify", "--plan", "{F}", "--json"], text.encode(),
                        epsilon_of=None if due else file_epsilon(parsed))
        elif roll < 0.9:
            content, extra, notes, refusal, dropped = _mutate_csv(rng)
            command, flag = rng.choice(csv_flags)
            if extra and command == "tune":
                command = "run"
            base = [a for a in FLAG_BASES[(command, flag)] if a not in ("--label", "y")]
            if command == "certify":
                extra = [a for a in extra if a not in ("--model", "linreg")]
            said = (f"{dropped} row with a missing value was dropped" if dropped == 1
                    else f"{dropped:,} rows with a missing value were dropped")
            notes = notes + ((f"note: {said}",) if dropped else ())
            case = Case(f"campaign csv {tally.total}", base + ["--label", "y", *extra, "--csv", "{F}"], content,
                        notes=notes)
            due = None
        else:
            content = rng.choice(_ODD_FILES)
            command, flag = rng.choice(file_flags())
            case = Case(f"campaign odd file {tally.total}", FLAG_BASES[(command, flag)] + [flag, "{F}"], content)
            due = None
        if case.content in seen:
            continue
        seen.add(case.content)
        code, out, err, _ = run_case(case, folder / str(tally.total))
        problems = judge(case, code, out, err)
        if case.id.startswith("campaign plan"):  # a refusal due: exit 2 for it; else a result
            problems = [p for p in problems if not p.startswith("reason")]
            if due is not None and code == 0:
                problems.append(f"silent: exit 0 where the declaration refuses {due}")
            elif due is None and code == 2 and "budget" not in err and "strict JSON" not in err:
                problems.append(f"reason: refused what the declaration accepts: {err.strip()[-200:]}")
        elif code == 2:  # a CSV or an odd file may be refused for what it holds: one line is all we ask
            problems = [p for p in problems if not p.startswith("reason")]
        tally.add(case, code, problems)
        if __name__ == "__main__":
            said = (err.strip().splitlines() or [""])[-1][:150]
            print(f"{tally.total:4d} {case.id:24} exit {code}  {'; '.join(problems)[:160] or said}", flush=True)
    return tally


@pytest.mark.slow
def test_a_campaign_of_random_files_is_clean(tmp_path):
    tally = campaign(40, seed=7, folder=tmp_path)
    assert tally.crash == tally.hang == tally.silent == 0, tally.failures


if __name__ == "__main__":
    count, seed = (int(a) for a in (sys.argv[1:] + ["300", "55"])[:2])
    result = campaign(count, seed)
    print(f"total {result.total}, exit 0 {result.exit0}, exit 2 {result.exit2}, exit 1/traceback {result.crash}, "
          f"hangs {result.hang}, silently wrong {result.silent}, other {result.other}")
    for case_id, problems in result.failures:
        print(case_id, problems)
