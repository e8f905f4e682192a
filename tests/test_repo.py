"""The repository's promises to a new user: the README's commands, the lock, the package."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    return [b.strip() for b in blocks[:2]]


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        spec = line.split(";", 1)[0].strip()
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==([^\s=<>!~,]+)", spec)
        assert m, f"{path.name}: {line!r} is not pinned to one exact version"
        pins[m.group(1).lower().replace("_", "-")] = m.group(3)
    return pins


def _names(path: Path) -> set[str]:
    out = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            out.add(re.match(r"[A-Za-z0-9_.\-]+", line).group(0).lower().replace("_", "-"))
    return out


def test_readme_starts_with_the_app_and_the_test_command():
    app, tests = _readme_commands()
    assert app == "python -m pip install -r requirements.txt && python -m streamlit run app.py"
    assert tests == "python -m pip install -r requirements-dev.txt && python -m pytest -q"


#: what .ci/run may do after the README's test command: stop on its failure (set -e does not stop at
#: a failed install, the first command of its && list), then run the shipped-file tests again on
#: generic BLAS kernels
_CI_AFTER_README = (r'readme_status=\$\?; if \[ "\$readme_status" -ne 0 \]; then exit "\$readme_status"; fi',
                    r"OPENBLAS_CORETYPE=\w+ python -m pytest -q tests/test_shipped\.py( [^;&|]*)?",
                    # ... and as a machine without AVX-512 runs them (benchmarks/machine.py sets the switches),
                    # what ran said first
                    r"python benchmarks/machine\.py --run python benchmarks/machine\.py --describe",
                    r"python benchmarks/machine\.py --run python -m pytest -q tests/test_shipped\.py( [^;&|]*)?")


def _ci_follows_the_readme(ci: str, tests: str) -> None:
    lines = [ln.strip() for ln in ci.splitlines()]
    assert "set -euo pipefail" in lines
    assert lines.count(tests) == 1, "a line of .ci/run must be exactly the README's test command"
    at = lines.index(tests)
    venv = next(i for i, ln in enumerate(lines) if ln.startswith("python3 -m venv --clear"))
    activate = next(i for i, ln in enumerate(lines) if ln.startswith("source ") and "bin/activate" in ln)
    assert venv < activate < at
    after = [ln for ln in lines[at + 1:] if ln and not ln.startswith("#")]
    assert len(after) == len(_CI_AFTER_README), after
    for line, pattern in zip(after, _CI_AFTER_README):
        assert re.fullmatch(pattern, line), (line, pattern)


def test_ci_runs_exactly_the_readme_test_command_in_a_new_environment():
    _, tests = _readme_commands()
    _ci_follows_the_readme((ROOT / ".ci" / "run").read_text(), tests)


def test_check_of_the_check_a_ci_that_strays_from_the_readme_is_caught():
    ci = (ROOT / ".ci" / "run").read_text()
    _, tests = _readme_commands()
    strays = [ci.replace(tests, tests + " -x"),  # not exactly the README's command
              ci.replace(tests, tests.replace(" && ", "; ")),
              ci.replace("readme_status=$?;", "true;"),  # a failed install goes unnoticed
              ci + "python -m pytest -q tests/test_cli.py\n",  # anything else after it
              ci.replace("source .venv-ci/bin/activate\n", "") + "source .venv-ci/bin/activate\n"]
    for stray in strays:
        assert stray != ci
        with pytest.raises(AssertionError):
            _ci_follows_the_readme(stray, tests)


def test_the_lock_pins_every_range_exactly_and_the_two_locks_agree():
    runtime = _pins(ROOT / "requirements.txt")
    dev = _pins(ROOT / "requirements-dev.txt")
    assert _names(ROOT / "requirements.in") <= set(runtime)
    assert _names(ROOT / "requirements.in") | _names(ROOT / "requirements-dev.in") <= set(dev)
    for name, version in runtime.items():
        assert dev.get(name) == version, f"{name}: {version} in requirements.txt, {dev.get(name)} in the dev lock"


def test_pyproject_reads_the_ranges_and_declares_the_console_command():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    setuptools = meta["tool"]["setuptools"]
    assert setuptools["dynamic"]["dependencies"] == {"file": ["requirements.in"]}
    assert meta["project"]["scripts"]["dpcore"] == "dpcore.cli:main"
    assert setuptools["package-dir"]["dpcore._data"] == "data"
    # every subpackage of dpcore is listed, or a wheel would silently leave it out
    found = {".".join(p.relative_to(ROOT).parent.parts) for p in (ROOT / "dpcore").rglob("__init__.py")}
    assert found <= set(setuptools["packages"])


@pytest.mark.slow
def test_pip_install_gives_the_package_its_data_and_the_dpcore_command(tmp_path):
    """``pip install .`` (into a folder of its own, on top of this environment's dependencies):
    the console command answers like ``python -m dpcore`` from any folder, reading the
    installed copy of the bundled data."""
    src = tmp_path / "src"  # pip builds in the source folder: keep the checkout clean
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", ".venv*", "build", "*.egg-info", "artifacts", ".hypothesis", "__pycache__", "tests"))
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
                    str(src)], check=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("DPCORE_DATA_DIR", None)

    def installed(*args):
        return subprocess.run(args, cwd=elsewhere, env=env, capture_output=True, text=True, check=True).stdout

    module = subprocess.run([sys.executable, "-m", "dpcore", "datasets", "--json"], cwd=ROOT,
                            capture_output=True, text=True, check=True)
    assert json.loads(installed(str(site / "bin" / "dpcore"), "datasets", "--json")) == json.loads(module.stdout)
    where = installed(sys.executable, "-c", "import dpcore.datasets as d; print(d.__file__, d.data_folder())").split()
    assert Path(where[0]).is_relative_to(site) and Path(where[1]) == site / "dpcore" / "_data"
    out = installed(str(site / "bin" / "dpcore"), "run", "--dataset", "breast-cancer",
                    "--mechanism", "gradient-dpgd", "--json")
    assert json.loads(out)["n_train"] > 0


def test_the_app_config_hides_deploy_and_the_tab_icon_is_a_file_of_the_repository():
    """Issue 41, where Chromium is missing (tests/test_browser.py checks both in a browser:
    test_no_deploy_button_in_the_toolbar, test_no_view_requests_anything_outside_the_machine).
    The toolbar shows a viewer's options only, a value the installed Streamlit documents as hiding
    the Deploy button; the tab icon is the repository's SVG (Streamlit inlines it as a data: URL),
    not a ``:material/…:`` icon, which the browser fetches from fonts.gstatic.com."""
    from streamlit import config as st_config

    mode = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["client"]["toolbarMode"]
    option = st_config._config_options_template["client.toolbarMode"]
    said = re.search(rf'"{mode}"\s*:(.*?)(?:- "|$)', option.description, flags=re.S)
    assert said and "deploy" in said.group(1).lower() or mode == "minimal", (mode, option.description)
    app = (ROOT / "app.py").read_text()
    (call,) = re.findall(r"st\.set_page_config\((.*?)\)\n", app, flags=re.S)
    assert "page_icon=str(ICON)" in call and ":material/" not in call
    assert 'ICON = Path(__file__).resolve().parent / "assets" / "lock.svg"' in app
    assert (ROOT / "assets" / "lock.svg").read_text().lstrip().startswith("<svg ")


def _spec_sections() -> set[str]:
    """The section numbers of docs/spec.md's headings ("## 3. Mechanisms" → "3", "### 3.4 …" → "3.4")."""
    import re

    text = (ROOT / "docs" / "spec.md").read_text()
    return {m.group(1) for m in re.finditer(r"^#{2,4} (\d+(?:\.\d+)*)\.? ", text, flags=re.M)}


def _spec_references() -> list[tuple[str, str]]:
    import re

    found = []
    for path in [*ROOT.glob("dpcore/**/*.py"), *ROOT.glob("pages/*.py"), ROOT / "app.py", ROOT / "README.md",
                 *ROOT.glob("docs/*.md")]:
        for m in re.finditer(r"SPEC\s*§\s*(\d+(?:\.\d+)*)", path.read_text()):
            found.append((str(path.relative_to(ROOT)), m.group(1)))
    return found


def test_every_spec_reference_resolves_to_a_section_of_docs_spec():
    refs = _spec_references()
    assert len(refs) >= 30  # the code cites it throughout
    missing = [(f, s) for f, s in refs if s not in _spec_sections()]
    assert not missing, missing
    assert "docs/spec.md" in (ROOT / "README.md").read_text()


def test_check_of_the_check_a_reference_to_a_missing_section_is_caught():
    assert "3.4" in _spec_sections() and "9.9" not in _spec_sections()
