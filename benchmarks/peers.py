"""The peer libraries the benchmarks compare against, in a virtualenv of their own.

diffprivlib 0.6.6 (the newest) does not import under scikit-learn ≥ 1.8, which dpcore
depends on, and Opacus brings PyTorch (several GB).  Neither is ever a dependency of
dpcore: :func:`peer_python` finds a Python that imports them (this one, or
``benchmarks/.venv-peers`` made from ``benchmarks/requirements.txt`` on first use) and
:func:`run_peer` runs a snippet there, returning what it prints as JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENV = HERE / ".venv-peers"
_PROBE = "import diffprivlib.models, opacus"
#: the peers run on one thread, as dpcore's side of each comparison does
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "PATH": "/usr/bin:/bin"}


def peer_python() -> str | None:
    """A Python that imports diffprivlib and Opacus, or ``None`` if none can be made."""
    if subprocess.run([sys.executable, "-c", _PROBE], capture_output=True).returncode == 0:
        return sys.executable
    py = VENV / "bin" / "python"
    if not py.exists():
        print(f"creating {VENV} for the peers (diffprivlib, Opacus; a few GB, once) …", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "-r", str(HERE / "requirements.txt")],
                       check=False)
    ok = subprocess.run([str(py), "-c", _PROBE], capture_output=True).returncode == 0
    return str(py) if ok else None


def run_peer(code: str, *args: str) -> dict | str:
    """Run ``code`` in the peers' Python; its JSON output, or a one-line reason it failed."""
    python = peer_python()
    if python is None:
        return "the peers could not be installed (pip install -r benchmarks/requirements.txt)"
    res = subprocess.run([python, "-c", code, *args], capture_output=True, text=True, env=ONE_THREAD)
    if res.returncode != 0:
        lines = res.stderr.strip().splitlines()
        return lines[-1] if lines else f"exit code {res.returncode}"
    return json.loads(res.stdout.strip().splitlines()[-1])
