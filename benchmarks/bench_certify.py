"""``python benchmarks/bench_certify.py``: DP-SGD settings certified by ``dpcore.certify`` beside
dp-accounting's own accountants (issue 46).

For 24 settings spanning q 1e-4 … 0.1, z 0.5 … 10, T 10 … 1e5 and δ 1e-5 … 1e-10, one row each:

* ``ε a/r``: the project's add/remove ε (:func:`dpcore.certify.certify`: the PLD on the accountant's
  grid, capped by the unsampled GDP bound);
* ``PLD``: dp-accounting's ``PLDAccountant`` (add/remove) on a 1e-4 grid (or the project's grid
  where that is coarser than 1e-3: a fine grid of the weakest settings would not fit in memory);
* ``RDP``: dp-accounting's ``RdpAccountant`` (add/remove) with Opacus' orders: the analysis
  Opacus' ``RDPAccountant`` and TF Privacy's ``compute_dp_sgd_privacy`` run.  Opacus and TF Privacy
  are not installed here, so their own code is not called; dp-accounting's RDP is the same analysis
  (TF Privacy computes through dp-accounting);
* ``ε r/1``: the replace-one ε (:func:`dpcore.accounting.sampled_gaussian_epsilon`, what every
  mechanism of the project certifies);
* ``s``: seconds of the project's certificate (both relations, the RDP figure and the ε(δ) curve).
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import dp_accounting as dpa
from absl import logging as absl_logging

from dpcore import certify
from dpcore.certify import OPACUS_ORDERS, pld_grid, rdp_epsilon

Z = (0.5, 1.0, 2.0, 10.0)
Q = (1e-4, 1e-3, 1e-2, 0.1)
T = (10, 1_000, 100_000)
D = (1e-5, 1e-8, 1e-10)
#: 24 settings: every q with every T, the noise and δ rotating so that each value appears
SETTINGS = [(Z[(i + j + shift) % 4], Q[i], T[j], D[(i + j + shift // 2) % 3])
            for shift in (0, 2) for i in range(4) for j in range(3)]


def dp_accounting_pld(z: float, q: float, steps: int, delta: float) -> float:
    """dp-accounting's PLDAccountant, add/remove: on a 1e-4 grid where the project's grid is 1e-3
    (a finer grid than the project's for all but tiny ε), else on the project's (coarser) one."""
    own = pld_grid(z, q, steps) or 0.5
    grid = 1e-4 if own <= 1e-3 else own
    accountant = dpa.pld.PLDAccountant(dpa.NeighboringRelation.ADD_OR_REMOVE_ONE, value_discretization_interval=grid)
    accountant.compose(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), steps))
    return float(accountant.get_epsilon(delta))


def main() -> None:
    absl_logging.set_verbosity(absl_logging.ERROR)  # the RDP orders dp-accounting drops at q = 0.1, z ≤ 1
    print(f"{'z':>5} {'q':>7} {'T':>7} {'δ':>7} {'ε a/r':>10} {'PLD':>10} {'RDP':>10} {'ε r/1':>10} "
          f"{'a/r÷PLD':>8} {'s':>5}")
    for z, q, steps, delta in SETTINGS:
        started = time.perf_counter()
        c = certify(noise_multiplier=z, sample_rate=q, steps=steps, delta=delta)
        seconds = time.perf_counter() - started
        pld = dp_accounting_pld(z, q, steps, delta)
        rdp = rdp_epsilon(z, q, steps, delta, OPACUS_ORDERS)
        ratio = c.add_remove / pld if pld > 0 and math.isfinite(pld) else float("nan")
        print(f"{z:5g} {q:7.0e} {steps:7d} {delta:7.0e} {c.add_remove:10.4g} {pld:10.4g} {rdp:10.4g} "
              f"{c.replace_one:10.4g} {ratio:8.4f} {seconds:5.2f}")


if __name__ == "__main__":
    main()
