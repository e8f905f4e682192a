"""``pip install .`` gives a package that carries the shipped results (issue 54: shipped files travel
with the package).

A wheel is built from a copy of the working tree (what a commit of it would hold: tracked and untracked
files, not the ignored ones), offline and without build isolation, with this environment's pip and build
tools (requirements-dev.txt pins setuptools and wheel).  It is installed into a new virtual environment
that sees this environment's packages (numpy, streamlit, …: nothing is downloaded) but not the
checkout: every check runs in a subprocess from another folder, with ``PYTHONPATH`` cleared (the tests'
own process has the checkout on ``sys.path``, through conftest.py), and first asserts that ``dpcore``
is the installed one.  There:

* the package reads its data folder inside site-packages (``dpcore/_data``): every preset's shipped
  results, 004-fig1's verified, Adult's logistic-regression tuning, Compare's first preset's file, and
  the manifest lists exactly the installed files with their content;
* the app, copied alone (``app.py``, ``pages/``, ``assets/``, ``.streamlit/``: no ``dpcore/``, no
  ``data/``), draws a paper figure and opens Compare's first preset at once from its shipped rows;
* ``python -m dpcore run`` trains and certifies a run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: a subprocess's limit (the app's first figure verifies its certificates on a new cache: seconds)
TIMEOUT = 900


@dataclass(frozen=True)
class Installed:
    venv: Path
    python: Path
    site_packages: Path
    work: Path  # the test's folder: the app's copy, the cache, the folder the checks run from
    env: dict

    def run(self, args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.python), *args], cwd=cwd or self.work / "elsewhere", env=self.env,
                              capture_output=True, text=True, timeout=TIMEOUT)

    def json_of(self, what: str, args: list[str], cwd: Path | None = None) -> dict:
        """Run a check that prints one JSON object as its last line."""
        proc = self.run(args, cwd)
        assert proc.returncode == 0, f"{what} failed in the installed venv:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
        return json.loads(proc.stdout.strip().splitlines()[-1])


def _clean_env(work: Path) -> dict:
    """A user's shell: no PYTHONPATH (nor anything else pointing Python or dpcore at the checkout),
    no package index, a cache folder of its own."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "DPCORE_DATA_DIR",
                        "DPCORE_CACHE_DIR", "__PYVENV_LAUNCHER__") and not k.startswith("PYTEST_")}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PYTHONNOUSERSITE="1",
               DPCORE_CACHE_DIR=str(work / "cache"))
    return env


def _build_tools_missing() -> str | None:
    """Why no wheel can be built offline here (``None`` when it can): setuptools' backend and a
    ``bdist_wheel`` (setuptools ≥ 70.1's own, or the ``wheel`` package's)."""
    try:
        import setuptools.build_meta  # noqa: F401
    except ImportError:
        return "setuptools is not installed (requirements-dev.txt pins it): no wheel can be built offline"
    try:
        import setuptools.command.bdist_wheel  # noqa: F401
    except ImportError:
        try:
            import wheel.bdist_wheel  # noqa: F401
        except ImportError:
            return "neither setuptools ≥ 70.1 nor the wheel package is installed: no wheel can be built offline"
    return None


def _copy_working_tree(dst: Path) -> None:
    """The checkout's files as a commit of the working tree would hold them (tracked and untracked,
    not the ignored: no caches, no virtual environments), or the whole folder outside git."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, check=True, timeout=120).stdout
        files = [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.SubprocessError):
        files = []
    if not files:
        shutil.copytree(ROOT, dst, ignore=shutil.ignore_patterns(".git", ".venv*", "__pycache__", "build", "*.egg-info",
                                                                  ".hypothesis", ".pytest_cache", "cache"))
        return
    for rel in files:
        src = ROOT / rel
        if src.is_file():  # a tracked file deleted in the working tree is not copied
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)


def _copy_app(dst: Path) -> None:
    """What ``streamlit run app.py`` reads besides the package: the entry point, the views, the tab
    icon and the server's settings; no ``dpcore/``, no ``data/``."""
    dst.mkdir()
    shutil.copy2(ROOT / "app.py", dst / "app.py")
    for folder in ("pages", "assets", ".streamlit"):
        shutil.copytree(ROOT / folder, dst / folder, ignore=shutil.ignore_patterns("__pycache__", "secrets.toml"))


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    missing = _build_tools_missing()
    if missing is not None:
        pytest.skip(missing)
    work = tmp_path_factory.mktemp("install")
    (work / "elsewhere").mkdir()
    env = _clean_env(work)
    src, wheels, venv = work / "src", work / "wheels", work / "venv"
    _copy_working_tree(src)

    def pip(*args: str) -> None:
        proc = subprocess.run([sys.executable, "-m", "pip", *args], cwd=work / "elsewhere", env=env,
                              capture_output=True, text=True, timeout=TIMEOUT)
        assert proc.returncode == 0, f"pip {args[0]} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"

    pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(wheels), str(src))
    (wheel,) = wheels.glob("dpcore-*.whl")
    shutil.rmtree(src)  # the built copy goes: nothing can be read from it afterwards

    # --system-site-packages: the interpreter's own packages.  From a virtual environment (this one's,
    # CI's .venv-ci) that is the base interpreter's, so this environment's site-packages are added
    # after the new venv's own by a .pth file.
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
                   check=True, env=env, timeout=TIMEOUT)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site_packages = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env=env,
        capture_output=True, text=True, check=True, timeout=TIMEOUT).stdout.strip())
    ours = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (site_packages / "_test_install_parent_env.pth").write_text("".join(f"{p}\n" for p in ours))
    pip("--python", str(python), "install", "--no-deps", "--no-index", str(wheel))

    _copy_app(work / "app")
    return Installed(venv=venv, python=python, site_packages=site_packages, work=work, env=env)


# ------------------------------------------------------------------------------------- the package

PACKAGE_CHECK = textwrap.dedent("""
    import json, sys
    import dpcore
    from dpcore import datasets, shipped
    from dpcore.experiments import presets, studies, tune

    fig = presets.shipped_results("004-fig1")  # every number verified; ShippedFileError otherwise
    tuning = tune.shipped_tuning("adult", "logreg")
    classroom = shipped.read_json("results/compare-classroom.json")  # the manifest's check, whatever its keys
    print(json.dumps({
        "sys_path": sys.path, "dpcore": dpcore.__file__,
        "data_dir": str(datasets.data_folder()), "results_dir": str(shipped.folder_of("results")),
        "tuned_dir": str(shipped.folder_of("tuned")), "classroom_file": str(studies.classroom_file()),
        "classroom_exists": studies.classroom_file().exists(), "classroom_rows": len(classroom["rows"]),
        "classroom_keys": studies.classroom_keys(),
        "presets": list(presets.PRESETS), "shipped_ids": presets.shipped_ids(),
        "fig_preset": fig.record["preset"]["id"], "fig_rows": len(fig.table),
        "fig_published_rows": None if fig.published is None else len(fig.published),
        "tuning_rows": len(tuning["rows"]),
        "manifest_problems": shipped.manifest_problems(),
        "manifest_files": sorted(json.loads((datasets.data_folder() / "MANIFEST.json").read_text())["files"]),
    }))
""")


def _under(path: str | Path, folder: Path) -> bool:
    return Path(path).resolve().is_relative_to(folder.resolve())


def test_the_installed_package_reads_its_shipped_files_from_site_packages(installed):
    got = installed.json_of("the package check", ["-c", PACKAGE_CHECK])
    # the installed dpcore, not the checkout's: no folder on sys.path but the new venv's holds one
    # (the test's own environment's site-packages are there, and may be inside the checkout: CI's .venv-ci)
    assert _under(got["dpcore"], installed.venv), got["dpcore"]
    holding = [Path(p).resolve() for p in got["sys_path"] if p and (Path(p) / "dpcore").exists()]
    assert holding == [installed.site_packages.resolve()], got["sys_path"]
    data = installed.site_packages / "dpcore" / "_data"
    assert Path(got["data_dir"]).resolve() == data.resolve()
    for key in ("results_dir", "tuned_dir", "classroom_file"):
        assert _under(got[key], data), (key, got[key])
    assert got["shipped_ids"] == got["presets"]  # every preset's full-size results travel
    assert got["fig_preset"] == "004-fig1" and got["fig_rows"] > 0 and got["fig_published_rows"]
    assert got["tuning_rows"] > 0
    assert got["classroom_exists"] and got["classroom_rows"] > 0
    assert got["manifest_problems"] == []
    # what the checkout ships is what was installed: every file its manifest lists
    assert got["manifest_files"] == sorted(json.loads((ROOT / "data" / "MANIFEST.json").read_text())["files"])
    installed_files = sorted(p.relative_to(data).as_posix() for p in data.rglob("*")
                             if p.is_file() and "__pycache__" not in p.parts)
    assert set(got["manifest_files"]) <= set(installed_files)
    # and its code is the checkout's: a shipped result's task keys (code fingerprint included) hold there
    from dpcore.experiments.studies import classroom_keys

    assert got["classroom_keys"] == classroom_keys()


# ------------------------------------------------------------------------------------------ the app

APP_CHECK = textwrap.dedent("""
    import json, sys
    app = sys.argv[1]
    sys.path.insert(0, app)  # as `streamlit run app.py` puts the app's folder first
    import dpcore, pages
    from streamlit.testing.v1 import AppTest

    def seen(at):
        return {"exceptions": [e.message + "\\n" + "\\n".join(e.stack_trace) for e in at.exception],
                "errors": [e.value for e in at.error], "infos": [i.value for i in at.info],
                "charts": len(at.get("plotly_chart")), "markdown": [m.value for m in at.markdown]}

    out = {"dpcore": dpcore.__file__, "pages": pages.__path__[0]}
    at = AppTest.from_file(app + "/app.py", default_timeout=600).run()
    out["start"] = seen(at)
    if sys.argv[2] == "figures":
        at.switch_page("pages/figures.py").run()
        out["figures"] = seen(at) | {"preset": at.selectbox(key="fig_preset").value}
        print(json.dumps(out))
        sys.exit(0)
    at.switch_page("pages/compare.py").run()
    out["compare_presets"] = [b.label for b in at.button if b.key and b.key.startswith("preset_")]
    first = next(b for b in at.button if b.key and b.key.startswith("preset_"))
    first.click().run()
    rows = at.session_state["cmp_rows"] if "cmp_rows" in at.session_state else None
    out["compare"] = seen(at) | {"dataset": at.session_state["cmp_dataset"], "model": at.session_state["cmp_model"],
                                 "mechanisms": list(at.session_state["cmp_mechs"]),
                                 "rows": None if rows is None else json.loads(json.dumps(rows))}
    print(json.dumps(out))
""")


def _app_seen(installed, view: str) -> dict:
    """The copied app, run in the installed venv from its own folder (its .streamlit/config.toml): its
    start page, then ``view`` ("figures" or "compare"), each in a process of its own (a fresh cache)."""
    script = installed.work / "app_check.py"
    script.write_text(APP_CHECK)
    app = installed.work / "app"
    assert not (app / "dpcore").exists() and not (app / "data").exists()
    got = installed.json_of("the app check", [str(script), str(app), view], cwd=app)
    assert _under(got["dpcore"], installed.venv), got["dpcore"]
    assert _under(got["pages"], app), got["pages"]
    assert not got["start"]["exceptions"], got["start"]["exceptions"]
    return got


def test_the_installed_app_draws_a_paper_figure_from_the_shipped_results(installed):
    from dpcore.experiments.presets import PRESETS

    fig = _app_seen(installed, "figures")["figures"]
    assert not fig["exceptions"] and not fig["errors"], fig
    assert fig["preset"] == next(iter(PRESETS))  # the first shipped figure opens
    assert fig["charts"] == 6  # 001-fig2: a chart for each of its six panels (pages.common.show_panels)
    assert any("python -m dpcore sweep" in m for m in fig["markdown"])  # its provenance


def test_the_installed_app_opens_compares_first_preset_from_its_shipped_rows(installed):
    """Compare's first preset ("All central mechanisms, Adult") draws at once from the installed
    compare-classroom.json: said so, both charts, the file's rows.  It fails while the shipped file's
    task keys are not this code's (as tests/test_app.py's check in the checkout does): run
    ``python -m dpcore prepare --ship``."""
    from dpcore import shipped
    from dpcore.experiments.studies import CLASSROOM_COMPARE

    app_seen = _app_seen(installed, "compare")
    got = app_seen["compare"]
    assert not got["exceptions"] and not got["errors"], got
    assert app_seen["compare_presets"][0].startswith("All central mechanisms")
    assert (got["dataset"], got["model"]) == (CLASSROOM_COMPARE["dataset"], CLASSROOM_COMPARE["model"])
    assert got["mechanisms"] == list(CLASSROOM_COMPARE["mechanisms"])
    doc = shipped.read_json("results/compare-classroom.json", ROOT / "data")
    assert got["rows"] is not None, _why_not_shown(doc)
    assert any(i.startswith(f"Shown at once: computed ahead and shipped with the app ({len(doc['rows'])} "
                            "configurations") for i in got["infos"]), got["infos"]
    assert got["charts"] == 2
    # the shipped rows, and what each tuned row's search spent, recomputed after the page (the file holds none)
    assert [{k: v for k, v in r.items() if k != "tuned_search_epsilon"} for r in got["rows"]] == doc["rows"]
    assert all(("tuned_search_epsilon" in r) == ("tuned_at" in r) for r in got["rows"])


def _why_not_shown(doc) -> str:
    """The failure's message: whether the checkout's own file is stale too."""
    from dpcore.experiments.studies import classroom_keys

    why = "the installed app computes Compare's first preset instead of showing its shipped rows"
    try:
        current = doc["record"].get("keys") == classroom_keys()
    except Exception as exc:  # noqa: BLE001 - only the message's
        return f"{why} (the checkout's task keys: {exc})"
    return why + ("" if current else ": data/results/compare-classroom.json is for other code (its task keys are "
                                     "not this checkout's); run `python -m dpcore prepare --ship`")


# ---------------------------------------------------------------------------------- the command line

def test_the_installed_command_line_runs_from_another_folder(installed):
    proc = installed.run(["-m", "dpcore", "run", "--dataset", "breast-cancer", "--mechanism", "gradient-dpgd",
                          "--epsilon", "1", "--repeats", "1"])
    assert proc.returncode == 0, proc.stderr[-4000:]
    head, certified, accuracy = proc.stdout.splitlines()[:3]
    assert "(DP-GD) on Breast Cancer" in head and "n = 546" in head, proc.stdout
    assert certified.split()[:5] == ["ε", "target", "1", "ε", "certified"] and certified.split()[5] == "1", proc.stdout
    assert accuracy.split()[0] == "accuracy" and 0.5 < float(accuracy.split()[1]) <= 1, proc.stdout
    script = installed.venv / ("Scripts/dpcore.exe" if os.name == "nt" else "bin/dpcore")
    assert script.exists()  # [project.scripts]
