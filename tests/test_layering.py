"""The package's import structure: layers that point down only, no circle, imports at the top.

Read from the source (``ast``), so a lazy import hidden in a function counts too.
"""

from __future__ import annotations

import ast
import fnmatch
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dpcore"

#: The house, bottom to top: each floor's rooms (a top-level module of ``dpcore`` or one of its folders).
#: A room imports rooms of its own floor or of lower ones, never of a higher one, and the rooms' imports
#: draw no circle (``test_the_rooms_draw_no_circle``): this list is the layout of ``docs/architecture.md``.
FLOORS = [
    ("foundations", ["_version", "exceptions", "jsonutil", "metrics", "cache", "params", "partition",
                     "numerics",  # shared-matrix products, compiled kernels, random streams, noise samplers
                     "privacy",  # noise plans and their certificates, the PLD route, the accountants, the events
                     "accounting",  # the old path of privacy.accounting
                     "verified"]),  # a shipped file's check, done once per content and code
    ("data", ["datasets", "shipped"]),  # the data package by role; shipped: the rule for shipped files
    ("models", ["models"]),
    ("solvers", ["optim", "erm"]),
    ("theory", ["theory"]),  # published formulas (which the mechanisms call), the bounds table and its catalog
    ("mechanisms", ["mechanisms"]),
    ("figures", ["figures", "report"]),  # charts name mechanisms by their short names
    ("experiments", ["experiments"]),  # how runs execute, one run, grids of runs, studies that arrange grids
    ("audit", ["audit"]),  # above the runs it attacks
    ("lesson", ["lesson"]),  # studies and the audit, computed ahead by "Prepare for class"
    ("interfaces", ["estimators", "certify", "export", "cli", "dpcore", "__main__"]),  # the face re-exports the entry points
]

#: Inside a room, its modules' own floors, bottom to top (``*`` patterns; a room not listed has one floor).
INSIDE = {
    "numerics": [["linalg", "streams", "noise"], ["kernels"]],
    "privacy": [["events", "accounting"], ["pld"], ["core"]],
    "datasets": [["base", "contract"], ["preprocess"], ["synthetic", "upload"], ["registry"]],
    "theory": [["formulas", "rows"], ["catalog"]],
    # what every mechanism shares, the families, those built on a family, the registry
    "mechanisms": [["base", "released"], ["baseline", "output", "gradient", "input"], ["objective", "local", "distributed"]],
    "figures": [["missed", "screen", "result", "text"], ["charts"], ["views"]],
    # execution, one run, grids of runs (with what a tuning's search runs and costs), studies that arrange grids
    "experiments": [["context", "progress"], ["result", "budget", "run"],
                    ["records", "sweep", "grid", "baselines", "search", "tune"], ["ahead", "studies", "presets*", "views"]],
    # the audit's estimators, its tests, the threat strategies, audit()
    "audit": [["bounds", "canaries", "noisecheck"], ["membership", "whitebox", "one_run", "evidence", "verdicts"],
              ["threats", "measured", "measured_release"], ["core"]],
    "certify": [["params"], ["plans"], ["core"]],
    "export": [["declare"], ["views"], ["writer"]],
    "cli": [["parser", "common"], ["run", "sweep", "audit", "certify", "export"], ["commands"]],
}


#: Imports allowed inside a function: optional dependencies, loaded only when used.
LAZY_OPTIONAL = {"distributed", "opacus"}  # opacus: the library figure of dpcore.certify, where installed


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "_data" not in p.parts}


def _imports(path: Path, name: str) -> list[tuple[str, int, bool]]:
    """(imported dpcore module or external top-level name, line, inside a function)."""
    tree = ast.parse(path.read_text())
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    inner = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
             for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom))}
    mods = _modules()
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module
            # `from . import x` imports the submodule x when there is one
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
        else:
            continue
        for t in targets:
            out.append((t, node.lineno, id(node) in inner))
    return out


def _room(module: str) -> str:
    parts = module.split(".")
    return "dpcore" if len(parts) == 1 else parts[1]


def _layer(module: str) -> tuple[int, int]:
    """A module's place: its room's floor, and its own floor inside the room (a top-level module and a
    folder's ``__init__`` on top of the room)."""
    room = _room(module)
    for rank, (_, rooms) in enumerate(FLOORS):
        if room in rooms:
            break
    else:
        raise AssertionError(f"{module} is in no room: add {room!r} to FLOORS in {__file__}")
    inner = INSIDE.get(room, [])
    if module.count(".") < 2:  # the room itself: a top-level module, or a folder's __init__
        return rank, len(inner)
    leaf = module.split(".")[2]
    for k, patterns in enumerate(inner):
        if any(fnmatch.fnmatchcase(leaf, p) for p in patterns):
            return rank, k
    if not inner:
        return rank, 0
    raise AssertionError(f"{module} is on no floor of its room: add it to INSIDE[{room!r}] in {__file__}")


def _layer_name(module: str) -> str:
    rank, k = _layer(module)
    inner = INSIDE.get(_room(module), [])
    return f"{FLOORS[rank][0]}, room {_room(module)}" + (f", floor {k} of {len(inner) + 1}" if inner else "")


def _points_down(a: str, b: str) -> bool:
    """May ``a`` import ``b``: a lower floor, another room of the same floor, or its own room's own
    floor or a lower one."""
    (fa, ka), (fb, kb) = _layer(a), _layer(b)
    return fb < fa or (fb == fa and (_room(a) != _room(b) or kb <= ka))


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {name: {t for t, _, _ in _imports(path, name) if t in mods and t != name}
            for name, path in mods.items()}


def test_every_module_has_a_layer():
    for name in _modules():
        _layer(name)


def test_imports_point_down_only():
    wrong = [f"{a} ({_layer_name(a)}) imports {b} ({_layer_name(b)})"
             for a, targets in _graph().items() for b in targets if not _points_down(a, b)]
    assert not wrong, "\n".join(wrong)


def test_there_is_no_import_circle():
    graph = _graph()
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                pytest.fail("import circle: " + " → ".join(stack[stack.index(nxt):] + [node, nxt]))
            if nxt not in state:
                visit(nxt, stack + [node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])


def _rooms_graph() -> dict[str, set[str]]:
    """The house: which room imports which (a room's own modules left out)."""
    out: dict[str, set[str]] = {}
    for a, targets in _graph().items():
        out.setdefault(_room(a), set()).update(_room(b) for b in targets if _room(b) != _room(a))
    return out


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [node, nxt] if nxt in stack else [node, nxt]
            if nxt not in state and (found := visit(nxt, stack + [node])):
                return found
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node, [])):
            return found
    return None


def test_the_rooms_draw_no_circle():
    """Folder by folder the arrows run one way: no room reaches back into one that imports it (the
    theory catalog takes the registry's names from its callers; a tuning's search lives with the
    experiments that run it)."""
    assert _circle(_rooms_graph()) is None, " → ".join(_circle(_rooms_graph()) or [])
    assert set(_rooms_graph()) == {r for _, rooms in FLOORS for r in rooms}, "FLOORS lists a room that is not there"


def test_imports_sit_at_the_top_except_optional_ones():
    found = []
    for name, path in _modules().items():
        lines = path.read_text().splitlines()
        for target, line, inside in _imports(path, name):
            if not inside:
                continue
            said = "optional" in lines[line - 1] or "optional" in lines[line - 2]
            if target.split(".")[0] not in LAZY_OPTIONAL or not said:
                found.append(f"{path.relative_to(ROOT)}:{line} imports {target} inside a function")
    assert not found, "\n".join(found)


def test_the_core_never_imports_streamlit():
    users = [f"{name} imports {t}" for name, path in _modules().items()
             for t, _, _ in _imports(path, name) if t.split(".")[0] == "streamlit"]
    assert not users


def test_the_checks_can_fail(tmp_path, monkeypatch):
    """A module of a low layer importing the experiments is caught (a check of the check)."""
    real = _graph()
    fake = {**real, "dpcore.models": {"dpcore.experiments.run"}}
    monkeypatch.setattr(sys.modules[__name__], "_graph", lambda: fake)
    with pytest.raises(AssertionError, match=r"dpcore.models \(models, room models\) imports dpcore.experiments.run"):
        test_imports_point_down_only()
    # and inside a package: the mechanisms' shared base importing a family
    inner = {**_graph(), "dpcore.mechanisms.base": {"dpcore.mechanisms.gradient"}}
    monkeypatch.setattr(sys.modules[__name__], "_graph", lambda: inner)
    with pytest.raises(AssertionError, match=r"dpcore.mechanisms.base \(mechanisms, room mechanisms, floor 0 of 4\) "
                                             r"imports dpcore.mechanisms.gradient"):
        test_imports_point_down_only()
    # and a room reaching back up into a room that imports it (the theory catalog into the registry)
    back = {**real, "dpcore.theory.catalog": real["dpcore.theory.catalog"] | {"dpcore.mechanisms"}}
    monkeypatch.setattr(sys.modules[__name__], "_graph", lambda: back)
    with pytest.raises(AssertionError, match="mechanisms → theory → mechanisms"):
        test_the_rooms_draw_no_circle()
    circle = {**_graph(), "dpcore.erm": _graph()["dpcore.erm"] | {"dpcore.experiments.run"}}
    monkeypatch.setattr(sys.modules[__name__], "_graph", lambda: circle)
    with pytest.raises(pytest.fail.Exception, match="import circle"):
        test_there_is_no_import_circle()


def test_the_public_face_exports_the_entry_points():
    """``from dpcore import RunSpec, run, Context, run_audit, tune``: the objects the experiments, the
    audit, the certification and the estimators define."""
    import dpcore
    from dpcore import estimators
    from dpcore.certify import core as certify
    from dpcore.audit import core
    from dpcore.experiments import context, run, tune

    assert (dpcore.RunSpec, dpcore.run, dpcore.Context, dpcore.run_audit, dpcore.tune, dpcore.certify_noise,
            dpcore.DPLogisticRegression, dpcore.DPLinearRegression) == (
        run.RunSpec, run.run, context.Context, core.run_audit, tune.tune, certify.certify_noise,
        estimators.DPLogisticRegression, estimators.DPLinearRegression)
    assert set(dpcore.__all__) >= {"RunSpec", "run", "Context", "run_audit", "tune", "certify_noise",
                                   "DPLogisticRegression", "DPLinearRegression", "__version__"}
    # the foundations read the version without the face: only the face (an interface) imports them all
    assert _layer("dpcore")[0] == len(FLOORS) - 1 and _layer("dpcore._version")[0] == 0


#: the app's files: views may use the package's public names only, and nothing in the package uses them
APP_FILES = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]


def _private_uses(path: Path) -> list[str]:
    """Private (underscore) names a file takes from a module of the project other than itself:
    ``from m import _x``, ``m._x`` on an imported project module, or a private module."""
    tree = ast.parse(path.read_text())
    aliases, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            ours = node.level > 0 or (node.module or "").split(".")[0] in ("dpcore", "pages")
            if not ours:
                continue
            parts = (node.module or "").split(".")
            if any(p.startswith("_") and p != "_version" for p in parts):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports the private module {node.module}")
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {a.name} from {node.module}")
                aliases.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in ("dpcore", "pages"):
                    aliases.add(a.asname or a.name.split(".")[0])
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name) and node.value.id in aliases):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} reads {node.value.id}.{node.attr}")
    return found


def test_no_module_takes_another_modules_private_names():
    """What a module keeps private stays so: the package, the views and the entry point take only
    public names from each other (a name another module needs is public, and documented)."""
    found = [f for path in [*_modules().values(), *APP_FILES] for f in _private_uses(path)]
    assert not found, "\n".join(found)


def test_the_package_never_imports_the_views():
    users = [f"{name} imports {t}" for name, path in _modules().items()
             for t, _, _ in _imports(path, name) if t.split(".")[0] in ("pages", "app")]
    assert not users


def test_the_private_name_check_can_fail(tmp_path, monkeypatch):
    """A check of the check: each way of reaching a private name is caught, a public one is not."""
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    f = tmp_path / "m.py"
    f.write_text("from dpcore.mechanisms.gradient import _bound\nfrom .run import load_dataset\n"
                 "import dpcore.erm as erm\nx = erm._disk_key\ny = erm.solve_erm\n"
                 "from dpcore import _secret\nfrom numpy import _private_is_theirs\n")
    found = _private_uses(f)
    assert len(found) == 3, found
    assert "imports _bound" in found[0] and "reads erm._disk_key" in found[-1]


#: module-level reads of the environment that are not execution policy (with the reason)
ENVIRONMENT_AT_IMPORT = {
    # where the bundled data files are (an installed copy's folder, DPCORE_DATA_DIR): a resource's
    # location, not a policy: every file read there is checked against its SHA-256, so no folder
    # can change a number (a loader may still be given another folder, and caches key on it)
    "dpcore.datasets.registry",
}


def _policy_at_import(path: Path) -> list[str]:
    """Module-level reads of ``os.environ``/``os.getenv`` and ``global`` statements in a module:
    the two ways a module keeps a switch of its own."""
    tree = ast.parse(path.read_text())
    inner = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
             for n in ast.walk(f)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} rebinds module names ({', '.join(node.names)})")
        elif (isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv") and id(node) not in inner
              and isinstance(node.value, ast.Name) and node.value.id == "os"):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} reads the environment at import")
    return found


def test_execution_policy_lives_only_in_the_context():
    """Budgets, run stacking and threads are fields of a Context (read from the environment when
    one is made), never module-level switches: no module reads the environment at import or
    rebinds its globals, and the old switches are gone."""
    from dataclasses import fields

    from dpcore.experiments import run
    from dpcore.experiments.context import Context

    found = [f for name, path in _modules().items() if name not in ENVIRONMENT_AT_IMPORT
             for f in _policy_at_import(path)]
    assert not found, "\n".join(found)
    assert {"budget", "stack_runs", "threads", "workers", "erm_dir", "results_dir"} <= {f.name for f in fields(Context)}
    for old in ("MEMORY_BUDGET", "WORK_BUDGET", "STACK_RUNS", "BUDGET_ERRORS"):
        assert not hasattr(run, old), old


def test_the_policy_check_can_fail(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    f = tmp_path / "m.py"
    f.write_text("import os\nWORK = float(os.environ.get('X', 1))\n"
                 "def later():\n    return os.environ.get('Y')\n"
                 "def switch():\n    global WORK\n    WORK = 2\n")
    found = sorted(_policy_at_import(f))
    assert found == ["m.py:2 reads the environment at import", "m.py:6 rebinds module names (WORK)"], found


#: the most lines a file of the package or the app may have: a room a reader can hold in mind
MAX_FILE_LINES = 700
#: files that are declarative tables (data read top to bottom), exempt from the limit: none today
#: (the bounds catalog's rows, dpcore/theory/rows.py, fit under it)
TABLES: frozenset[str] = frozenset()


def _oversized(root: Path) -> list[str]:
    """The package's and the app's Python files over :data:`MAX_FILE_LINES` lines, tables aside."""
    files = [*sorted((root / "dpcore").rglob("*.py")), *sorted((root / "pages").glob("*.py")), root / "app.py"]
    out = []
    for path in files:
        rel = path.relative_to(root).as_posix()
        lines = len(path.read_text().splitlines()) if path.is_file() else 0
        if lines > MAX_FILE_LINES and rel not in TABLES:
            out.append(f"{rel}: {lines} lines")
    return out


def _drawn_house(text: str) -> tuple[list[tuple[str, list[str]]], str]:
    """An architecture document's picture of the house (its floors, top first, each with its rooms) and the
    text of its section."""
    part = text[text.index("## The house"):]
    picture = part[part.index("```\n") + 4:]
    picture = picture[:picture.index("```")]
    floors: list[tuple[str, list[str]]] = []
    for line in picture.splitlines():
        words = re.sub(r"\([^)]*\)", "", line).split()
        if line[:2].strip():  # a floor's name at the left
            floors.append((words[0], []))
            words = words[1:]
        floors[-1][1].extend(w.removesuffix("/").removesuffix(".py") for w in words)
    return floors, part


def _house_mismatches(text: str) -> list[str]:
    """Where an architecture document's house differs from FLOORS and from the imports' counts."""
    floors, part = _drawn_house(text)
    found = []
    # the picture draws the face, the room FLOORS calls "dpcore", as its file __init__.py
    declared = [(n, sorted("__init__" if r == "dpcore" else r for r in rooms)) for n, rooms in reversed(FLOORS)]
    if declared != [(n, sorted(rooms)) for n, rooms in floors]:
        found.append(f"the picture's floors {floors} are not FLOORS {declared}")
    arrows = sum(len(v) for room, v in _rooms_graph().items() if room != "dpcore")
    rooms = len({r for _, rs in FLOORS for r in rs}) - 1  # the face (dpcore/__init__.py) is not a room
    said = re.search(r"(\d+)\s+rooms\s+on\s+(\d+)\s+floors,\s+(\d+)\s+arrows", part)
    if not said or tuple(map(int, said.groups())) != (rooms, len(FLOORS), arrows):
        found.append(f"it says {said and said.groups()}, the imports draw {(rooms, len(FLOORS), arrows)}")
    return found


def test_the_architecture_document_draws_the_house_the_imports_draw():
    """Its picture has FLOORS' floors and rooms, and its counts are the imports' (issue 71); a check of the
    check: one arrow too many, or a room drawn on another floor, is found."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    assert _house_mismatches(text) == []
    said = re.search(r"(\d+)\s+arrows", text)
    one_more = text.replace(said.group(0), f"{int(said.group(1)) + 1} arrows", 1)
    assert [m for m in _house_mismatches(one_more) if m.startswith("it says")]
    moved = text.replace(" lesson       lesson.py", " lesson       lesson.py  report.py", 1)
    assert moved != text and [m for m in _house_mismatches(moved) if m.startswith("the picture's floors")]


def _unexplained_caches(source: str, where: str) -> list[str]:
    """Module-level memos (``functools.cache`` / ``lru_cache`` on a module's function) whose line above does
    not say why they may outlive every :class:`~dpcore.experiments.context.Context`: ``# pure:`` (a function
    of its arguments and the code) or ``# process:`` (a resource of the process, which no number depends on)."""
    lines = source.split("\n")
    found = []
    for node in ast.parse(source).body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for d in node.decorator_list:
            if "cache" in ast.unparse(d).split("(")[0]:
                above = lines[node.decorator_list[0].lineno - 2].strip()
                if not above.startswith(("# pure:", "# process:")):
                    found.append(f"{where}:{d.lineno} {node.name}")
    return found


def test_module_level_state_is_pure_or_the_processes_and_says_so():
    """State that depends on data, a folder or a setting lives in the Context; a memo left at module
    level says in one line why it may (issue 71)."""
    found = [f for name, path in _modules().items() for f in _unexplained_caches(path.read_text(), name)]
    assert not found, "module-level caches that do not say why:\n" + "\n".join(found)
    # a check of the check: a memo with nothing above it is caught, one that says so passes
    assert _unexplained_caches("import functools\n\n\n@functools.lru_cache(maxsize=8)\ndef f(x):\n    return x\n",
                               "fake") == ["fake:4 f"]
    assert not _unexplained_caches("import functools\n\n\n# pure: x\n@functools.cache\ndef f(x):\n    return x\n",
                                   "fake")


def test_no_file_of_the_package_or_the_app_is_over_700_lines():
    assert not _oversized(ROOT)


def test_the_size_check_can_fail(tmp_path):
    (tmp_path / "dpcore" / "sub").mkdir(parents=True)
    (tmp_path / "pages").mkdir()
    (tmp_path / "app.py").write_text("x = 1\n")
    (tmp_path / "dpcore" / "sub" / "big.py").write_text("x = 1\n" * (MAX_FILE_LINES + 1))
    (tmp_path / "pages" / "fits.py").write_text("x = 1\n" * MAX_FILE_LINES)
    assert _oversized(tmp_path) == [f"dpcore/sub/big.py: {MAX_FILE_LINES + 1} lines"]
