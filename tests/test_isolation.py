"""No test isolates itself by patching a module's folder, store or memo (issue 59).

A test that needs its own data folder, exact-solution store or results cache makes one: a
``Context(data_dir=…)``, a ``ReferenceStore(folder, data_dir=…)``, a reader's ``data_dir=`` or
``folder=`` argument, or ``DPCORE_DATA_DIR`` in the environment of the server or process it starts.
Patching ``presets.RESULTS_DIR`` (as the tests once did) hid the process-wide state the package kept,
and redirected only the readers that looked the attribute up at each call.

What counts as isolation is declared once, below: an attribute whose name is a place or a store
(``…_DIR``, ``…_FILE``, ``…_FOLDER``, ``…_REFERENCES``, ``VERIFIED``, ``…_CACHE``) set with
``monkeypatch.setattr``, ``mock.patch.object``, ``mock.patch("module.NAME")`` or plain ``setattr``,
and a stand-in that sends a reader to another folder (a replacement that passes ``folder=`` or
``data_dir=``).  A patch of a function to count its calls, to make it fail or to refuse work is a spy,
not isolation, and stays allowed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

#: the names of places and stores: patching one isolates a test by hand
PLACE = re.compile(r"(^|_)(DIR|DIRS|FILE|FOLDER|VERIFIED|CACHE)$|^SHIPPED_REFERENCES$")
#: a stand-in that redirects a reader: it passes a folder of the test's own
REDIRECT = re.compile(r"\b(folder|data_dir|path)\s*=")
#: the callables that patch an attribute: (module attribute or object, name, replacement) positions
PATCHERS = {"setattr": (0, 1, 2), "object": (0, 1, 2)}


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def isolation_patches(source: str, where: str = "<test>") -> list[str]:
    """Each place in ``source`` that patches a folder, store or memo, or redirects a reader to a folder."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        last = name.rsplit(".", 1)[-1]
        args = node.args
        target = replacement = None
        if last in PATCHERS and len(args) >= 2 and isinstance(args[1], ast.Constant) \
                and isinstance(args[1].value, str):
            if last == "object" and not name.endswith("patch.object"):
                continue
            target, replacement = args[1].value, args[2] if len(args) > 2 else None
        elif last in ("setattr", "patch") and args and isinstance(args[0], ast.Constant) \
                and isinstance(args[0].value, str) and "." in args[0].value:
            target = args[0].value.rsplit(".", 1)[-1]  # monkeypatch.setattr("pkg.mod.NAME", value)
            replacement = args[1] if len(args) > 1 else None
        if target is None:
            continue
        line = f"{where}:{node.lineno}: {ast.get_source_segment(source, node) or name}"
        if PLACE.search(target):
            found.append(line)
        elif replacement is not None and isinstance(replacement, ast.Lambda) \
                and REDIRECT.search(ast.get_source_segment(source, replacement.body) or ""):
            found.append(line)
    return found


def test_no_test_patches_a_folder_a_store_or_a_memo_to_isolate_itself():
    found = []
    for path in sorted(TESTS.glob("*.py")):
        if path.name != Path(__file__).name:
            found += isolation_patches(path.read_text(), path.name)
    assert not found, ("tests isolate themselves by patching module state; give them a Context, a store, "
                       "a data_dir= or DPCORE_DATA_DIR instead:\n" + "\n".join(found))


@pytest.mark.parametrize("patch", [
    'monkeypatch.setattr(presets, "RESULTS_DIR", tmp_path)',
    'monkeypatch.setattr(erm, "SHIPPED_REFERENCES", tmp_path / "references")',
    'mp.setattr(records, "VERIFIED", Memo(8))',
    'monkeypatch.setattr("dpcore.experiments.tune.TUNED_DIR", tmp_path)',
    'stack.enter_context(mock.patch.object(cli_sweep, "CLASSROOM_FILE", tmp_path / "c.json"))',
    'setattr(datasets, "DATA_DIR", tmp_path)',
    'monkeypatch.setattr(presets, "shipped_results", lambda p, **kw: real(p, folder=tmp_path, **kw))',
    'monkeypatch.setattr(tune, "shipped_tuning", lambda d, m: real(d, m, data_dir=tmp_path))',
])
def test_the_check_finds_each_kind_of_isolation_patch(patch):
    """The check of the check: every form above is found, in a test body as it would be written."""
    source = f"def test_x(monkeypatch, tmp_path, mp, stack):\n    {patch}\n"
    assert len(isolation_patches(source)) == 1, patch


@pytest.mark.parametrize("spy", [
    'monkeypatch.setattr(erm, "solve_erm", no_solve)',
    'monkeypatch.setattr(studies, "classroom_keys", lambda data_dir=None: keys)',
    'monkeypatch.setattr(linalg, "DENSE_BLOCK_BYTES", X.nbytes)',
    'monkeypatch.setenv("DPCORE_DATA_DIR", str(tmp_path))',
    'monkeypatch.setattr(MLP, "_CHUNK_FLOATS", 50)',
])
def test_spies_and_tunables_are_not_isolation(spy):
    source = f"def test_x(monkeypatch, tmp_path):\n    {spy}\n"
    assert isolation_patches(source) == [], spy
