"""The README's promises about itself (issue 42): its Python example runs and prints what the
README says it prints, it stays short, and every relative link of the README and of docs/
reaches a file of the repository (and, with an anchor, a heading of that file)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MAX_LINES = 150

FENCE = re.compile(r"^```[^\n]*\n.*?^```[ \t]*$", flags=re.S | re.M)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```[ \t]*$", text, flags=re.S | re.M)


def _examples(text: str) -> list[tuple[str, list[str]]]:
    """Every ```python block, with the lines of the first ```text block after it (what it prints)."""
    out = []
    for code in _blocks(text, "python"):
        after = text[text.index(code) + len(code):]
        printed = _blocks(after, "text")[0]
        out.append((code, [ln.rstrip() for ln in printed.strip("\n").splitlines()]))
    return out


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text())
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} +(.+?) *#*$", text, flags=re.M)}


def _links(text: str) -> list[str]:
    """The link and image targets of Markdown text, outside code blocks and code spans."""
    text = FENCE.sub("", text)
    text = re.sub(r"`[^`\n]*`", "", text)
    return LINK.findall(text)


def _broken_links(path: Path, text: str | None = None) -> list[str]:
    """Relative links of ``path`` (its own text, or ``text`` as if it were there) that do not reach
    a file of the repository, or whose anchor names no heading of that file."""
    broken = []
    for target in _links(path.read_text() if text is None else text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, flags=re.I):  # https:, mailto:: not ours to check
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.is_relative_to(ROOT) or not dest.is_file():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(target)
    return broken


@pytest.mark.parametrize("which", [0, 1], ids=["run", "event-and-estimator"])
def test_the_readme_example_runs_and_prints_what_the_readme_says(which):
    """Each Python block, run as a user would from the repository's root, prints exactly the text
    block the README shows after it (on small data: a few seconds), with no warning; it imports only
    the package's face (``from dpcore import …`` of names in ``dpcore.__all__``)."""
    import dpcore

    examples = _examples(README.read_text())
    assert len(examples) == 2
    code, expected = examples[which]
    assert "from dpcore" in code and len(code.strip().splitlines()) <= 10
    for names in re.findall(r"^from dpcore import (.+)$", code, flags=re.M):
        assert {n.strip() for n in names.split(",")} <= set(dpcore.__all__), names
    assert not re.search(r"^(from dpcore\.|import dpcore)", code, flags=re.M)
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], cwd=ROOT, env=dict(os.environ),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert [ln.rstrip() for ln in done.stdout.strip("\n").splitlines()] == expected, done.stdout


def test_the_readme_is_at_most_150_lines():
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines: move reference material to docs/"


def test_every_relative_link_of_the_readme_and_docs_reaches_a_file_of_the_repository():
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    assert len(pages) >= 8  # the README and its docs pages
    found = {str(p.relative_to(ROOT)): _links(p.read_text()) for p in pages}
    assert sum(map(len, found.values())) >= 20
    broken = {name: bad for name, p in zip(found, pages) if (bad := _broken_links(p))}
    assert not broken, broken
    # the README links every page of docs/
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in found["README.md"] if t.partition("#")[0]}
    assert {p.resolve() for p in pages[1:]} <= linked, "a page of docs/ the README does not link"


def test_check_of_the_check_a_missing_file_or_heading_is_caught():
    text = ("[spec](docs/spec.md) [gone](docs/nowhere.md) ![img](docs/missing.png) [out](../outside.md) "
            "[web](https://example.org/x) `[code](docs/nowhere.md)` [anchor](docs/spec.md#no-such-heading) "
            "[ok anchor](#documentation)\n```bash\n[fenced](docs/nowhere.md)\n```\n")
    assert _broken_links(README, text) == ["docs/nowhere.md", "docs/missing.png", "../outside.md",
                                           "docs/spec.md#no-such-heading"]
    (code, printed), = _examples("x\n```python\nprint(1)\n```\n\n```text\n1\n```\n")
    assert code == "print(1)\n" and printed == ["1"]
