"""The environment of a machine without AVX-512, on this one: what a laptop or a class server runs.

    python benchmarks/machine.py            # prints `export …` lines for a shell (eval "$(…)")
    python benchmarks/machine.py --run CMD  # runs CMD under them (CI's last step)
    python benchmarks/machine.py --describe # what this process's numpy, OpenBLAS and numba run

Three libraries pick their code by the CPU, and each has its own switch:

* OpenBLAS: ``OPENBLAS_CORETYPE=Haswell`` (AVX2 kernels);
* numpy: ``NPY_DISABLE_CPU_FEATURES`` naming every SIMD dispatch target beyond AVX2.  The names
  changed in numpy 2.4 (``X86_V4`` and ``AVX512_ICL``/``AVX512_SPR`` instead of ``AVX512F``,
  ``AVX512_SKX``, …); an old name is ignored without a word, so they are read from numpy itself;
* numba (the compiled kernels): ``NUMBA_CPU_NAME=haswell`` *and* ``NUMBA_CPU_FEATURES``.  The name
  alone is not enough: numba then still hands LLVM the host's features, ``+avx512f`` among them,
  and on an AVX-512 host the kernels came out using 512-bit registers (280 ``zmm`` operands in
  ``_glm_coef``, against 0 when compiled for the host itself).  The features are the host's,
  every one an AVX2 core (Haswell) lacks turned off; :func:`describe` counts the 512-bit
  registers in a compiled kernel, so what ran is checked, not assumed.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import time


#: the instruction-set features of an AVX2 core (LLVM's names for Intel Haswell)
HASWELL_FEATURES = frozenset(
    "64bit avx avx2 bmi bmi2 cmov crc32 cx16 cx8 f16c fma fsgsbase fxsr invpcid lzcnt mmx movbe pclmul popcnt "
    "rdrnd sahf sse sse2 sse3 sse4.1 sse4.2 ssse3 xsave xsaveopt".split())


def numba_avx2_features() -> str:
    """``NUMBA_CPU_FEATURES`` for an AVX2 core on this host: each of the host's features kept only
    if Haswell has it too, every other one (AVX-512, AMX, …) named off."""
    import llvmlite.binding as llvm

    host = llvm.get_host_cpu_features()
    return ",".join(("+" if on and name in HASWELL_FEATURES else "-") + name for name, on in sorted(host.items()))


def avx2_environment() -> dict[str, str]:
    """Environment variables under which this machine runs the code paths of an AVX2 machine."""
    from numpy._core._multiarray_umath import __cpu_dispatch__  # numpy's own list of dispatch targets

    beyond = [t for t in __cpu_dispatch__ if t.startswith(("AVX512", "X86_V4"))]
    return {"OPENBLAS_CORETYPE": "Haswell", "NPY_DISABLE_CPU_FEATURES": " ".join(beyond), "NUMBA_CPU_NAME": "haswell",
            "NUMBA_CPU_FEATURES": numba_avx2_features()}


def numba_wide_registers() -> int:
    """How many 512-bit (``zmm``) register operands the GLM kernel uses when this process compiles
    it (afresh: numba cannot show the code of a kernel loaded from its cache): 0 on an AVX2 core's
    code path."""
    import re

    import numba
    import numpy as np

    from dpcore.numerics import kernels

    kernels.glm_coef(np.zeros((4, 2)), np.ones(4), kernels.GLM_LOGISTIC)  # its signatures, as used
    kernel = kernels._glm_coef
    options = {k: v for k, v in kernel.targetoptions.items() if k not in ("cache", "nopython")}
    fresh = numba.njit(**options)(kernel.py_func)
    for signature in kernel.signatures:
        fresh.compile(signature)
    return sum(len(re.findall(r"%zmm", asm)) for asm in fresh.inspect_asm().values())


@contextlib.contextmanager
def one_core_busy():
    """One other process keeping a core busy while the block runs (a class server is never idle:
    a second session, a notebook, the browser): a Python loop that never sleeps, stopped after."""
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)  # running, not starting, when the first sample is taken
        yield burner
    finally:
        burner.kill()
        burner.wait()


def describe() -> str:
    """What the running process's numpy, OpenBLAS and numba dispatch to, in one line."""
    import numpy as np
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    from threadpoolctl import threadpool_info

    simd = [t for t in __cpu_dispatch__ if __cpu_features__.get(t)]
    blas = ", ".join(f"{i.get('internal_api')} {i.get('architecture')}" for i in threadpool_info() if i.get("user_api") == "blas")
    numba_cpu = os.environ.get("NUMBA_CPU_NAME", "host")
    if os.environ.get("NUMBA_CPU_FEATURES"):
        numba_cpu += " (features set)"
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{os.cpu_count()} cores, numpy {np.__version__} SIMD targets {simd or 'baseline only'}; BLAS {blas}; "
            f"numba CPU {numba_cpu}, {numba_wide_registers()} zmm operands in the GLM kernel; load {load}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--describe"]:
        from pathlib import Path

        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository's dpcore
        print(describe())
        sys.exit(0)
    if sys.argv[1:2] == ["--run"] and len(sys.argv) > 2:
        # "python" is this interpreter (the one with the project's dependencies), never whichever
        # python comes first on PATH when the environment is not activated
        command = [sys.executable if sys.argv[2] == "python" else sys.argv[2], *sys.argv[3:]]
        os.execvpe(command[0], command, {**os.environ, **avx2_environment()})
    for key, value in avx2_environment().items():
        print(f"export {key}={shlex.quote(value)}")
