"""The face's documentation (issue 59): numpydoc sections on every public function and class, each
with an Examples block, and every public module's examples run as doctests in the default suite.

"Public" is one declaration, :data:`dpcore.__all__`: its callables and classes, and the modules that
define them (plus the package itself).  A module whose doctest run attempts nothing fails: a run of no
examples passes without checking anything.
"""

from __future__ import annotations

import doctest
import inspect
import re
import sys
import warnings
from pathlib import Path

import pytest

import dpcore

#: the face's objects, by name (the version string is data, not documented code)
FACE = {name: getattr(dpcore, name) for name in dpcore.__all__ if name != "__version__"}
#: the modules that define them, and the package itself
MODULES = sorted({inspect.getmodule(obj).__name__ for obj in FACE.values()} | {"dpcore"})
PACKAGE = Path(dpcore.__file__).resolve().parent
#: every module of the package whose docstrings hold an example (a wrong example is a wrong document,
#: face or not: dpcore.figures.result held two that no test ran)
EXAMPLES = sorted("dpcore." + ".".join(p.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__")
                  for p in PACKAGE.rglob("*.py") if ">>> " in p.read_text() and p.name != "__main__.py")
#: results a user reads rather than builds: their fields are Attributes, not Parameters
RESULTS = ("RunResult", "AuditResult", "Certificate")
SECTION = re.compile(r"^\s*(Parameters|Returns|Raises|Attributes|Examples|Notes|See Also|References)\n\s*-{3,}\s*$",
                     re.MULTILINE)


def sections(doc: str) -> dict[str, str]:
    """A numpydoc docstring's sections by title, each with its text."""
    marks = list(SECTION.finditer(doc))
    return {m.group(1): doc[m.end():marks[i + 1].start() if i + 1 < len(marks) else len(doc)]
            for i, m in enumerate(marks)}


def documented_names(text: str) -> set[str]:
    """The names a Parameters section documents: ``name : type`` or ``a, b : type`` at its left edge."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return set()
    edge = min(len(line) - len(line.lstrip()) for line in lines)
    names = set()
    for line in lines:
        if len(line) - len(line.lstrip()) == edge:
            names |= {n.strip() for n in line.split(":")[0].split(",")}
    return names


def _parameters(obj) -> list[str]:
    target = obj.__init__ if inspect.isclass(obj) else obj
    return [p.name for p in inspect.signature(target).parameters.values()
            if p.name not in ("self", "_") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def problems(name: str, obj) -> list[str]:
    """What the docstring of one face object lacks (empty: nothing)."""
    doc = inspect.getdoc(obj) or ""
    found = sections(doc)
    out = [] if "Examples" in found and ">>>" in found["Examples"] else [f"{name}: no Examples section with >>>"]
    if issubclass(obj, BaseException) if inspect.isclass(obj) else False:
        return out  # an exception's parameter is its message
    if name in RESULTS:
        return out + ([] if "Attributes" in found else [f"{name}: no Attributes section"])
    if "Parameters" not in found:
        return out + [f"{name}: no Parameters section"]
    missing = [p for p in _parameters(obj) if p not in documented_names(found["Parameters"])]
    if missing:
        out.append(f"{name}: Parameters does not document {', '.join(missing)}")
    if not inspect.isclass(obj) and "Returns" not in found:
        out.append(f"{name}: no Returns section")
    return out


@pytest.mark.parametrize("name", list(FACE))
def test_every_face_object_has_numpydoc_sections_and_examples(name):
    assert problems(name, FACE[name]) == []


@pytest.mark.parametrize("module", MODULES)
def test_every_public_module_s_examples_run(module):
    __import__(module)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # the examples use the current spellings
        result = doctest.testmod(sys.modules[module], optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{module} has no docstring examples to run"
    assert result.failed == 0, result


@pytest.mark.parametrize("module", [m for m in EXAMPLES if m not in MODULES])
def test_every_example_in_the_package_runs(module):
    __import__(module)
    result = doctest.testmod(sys.modules[module], optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, result


def test_the_check_finds_what_a_docstring_lacks():
    """The check of the check: a function documented in prose only, one whose Parameters section
    leaves a parameter out, and one without Returns are each caught; a complete one is not."""
    def prose(spec, *, ctx=None):
        """Runs ``spec`` under ``ctx``."""

    def partial(spec, *, ctx=None):
        """Run it.

        Parameters
        ----------
        spec : RunSpec
            What to run.

        Returns
        -------
        int

        Examples
        --------
        >>> 1
        1
        """

    def whole(spec, *, ctx=None):
        """Run it.

        Parameters
        ----------
        spec, ctx : RunSpec, Context
            What to run, and how.

        Examples
        --------
        >>> 1
        1
        """

    assert problems("prose", prose) == ["prose: no Examples section with >>>", "prose: no Parameters section"]
    assert problems("partial", partial) == ["partial: Parameters does not document ctx"]
    assert problems("whole", whole) == ["whole: no Returns section"]
    assert sections(whole.__doc__).keys() == {"Parameters", "Examples"}
