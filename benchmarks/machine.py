"""The environment of a machine without AVX-512, on this one: what a laptop or a class server runs.

    python benchmarks/machine.py            # prints `export …` lines for a shell (eval "$(…)")
    python benchmarks/machine.py --run CMD  # runs CMD under them (CI's last step)

Three libraries pick their code by the CPU, and each has its own switch:

* OpenBLAS: ``OPENBLAS_CORETYPE=Haswell`` (AVX2 kernels);
* numpy: ``NPY_DISABLE_CPU_FEATURES`` naming every SIMD dispatch target beyond AVX2.  The names
  changed in numpy 2.4 (``X86_V4`` and ``AVX512_ICL``/``AVX512_SPR`` instead of ``AVX512F``,
  ``AVX512_SKX``, …); an old name is ignored without a word, so they are read from numpy itself;
* numba (the MLP's kernel): ``NUMBA_CPU_NAME=haswell`` compiles for an AVX2 core (its cache keeps
  one entry per CPU name).
"""

from __future__ import annotations

import os
import shlex


def avx2_environment() -> dict[str, str]:
    """Environment variables under which this machine runs the code paths of an AVX2 machine."""
    from numpy._core._multiarray_umath import __cpu_dispatch__  # numpy's own list of dispatch targets

    beyond = [t for t in __cpu_dispatch__ if t.startswith(("AVX512", "X86_V4"))]
    return {"OPENBLAS_CORETYPE": "Haswell", "NPY_DISABLE_CPU_FEATURES": " ".join(beyond), "NUMBA_CPU_NAME": "haswell"}


def describe() -> str:
    """What the running process's numpy, OpenBLAS and numba dispatch to, in one line."""
    import numpy as np
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    from threadpoolctl import threadpool_info

    simd = [t for t in __cpu_dispatch__ if __cpu_features__.get(t)]
    blas = ", ".join(f"{i.get('internal_api')} {i.get('architecture')}" for i in threadpool_info() if i.get("user_api") == "blas")
    numba_cpu = os.environ.get("NUMBA_CPU_NAME", "host")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{os.cpu_count()} cores, numpy {np.__version__} SIMD targets {simd or 'baseline only'}; BLAS {blas}; "
            f"numba CPU {numba_cpu}; load {load}")


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--run"] and len(sys.argv) > 2:
        # "python" is this interpreter (the one with the project's dependencies), never whichever
        # python comes first on PATH when the environment is not activated
        command = [sys.executable if sys.argv[2] == "python" else sys.argv[2], *sys.argv[3:]]
        os.execvpe(command[0], command, {**os.environ, **avx2_environment()})
    for key, value in avx2_environment().items():
        print(f"export {key}={shlex.quote(value)}")
