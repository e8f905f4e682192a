"""``python benchmarks/bench_certify.py``: DP-SGD settings certified by ``dpcore.certify.core`` beside the
peers' own code (issue 46): Opacus' ``RDPAccountant`` and ``PRVAccountant``, TF Privacy's
``compute_dp_sgd_privacy`` and dp-accounting's ``PLDAccountant``.

Opacus and TF Privacy are never dependencies of dpcore: they run in the benchmarks' own virtualenv
(:mod:`peers`, ``benchmarks/.venv-peers``; TF Privacy's accounting module is imported without
TensorFlow, through the package's own ``skip_tf_privacy_import`` switch).  Where they cannot be
installed, their columns say so and the checks that need them are reported as not run.

For 24 settings spanning q 1e-4 … 0.1, z 0.5 … 10, T 10 … 1e5 and δ 1e-5 … 1e-10, one row each:

* ``ε a/r``: the project's add/remove ε (:func:`dpcore.certify.core.certify`: the PLD on the accountant's
  grid, capped by the unsampled GDP bound);
* ``PLD``: dp-accounting's ``PLDAccountant`` (add/remove) on a 1e-4 grid (or the project's grid
  where that is coarser than 1e-3: a fine grid of the weakest settings would not fit in memory);
* ``PRV lo…up``: Opacus' ``PRVAccountant`` (eps_error 0.01, delta_error δ/1000, its defaults): the
  bounds it computes (``get_epsilon`` reports the upper one);
* ``O-RDP`` and ``TF-RDP``: Opacus' ``RDPAccountant`` and TF Privacy's ``compute_dp_sgd_privacy``
  (n = 10⁶, batch = q·n, epochs = T·q);
* ``ε r/1``: the replace-one ε (:func:`dpcore.privacy.accounting.sampled_gaussian_epsilon`, what every
  mechanism of the project certifies);
* ``O÷here``: Opacus' RDP figure over the one ``dpcore.certify.core`` prints for ``opacus-rdp`` when
  Opacus is not installed (dp-accounting's RDP with Opacus' orders): below 1 where Opacus' own sums
  for fractional orders give less than dp-accounting's (z ≤ 1, q ≥ 0.01);
* ``ok``: the checks of the issue, ``y`` or the ones that failed: add/remove within Opacus' PRV
  bounds widened by its stated ε error (0.01), and at most 1 % above dp-accounting's PLD; at most
  each RDP figure (``opacus_rdp≥``, ``tf_rdp≥``); replace-one at least add/remove (``r/1``); and the
  figure ``dpcore.certify.core`` prints for ``tf-privacy-rdp`` equal to TF Privacy's to 1e-9 (``tf≡``);
* ``s``: seconds of the project's certificate (both relations, the RDP figure and the ε(δ) curve).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import dp_accounting as dpa
from absl import logging as absl_logging

from dpcore import certify_noise as certify
from dpcore.privacy.accounting import pld_grid

from peers import run_peer

Z = (0.5, 1.0, 2.0, 10.0)
Q = (1e-4, 1e-3, 1e-2, 0.1)
T = (10, 1_000, 100_000)
D = (1e-5, 1e-8, 1e-10)
#: 24 settings: every q with every T, the noise and δ rotating so that each value appears
SETTINGS = [(Z[(i + j + shift) % 4], Q[i], T[j], D[(i + j + shift // 2) % 3])
            for shift in (0, 2) for i in range(4) for j in range(3)]
#: TF Privacy's description of a run: n records, batches of q·n, T·q epochs
TF_N = 10**6
#: Opacus' PRVAccountant's stated ε error (its default)
PRV_EPS_ERROR = 0.01
#: how far above dp-accounting's PLD (on its grid) the project's add/remove ε may lie: both are
#: pessimistic on different grids (the project's is the span rule's, coarser at large T)
PLD_REL = 0.01

#: runs in the peers' Python: Opacus' and TF Privacy's own code on every setting (one JSON line)
PEER_CODE = r"""
import json, math, resource, sys, time
import numpy as np
# Opacus' PRV of the weakest settings (z = 0.5, T = 1e5) asks for tens of GB: a 4 GB cap turns that
# into a MemoryError, reported in its cell, instead of taking the machine down
resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))
sys.skip_tf_privacy_import = True  # TF Privacy's switch: its accounting module without TensorFlow
from absl import logging
logging.set_verbosity(logging.ERROR)
from opacus.accountants import PRVAccountant, RDPAccountant
from tensorflow_privacy.privacy.analysis import compute_dp_sgd_privacy_lib as tfp
import opacus, tensorflow_privacy
out = {"versions": {"opacus": opacus.__version__, "tensorflow_privacy": getattr(tensorflow_privacy, "__version__", "?")},
       "rows": []}
for z, q, T, delta, n in json.loads(sys.argv[1]):
    row = {}
    t0 = time.perf_counter()
    try:
        a = RDPAccountant(); a.history = [(z, q, T)]
        row["opacus_rdp"] = float(a.get_epsilon(delta))
    except Exception as e:
        row["opacus_rdp"] = f"{type(e).__name__}: {e}"
    try:
        a = PRVAccountant(); a.history = [(z, q, T)]
        dprv = a._get_dprv(eps_error=0.01, delta_error=delta / 1000)
        row["opacus_prv"] = [float(v) for v in dprv.compute_epsilon(delta, delta / 1000, 0.01)]
    except Exception as e:
        row["opacus_prv"] = f"{type(e).__name__}: {e}"
    batch = round(q * n)
    epochs = T * batch / n
    while math.ceil(epochs * n / batch) > T:  # the epochs TF Privacy turns back into exactly T steps
        epochs = float(np.nextafter(epochs, 0))
    try:
        row["tf_rdp"] = float(tfp.compute_dp_sgd_privacy(n, batch, z, epochs, delta)[0])
        row["tf_steps"] = math.ceil(epochs * n / batch)
    except Exception as e:
        row["tf_rdp"] = f"{type(e).__name__}: {e}"
    row["seconds"] = time.perf_counter() - t0
    out["rows"].append(row)
print(json.dumps(out))
"""


def dp_accounting_pld(z: float, q: float, steps: int, delta: float) -> float:
    """dp-accounting's PLDAccountant, add/remove: on a 1e-4 grid where the project's grid is 1e-3
    (a finer grid than the project's for all but tiny ε), else on the project's (coarser) one."""
    own = pld_grid(z, q, steps) or 0.5
    grid = 1e-4 if own <= 1e-3 else own
    accountant = dpa.pld.PLDAccountant(dpa.NeighboringRelation.ADD_OR_REMOVE_ONE, value_discretization_interval=grid)
    accountant.compose(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), steps))
    return float(accountant.get_epsilon(delta))


def _num(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else "fail"


def checks(ours, ours_tf, replace_one, pld, peer: dict) -> str:
    """The row's checks (module docstring): ``y``, or the ones that failed, or ``no peers``."""
    failed = []
    prv = peer.get("opacus_prv")
    if isinstance(prv, list):
        low, _, up = prv
        if not (low - PRV_EPS_ERROR <= ours.add_remove <= up + PRV_EPS_ERROR):
            failed.append("PRV")
    if math.isfinite(pld) and ours.add_remove > pld * (1 + PLD_REL) + 1e-9:
        failed.append("PLD")
    for key in ("opacus_rdp", "tf_rdp"):
        value = peer.get(key)
        if isinstance(value, float) and ours.add_remove > value * (1 + 1e-9):
            failed.append(key + "≥")
    tf = peer.get("tf_rdp")
    if isinstance(tf, float) and abs(ours_tf.library_epsilon - tf) > 1e-9 * max(1.0, tf):
        failed.append("tf≡")
    if replace_one < ours.add_remove:
        failed.append("r/1")
    if not peer:
        return "no peers" if not failed else ",".join(failed)
    return "y" if not failed else ",".join(failed)


def main() -> None:
    absl_logging.set_verbosity(absl_logging.ERROR)  # the RDP orders dp-accounting drops at q = 0.1, z ≤ 1
    print(f"machine: {os.cpu_count()} cores, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    started = time.perf_counter()
    peers = run_peer(PEER_CODE, json.dumps([[z, q, t, d, TF_N] for z, q, t, d in SETTINGS]))
    peer_seconds = time.perf_counter() - started
    if isinstance(peers, str):
        print(f"peers not run: {peers}")
        peer_rows = [{} for _ in SETTINGS]
    else:
        print("peers: " + ", ".join(f"{k} {v}" for k, v in peers["versions"].items())
              + f" ({peer_seconds:.1f} s for all rows)")
        peer_rows = peers["rows"]
    print(f"{'z':>4} {'q':>6} {'T':>6} {'δ':>6} {'ε a/r':>8} {'PLD':>8} {'PRV lo…up':>17} {'O-RDP':>8} "
          f"{'TF-RDP':>8} {'O÷here':>7} {'ε r/1':>8} {'s':>5}  ok")
    bad = 0
    for (z, q, steps, delta), peer in zip(SETTINGS, peer_rows):
        t0 = time.perf_counter()
        c = certify(noise_multiplier=z, sample_rate=q, steps=steps, delta=delta, accountant="opacus-rdp")
        seconds = time.perf_counter() - t0
        c_tf = certify(noise_multiplier=z, sample_rate=q, steps=steps, delta=delta, accountant="tf-privacy-rdp")
        pld = dp_accounting_pld(z, q, steps, delta)
        prv = peer.get("opacus_prv")
        prv_text = f"{prv[0]:.4g}…{prv[2]:.4g}" if isinstance(prv, list) else "fail" if prv else "-"
        verdict = checks(c, c_tf, c.replace_one, pld, peer)
        o = peer.get("opacus_rdp")
        ratio = f"{o / c.library_epsilon:.4f}" if isinstance(o, float) and c.library_epsilon > 0 else "-"
        bad += verdict not in ("y", "no peers")
        print(f"{z:4g} {q:6.0e} {steps:6d} {delta:6.0e} {c.add_remove:8.4g} {pld:8.4g} {prv_text:>17} "
              f"{_num(peer.get('opacus_rdp')) if peer else '-':>8} {_num(peer.get('tf_rdp')) if peer else '-':>8} "
              f"{ratio:>7} {c.replace_one:8.4g} {seconds:5.2f}  {verdict}")
        for key in ("opacus_prv", "opacus_rdp", "tf_rdp"):
            if isinstance(peer.get(key), str):
                print(f"     {key} failed: {peer[key]}")
    print(f"{len(SETTINGS) - bad} of {len(SETTINGS)} rows pass every check they could run")
    failed = {k: sum(isinstance(p.get(k), str) for p in peer_rows) for k in ("opacus_prv", "opacus_rdp", "tf_rdp")}
    if any(failed.values()):
        print("peer figures that could not be computed (their checks not run on those rows): "
              + ", ".join(f"{k} on {v} row{'s' if v != 1 else ''}" for k, v in failed.items() if v))


if __name__ == "__main__":
    main()
