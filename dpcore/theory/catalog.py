"""Theory tables: every published noise bound and excess-risk bound, evaluated (SPEC §4).

Students meet these results as rows of big-O expressions.  Here each row keeps
the LaTeX exactly as the seed paper prints it, and a Python function of named
parameters that evaluates it.  Big-O constants are set to 1 and the row is
marked ``"order only"``; where the paper gives real constants (Fukuchi et al.'s
Lemma 2 and Cor. 1, Chaudhuri et al.'s noise rate γ) the function uses them and
the row is marked ``"exact"``.

Conventions (also in :data:`GLOBAL_NOTES`):

* ``log`` and ``ln`` are read as the natural logarithm;
* a row's noise value is the quantity its table prints (``noise_quantity``):
  mostly the variance σ² of Gaussian noise (tables' footnotes), but the rate γ
  of Chaudhuri's density, the scale of Song's exponential noise, or σ_u —
  compare noise values only within one quantity;
* the papers' names map onto ours: ``L`` (smoothness) → β, ``Δ`` (strong
  convexity) → λ, ``ζ`` → G, ``η`` (radius) → D, seed 002's ``m`` (number of
  parameters) → p, seed 003's ``d`` (parameter dimension) → p and its ``λ``
  (smoothness) → β.

Parameters are inferred from a dataset, a model and the user's settings by
:func:`infer_parameters`, each with where it came from; :func:`evaluate`,
:func:`scaling` and :func:`compare_measured` work on them and
:func:`bounds_report` gathers everything as one JSON-able document.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from .. import datasets as _datasets
from ..erm import solve_erm
from ..exceptions import ModelError, ParameterError
from ..jsonutil import to_jsonable
from ..mechanisms import REGISTRY
from ..models import make_model
from ..params import PARAMS, validate
from ..partition import client_sizes as _sizes
from .formulas import (
    chaudhuri_objective_rate,
    chaudhuri_output_rate,
    fukuchi_lemma2_risk,
    fukuchi_local_epsilon,
    fukuchi_sigma_b2,
    fukuchi_sigma_u,
    kang_input_variance,
    kifer_sigma,
    noisy_gd_risk,
    noisy_gd_variance,
)

__all__ = [
    "BoundRow",
    "CATALOG",
    "EMPTY",
    "EXACTNESS",
    "GLOBAL_NOTES",
    "PAPERS",
    "CITATIONS",
    "PARAMETERS",
    "PERTURBATIONS",
    "ParamValue",
    "bounds_report",
    "client_sizes",
    "scaling_plan",
    "predictions",
    "evaluate",
    "get_row",
    "infer_parameters",
    "loglog_slope",
    "scaling",
    "scaling_report",
]

PAPERS = {
    "001": "001_57904dd3c8dbc744.txt",
    "002": "002_4dba1b4c54fc673e.txt",
    "003": "003_7466b32f38e95f7f.txt",
    "004": "004_c3d4c5bc1ad0ed72.txt",
}

#: how the views cite each seed paper
CITATIONS = {
    "001": "Kang et al., “Input Perturbation: A New Paradigm between Central and Local Differential Privacy”",
    "002": "Kang et al., “Differentially Private ERM Based on Data Perturbation”",
    "003": "Fukuchi, Tran & Sakuma, “Differentially Private Empirical Risk Minimization with Input Perturbation”",
    "004": "Kang et al., “Weighted Distributed Differential Privacy ERM”",
}

EMPTY = "—"  # a table cell the paper leaves empty (or fills with "None" / "NOT GIVEN")

EXACTNESS = ("exact", "order only", "noise exact, risk order only")
PERTURBATIONS = ("output", "objective", "gradient", "input", "local", "distributed")

GLOBAL_NOTES = (
    "Big-O constants are set to 1 in rows marked 'order only': compare how rows scale, not "
    "their absolute values.",
    "log and ln are read as the natural logarithm.",
    "Noise values are the quantity each table prints (see noise_quantity): a variance σ² for "
    "Gaussian rows, but a rate γ (larger = less noise) for Chaudhuri et al. and a scale for "
    "Song et al.; compare them only within one quantity.",
    "Papers' symbols mapped to ours: L → β (smoothness), Δ → λ (strong convexity), ζ → G, "
    "η → D; seed 002's m and seed 003's d (parameter count) → p; seed 003's λ (smoothness) → β.",
)

_LOG = math.log
_SQRT = math.sqrt


class _Undefined(Exception):
    """A formula needs a parameter that has no value for this model or dataset."""


class _Values(dict):
    """Parameter values; reading one that is missing or ``None`` raises :class:`_Undefined`."""

    def __getitem__(self, key: str) -> float:
        v = dict.get(self, key)
        if v is None:
            raise _Undefined(key)
        return v


# --------------------------------------------------------------------------
# the catalog


@dataclass(frozen=True)
class BoundRow:
    """One published row: its LaTeX as printed, and functions that evaluate it.

    ``noise_fn`` / ``risk_fn`` / ``privacy_fn`` take a mapping of parameter
    values (see :data:`PARAMETERS`) and return a float; ``None`` where the paper
    gives nothing.  ``mechanism`` is the dpcore mechanism id that implements the
    row (looked up in the registry at call time; it may not be registered).

    References: SPEC §4.
    """

    id: str
    source: str
    seed: str
    method: str
    reference: str
    perturbation: str
    pure: bool
    noise_type: str
    noise_latex: str
    risk_latex: str
    noise_fn: Callable[[Mapping[str, float]], float] | None
    risk_fn: Callable[[Mapping[str, float]], float] | None
    exactness: str
    mechanism: str | None
    note: str
    noise_quantity: str = "variance σ² of the Gaussian noise"
    privacy_latex: str = EMPTY
    privacy_fn: Callable[[Mapping[str, float]], float] | None = None
    privacy_quantity: str = ""

    def metadata(self) -> dict[str, Any]:
        """Everything but the callables, for JSON."""
        return {
            "id": self.id,
            "source": self.source,
            "seed": self.seed,
            "paper_file": PAPERS[self.seed],
            "citation": f"{CITATIONS[self.seed]}, {self.source.split(' ', 1)[1]}",
            "method": self.method,
            "reference": self.reference,
            "perturbation": self.perturbation,
            "pure": self.pure,
            "noise_type": self.noise_type,
            "noise_latex": self.noise_latex,
            "risk_latex": self.risk_latex,
            "privacy_latex": self.privacy_latex,
            "noise_quantity": self.noise_quantity if self.noise_fn else None,
            "privacy_quantity": self.privacy_quantity or None,
            "exactness": self.exactness,
            "mechanism": self.mechanism,
            "note": self.note,
        }


def _src(seed: str, where: str) -> str:
    return f"{PAPERS[seed]} {where}"


_VAR = "variance σ² of the Gaussian noise"


def _noisy_gd_noise(v: Mapping[str, float]) -> float:
    return noisy_gd_variance(v["G"], v["T"], v["n"], v["epsilon"], v["delta"])


def _noisy_gd_risk(v: Mapping[str, float]) -> float:
    return noisy_gd_risk(v["p"], v["G"], v["n"], v["epsilon"], v["delta"])
_GAUSS = _VAR + " (seed 001 Table 1 footnote 2)"
_GAUSS2 = _VAR + " (seed 002 Table 1 footnote)"

_S001 = [
    BoundRow(
        id="001-chaudhuri-output", source=_src("001", "Table 1 row 1"), seed="001",
        method="Output perturbation", reference="Chaudhuri et al. 2011", perturbation="output",
        pure=True, noise_type="Laplace-type (Gamma-norm) density v(b) ∝ e^{−γ‖b‖}",
        noise_latex=r"v(b)=\frac{1}{\alpha}e^{-\gamma\|b\|},\ \gamma=O\left(n\lambda\epsilon\right)",
        risk_latex=r"O\left(\frac{p^{2}\log^{2}(p/\delta)(L+\lambda)}{\lambda^{2}n^{2}\epsilon^{2}}\right)",
        noise_fn=lambda v: chaudhuri_output_rate(n=v["n"], lam=v["lam"], epsilon=v["epsilon"], G=v["G"]),
        risk_fn=lambda v: v["p"] ** 2 * _LOG(v["p"] / v["delta"]) ** 2 * (v["beta"] + v["lam"])
        / (v["lam"] ** 2 * v["n"] ** 2 * v["epsilon"] ** 2),
        exactness="noise exact, risk order only", mechanism="output-laplace",
        noise_quantity="rate γ of the density (larger γ = less noise; E‖b‖ = p/γ)",
        note=("γ uses CMS 2011's real constant, γ = nλε/(2G) (Alg. 1 states β = nΛε/2 for G = 1); the "
              "table prints only O(nλε). α in the density is its normalising constant, not the "
              "learning rate. The risk is pure ε-DP, so its δ is the failure probability of CMS's "
              "high-probability bound, not a privacy parameter: it is evaluated at the user's δ. "
              "L is the smoothness β."),
    ),
    BoundRow(
        id="001-chaudhuri-objective", source=_src("001", "Table 1 row 2"), seed="001",
        method="Objective perturbation", reference="Chaudhuri et al. 2011", perturbation="objective",
        pure=True, noise_type="Laplace-type (Gamma-norm) density v(b) ∝ e^{−γ‖b‖}",
        noise_latex=(r"v(b)=\frac{1}{\alpha}e^{-\gamma\|b\|},\ \gamma=O\left(\epsilon-\log(1+"
                     r"\frac{2L}{n\lambda}+\frac{L^{2}}{n^{2}\lambda^{2}})\right)"),
        risk_latex=r"O\left(\frac{p^{2}\log^{2}(p/\delta)}{\lambda n^{2}\epsilon^{2}}\right)",
        noise_fn=lambda v: chaudhuri_objective_rate(n=v["n"], lam=v["lam"], epsilon=v["epsilon"],
                                                    c=v["beta"]),
        risk_fn=lambda v: v["p"] ** 2 * _LOG(v["p"] / v["delta"]) ** 2
        / (v["lam"] * v["n"] ** 2 * v["epsilon"] ** 2),
        exactness="noise exact, risk order only", mechanism="objective-chaudhuri",
        noise_quantity="rate γ of the density (larger γ = less noise; E‖b‖ = p/γ)",
        note=("γ = ε'/2 with CMS 2011 Alg. 2's constants; L (CMS's c, the bound on ℓ'') is β. When "
              "ε' ≤ 0 the table's expression is not positive; Alg. 2 then adds regularisation and "
              "uses ε' = ε/2 (γ = ε/4), which is what is evaluated. δ in the risk is a failure "
              "probability, not a privacy parameter (the row is pure ε-DP)."),
    ),
    BoundRow(
        id="001-kifer", source=_src("001", "Table 1 row 3"), seed="001",
        method="Objective perturbation (Gaussian)", reference="Kifer et al. 2012",
        perturbation="objective", pure=False, noise_type="Gaussian",
        noise_latex=r"O\left(\frac{\zeta^{2}(\epsilon+\log(4/\delta^{2}))}{\epsilon^{2}}\right)",
        risk_latex=r"O\left(\frac{\|b\|^{2}}{n^{2}\Delta}+\Delta\|\hat{\theta}\|^{2}\right)",
        # the table's ζ²(ε + log(4/δ²))/ε² is Kifer's exact σ² = ζ²(8 log(2/δ) + 4ε)/ε² without its 4
        noise_fn=lambda v: kifer_sigma(v["epsilon"], v["delta"], v["G"]) ** 2 / 4.0,
        risk_fn=lambda v: v["p"] * kifer_sigma(v["epsilon"], v["delta"], v["G"]) ** 2 / 4.0
        / (v["n"] ** 2 * v["lam"]) + v["lam"] * v["w_hat"] ** 2,
        exactness="order only", mechanism="objective-gaussian", noise_quantity=_GAUSS,
        note=("The published risk depends on the random noise b and on θ̂: it is evaluated at "
              "E‖b‖² = p·σ² (σ² = this row's noise bound) and ‖θ̂‖ = w_hat. Δ is Kifer's added "
              "regulariser; we use λ. Its second term Δ‖θ̂‖² does not shrink with n."),
    ),
    BoundRow(
        id="001-bassily", source=_src("001", "Table 1 row 4"), seed="001",
        method="Noisy SGD", reference="Bassily et al. 2014", perturbation="gradient", pure=False,
        noise_type="Gaussian",
        noise_latex=r"O\left(\frac{G^{2}n^{2}\log(n/\delta)\log(1/\delta)}{\epsilon^{2}}\right)",
        risk_latex=r"O\left(\frac{G^{2}p\log^{2}(n/\delta)\log(1/\delta)}{n\Delta\epsilon^{2}}\right)",
        noise_fn=lambda v: v["G"] ** 2 * v["n"] ** 2 * _LOG(v["n"] / v["delta"]) * _LOG(1.0 / v["delta"])
        / v["epsilon"] ** 2,
        risk_fn=lambda v: v["G"] ** 2 * v["p"] * _LOG(v["n"] / v["delta"]) ** 2 * _LOG(1.0 / v["delta"])
        / (v["n"] * v["lam"] * v["epsilon"] ** 2),
        exactness="order only", mechanism="gradient-bassily", noise_quantity=_GAUSS,
        note=("The noise is on n∇ℓ with Bassily's T = n² steps built in (n² in the numerator); "
              "gradient-bassily runs the user's T instead. Noise grows with n because it is added "
              "to the sum-scale gradient."),
    ),
    BoundRow(
        id="001-zhang", source=_src("001", "Table 1 row 5"), seed="001",
        method="Output perturbation after GD", reference="Zhang et al. 2017", perturbation="output",
        pure=False, noise_type="Gaussian",
        noise_latex=r"O\left(\frac{G^{2}(1+L/\Delta)^{2}\log(2/\delta)}{n^{2}L^{2}\epsilon^{2}}\right)",
        risk_latex=r"O\left(\frac{LG^{2}p\log(1/\delta)}{n^{2}\epsilon^{2}\Delta^{2}}\right)",
        noise_fn=lambda v: v["G"] ** 2 * (1.0 + v["beta"] / v["lam"]) ** 2 * _LOG(2.0 / v["delta"])
        / (v["n"] ** 2 * v["beta"] ** 2 * v["epsilon"] ** 2),
        risk_fn=lambda v: v["beta"] * v["G"] ** 2 * v["p"] * _LOG(1.0 / v["delta"])
        / (v["n"] ** 2 * v["epsilon"] ** 2 * v["lam"] ** 2),
        exactness="order only", mechanism="output-gaussian", noise_quantity=_GAUSS,
        note="L is the smoothness β and Δ the strong convexity λ.",
    ),
    BoundRow(
        id="001-wang2017-svrg", source=_src("001", "Table 1 row 6"), seed="001",
        method="DP-SVRG", reference="Wang et al. 2017", perturbation="gradient", pure=False,
        noise_type="Gaussian",
        noise_latex=r"O\left(\frac{G^{2}Tm\log(1/\delta)}{n^{2}\epsilon^{2}}\right)",
        risk_latex=r"O\left(\frac{G^{2}p\log(n)\log(1/\delta)}{n^{2}\Delta\epsilon^{2}}\right)",
        noise_fn=lambda v: v["G"] ** 2 * v["T"] * v["m_svrg"] * _LOG(1.0 / v["delta"])
        / (v["n"] ** 2 * v["epsilon"] ** 2),
        risk_fn=lambda v: v["G"] ** 2 * v["p"] * _LOG(v["n"]) * _LOG(1.0 / v["delta"])
        / (v["n"] ** 2 * v["lam"] * v["epsilon"] ** 2),
        exactness="order only", mechanism="gradient-dpsvrg", noise_quantity=_GAUSS,
        note=("m is DP-SVRG's inner-loop length, which seed 001 does not define in the table (the "
              "text only calls it 'the sampling iterations'); it is not the number of parties. We "
              "default it to ⌈β/λ⌉ (SVRG's usual m = Θ(L/μ)); override 'm_svrg'. T is the outer "
              "loop count. gradient-dpsvrg is optional in SPEC §3.4."),
    ),
    BoundRow(
        id="001-wang2017-gd", source=_src("001", "Table 1 row 7"), seed="001",
        method="Noisy GD (traditional)", reference="Wang et al. 2017", perturbation="gradient",
        pure=False, noise_type="Gaussian",
        noise_latex=r"O\left(\frac{G^{2}T\log(1/\delta)}{n^{2}\epsilon^{2}}\right)",
        risk_latex=r"O\left(\frac{G^{2}p\log(n)\log(1/\delta)}{n^{2}\epsilon^{2}}\right)",
        noise_fn=_noisy_gd_noise,
        risk_fn=_noisy_gd_risk,
        exactness="order only", mechanism="gradient-dpgd", noise_quantity=_GAUSS,
        note=("Unlike the DP-SVRG row, the risk has no 1/Δ although both rows cite the same paper. "
              "Seed 004 (Remark 1) states Wang et al.'s risk is log(n) worse than WD-DP's, i.e. "
              "log²(n) (row 004-wang2017-central), while this row has log(n)."),
    ),
    BoundRow(
        id="001-duchi-ldp", source=_src("001", "Table 1 row 8"), seed="001",
        method="Local DP SGD", reference="Duchi et al. 2013", perturbation="local", pure=True,
        noise_type="Randomized response", noise_latex=EMPTY,
        risk_latex=r"O\left(\frac{Gp}{\epsilon\sqrt{n}}\right)",
        noise_fn=None,
        risk_fn=lambda v: v["G"] * v["p"] / (v["epsilon"] * _SQRT(v["n"])),
        exactness="order only", mechanism="local-duchi",
        note=("The noise cell reads 'None' with footnote 3: 'the noise added by randomized response "
              "is complicated, details can be found in (Duchi et al., 2013)'. local-duchi implements "
              "the ℓ2-ball mechanism of that paper (SPEC §3.6)."),
    ),
    BoundRow(
        id="001-wang2018-ldp", source=_src("001", "Table 1 row 9"), seed="001",
        method="Non-interactive local DP ERM", reference="Wang et al. 2018", perturbation="local",
        pure=True, noise_type="Laplace",
        noise_latex=r"O\left(pn\epsilon^{2}\right)",
        risk_latex=r"O\left(\frac{\sqrt{p}}{(\sqrt{n}\epsilon)^{\frac{L}{L+2p}}}\right)",
        noise_fn=lambda v: v["p"] * v["n"] * v["epsilon"] ** 2,
        risk_fn=lambda v: _SQRT(v["p"]) / (_SQRT(v["n"]) * v["epsilon"]) ** (v["beta"] / (v["beta"] + 2 * v["p"])),
        exactness="order only", mechanism=None,
        noise_quantity="variance of the Laplace noise (footnote 2), as printed",
        note=("As printed, the noise 'variance' grows with n and with ε², the opposite of any "
              "Laplace mechanism (variance ∝ 1/ε²); it is evaluated literally. L in the exponent is "
              "undefined in seed 001 (in Wang et al. 2018 it is the smoothness order of the loss, "
              "not a smoothness constant); it is evaluated as the table reads, with L = β, so the "
              "exponent β/(β + 2p) is tiny and the risk barely moves with n or ε. No dpcore "
              "mechanism implements this row."),
    ),
    BoundRow(
        id="001-fukuchi", source=_src("001", "Table 1 row 10"), seed="001",
        method="Input perturbation (quadratic loss)", reference="Fukuchi et al. 2017",
        perturbation="input", pure=False, noise_type="Gaussian",
        noise_latex=r"O\left(\frac{G^{2}(\log(16/\delta)+\epsilon)}{n\epsilon^{2}}\right)",
        risk_latex=r"O\left(\frac{pG^{2}(\log(16/\delta^{2})+\epsilon)}{Ln\epsilon}\right)",
        noise_fn=lambda v: v["G"] ** 2 * (_LOG(16.0 / v["delta"]) + v["epsilon"]) / (v["n"] * v["epsilon"] ** 2),
        risk_fn=lambda v: v["p"] * v["G"] ** 2 * (_LOG(16.0 / v["delta"] ** 2) + v["epsilon"])
        / (v["beta"] * v["n"] * v["epsilon"]),
        exactness="order only", mechanism="input-fukuchi", noise_quantity=_GAUSS,
        note=("Internally inconsistent: the noise has log(16/δ), the risk log(16/δ²). Seed 001 "
              "calls these 'simplified' (footnote 1); they differ from seed 003's own results "
              "(rows 003-*): 003's Table 1 gives O(ηζ√(d log(1/δ))/(εαn)), with 1/ε not matching "
              "this row's p/ε either. L is Fukuchi's smoothness λ → β."),
    ),
    BoundRow(
        id="001-kang-input", source=_src("001", "Table 1 row 11 (Thm 1, Thm 2)"), seed="001",
        method="Input perturbation + GD (our method)", reference="Kang et al. (seed 001)",
        perturbation="input", pure=False, noise_type="Gaussian",
        noise_latex=r"O\left(\frac{G^{2}T\log(1/\delta)}{n(n-1)\sqrt{\Delta}\epsilon^{2}}\right)",
        risk_latex=(r"O\left(\frac{\alpha(2LD+G)G^{3}d\log^{2}(n)\log(1/\delta)}"
                    r"{n(n-1)\sqrt{\Delta}\epsilon^{2}}\right)"),
        noise_fn=lambda v: kang_input_variance(v["G"], v["T"], v["n"], v["epsilon"], v["delta"], _SQRT(v["lam"])),
        risk_fn=lambda v: v["alpha"] * (2 * v["beta"] * v["D"] + v["G"]) * v["G"] ** 3 * v["d"]
        * _LOG(v["n"]) ** 2 * _LOG(1.0 / v["delta"])
        / (v["n"] * (v["n"] - 1) * _SQRT(v["lam"]) * v["epsilon"] ** 2),
        exactness="order only", mechanism="input-kang", noise_quantity=_GAUSS,
        note=("α is the learning rate, d the feature dimension (not p), D the bound on ‖θ‖. "
              "Alg. 1 adds one z to every record; the per-record reading is what input-kang runs "
              "(SPEC §3.5). Thm 2 holds at T = Õ(log(...)), so the risk does not depend on T while "
              "the noise does."),
    ),
    BoundRow(
        id="001-kang-input-pl", source=_src("001", "Thm 3 (noise), Thm 4 (risk)"), seed="001",
        method="Input perturbation + GD, Polyak-Lojasiewicz loss", reference="Kang et al. (seed 001)",
        perturbation="input", pure=False, noise_type="Gaussian",
        noise_latex=r"\sigma^{2}=c\frac{G^{2}T\log(1/\delta)}{n(n-1)\epsilon^{2}}",
        risk_latex=(r"\mathbb{E}\left[\hat{L}(\theta_{T})-L^{*}\right]\leq O\left(\frac{\alpha(2LD+G)"
                    r"G^{3}d\log^{2}(n)\log(1/\delta)}{n(n-1)\epsilon^{2}}\right)"),
        noise_fn=lambda v: kang_input_variance(v["G"], v["T"], v["n"], v["epsilon"], v["delta"]),
        risk_fn=lambda v: v["alpha"] * (2 * v["beta"] * v["D"] + v["G"]) * v["G"] ** 3 * v["d"]
        * _LOG(v["n"]) ** 2 * _LOG(1.0 / v["delta"]) / (v["n"] * (v["n"] - 1) * v["epsilon"] ** 2),
        exactness="order only", mechanism="input-kang", noise_quantity=_GAUSS,
        note=("c = 1. Thm 4 says 'with σ the same as in (52)'; there is no Eq. (52), read as Eq. (12) "
              "(Thm 3). Same as row 11 without √Δ: no strong convexity needed."),
    ),
]

_S002 = [
    BoundRow(
        id="002-song2013", source=_src("002", "Table 1 row 1"), seed="002",
        method="Private SGD", reference="Song et al. 2013", perturbation="gradient", pure=True,
        noise_type="Exponential", noise_latex=r"O(\frac{G}{\epsilon})", risk_latex=EMPTY,
        noise_fn=lambda v: v["G"] / v["epsilon"], risk_fn=None,
        exactness="order only", mechanism=None,
        noise_quantity="scale λ of the density b ∝ e^{−‖b‖/λ} (table footnote)",
        note=("The utility cell reads 'NOT GIVEN'. The footnote's λ is the noise scale, not the "
              "regulariser. No dpcore mechanism implements this row."),
    ),
    BoundRow(
        id="002-abadi2016", source=_src("002", "Table 1 row 2"), seed="002",
        method="DP-SGD", reference="Abadi et al. 2016", perturbation="gradient", pure=False,
        noise_type="Gaussian", noise_latex=r"O(\frac{G^2 T \log(1/\delta)}{n^2 \epsilon^2})",
        risk_latex=EMPTY,
        noise_fn=_noisy_gd_noise,
        risk_fn=None, exactness="order only", mechanism="gradient-dpsgd",
        noise_quantity=_VAR + " on the mean gradient (seed 002 Table 1 footnote)",
        note="The utility cell reads 'NOT GIVEN'.",
    ),
    BoundRow(
        id="002-wu2017", source=_src("002", "Table 1 row 3"), seed="002",
        method="Bolt-on output perturbation", reference="Wu et al. 2017", perturbation="output",
        pure=False, noise_type="Gaussian",
        noise_latex=r"O(\frac{G^2 \log(1.25/\delta)}{n^2 \epsilon^2})",
        risk_latex=r"O(\frac{G^2 + \log(n)}{n} + \frac{m}{n\epsilon})",
        noise_fn=lambda v: v["G"] ** 2 * _LOG(1.25 / v["delta"]) / (v["n"] ** 2 * v["epsilon"] ** 2),
        risk_fn=lambda v: (v["G"] ** 2 + _LOG(v["n"])) / v["n"] + v["p"] / (v["n"] * v["epsilon"]),
        exactness="order only", mechanism="output-bolt-on", noise_quantity=_GAUSS2,
        note=("m is the number of model parameters (seed 002 §2.1) → p. Wu et al.'s sensitivity "
              "2G/(λn) puts 1/λ² in the variance; the table omits λ (treated as a constant)."),
    ),
    BoundRow(
        id="002-wang2019", source=_src("002", "Table 1 row 4"), seed="002",
        method="DP-LSSGD", reference="Wang et al. 2019", perturbation="gradient", pure=False,
        noise_type="Gaussian",
        noise_latex=r"O(\frac{G^2 T (\log(1/\delta) + \epsilon)}{n^2 \epsilon^2})",
        risk_latex=r"O(\frac{G \sqrt{G^2 m \log(1/\delta)}}{n\epsilon})",
        noise_fn=lambda v: v["G"] ** 2 * v["T"] * (_LOG(1.0 / v["delta"]) + v["epsilon"])
        / (v["n"] ** 2 * v["epsilon"] ** 2),
        risk_fn=lambda v: v["G"] * _SQRT(v["G"] ** 2 * v["p"] * _LOG(1.0 / v["delta"])) / (v["n"] * v["epsilon"]),
        exactness="order only", mechanism="gradient-lssgd", noise_quantity=_GAUSS2,
        note="m is the number of model parameters → p.",
    ),
    BoundRow(
        id="002-dbdp-sgd", source=_src("002", "Table 1 row 5 (Thm 1, Thm 3)"), seed="002",
        method="DBDP-SGD (data perturbation + mini-batch SGD)", reference="Kang et al. (seed 002)",
        perturbation="input", pure=False, noise_type="Gaussian",
        noise_latex=r"O(\frac{G^2 T \log(1/\delta)}{n^2 \epsilon^2})",
        risk_latex=r"O(\frac{m G^2 \log(1/\delta) \log(n)}{n^2 \epsilon^2})",
        noise_fn=_noisy_gd_noise,
        risk_fn=_noisy_gd_risk,
        exactness="order only", mechanism="input-dbdp", noise_quantity=_GAUSS2,
        note=("Thm 1 (Eq. 10) gives σ = c·q·G√(T log(1/δ))/ε, variance q²G²T log(1/δ)/ε²: the "
              "table's 1/n² matches only q = 1/n, while Thm 1 assumes q is of the order of 1/|B_t| "
              "(which gives q² ~ 1/n). m = number of parameters → p. Thm 3's T = Õ(log(...)) "
              "produces the log(n)."),
    ),
    BoundRow(
        id="002-dbdp-sgd-if", source=_src("002", "Table 1 row 6 (Thm 2, Thm 3)"), seed="002",
        method="Performance-improving DBDP-SGD (influence functions)", reference="Kang et al. (seed 002)",
        perturbation="input", pure=False, noise_type="Gaussian",
        noise_latex=r"O(\frac{G^2 T \log(1/\delta)}{n^2 \epsilon^2})",
        risk_latex=r"\text{(for the worst case)}\ O(\frac{m G^2 \log(1/\delta) \log(n)}{n^2 \epsilon^2})",
        noise_fn=_noisy_gd_noise,
        risk_fn=_noisy_gd_risk,
        exactness="order only", mechanism="input-dbdp-if", noise_quantity=_GAUSS2,
        note=("Thm 2 (Eq. 15) sets σ_t ≥ cG√(T log(1/δ))/√(w_t n ε), i.e. variance "
              "G²T log(1/δ)/(w_t n ε): n and ε to the first power and a w_t factor, not the "
              "table's n²ε². Thm 2 also needs ε < c₁T/n². Records passing the line-9 test are used "
              "raw, so the mechanism has no finite certified ε (heuristic)."),
    ),
]


def _eta_zeta(v: Mapping[str, float]) -> float:
    return v["D"] * v["G"]


_S003 = [
    BoundRow(
        id="003-objective", source=_src("003", "Table 1 row 1"), seed="003",
        method="Objective perturbation", reference="Chaudhuri et al. 2011; Kifer et al. 2012",
        perturbation="objective", pure=False, noise_type=EMPTY, noise_latex=EMPTY,
        risk_latex=r"O\left(\frac{\eta\zeta\sqrt{d\log(1/\delta)}}{\epsilon n}\right)",
        noise_fn=None,
        risk_fn=lambda v: _eta_zeta(v) * _SQRT(v["p"] * _LOG(1.0 / v["delta"])) / (v["epsilon"] * v["n"]),
        exactness="order only", mechanism="objective-gaussian",
        privacy_latex=r"(\epsilon, \delta)\text{-DP for model}",
        note=("Seed 003's table has no noise column. It attributes one row to both Chaudhuri et al. "
              "2011 and Kifer et al. 2012, but the (ε, δ) and √d form is Kifer's Gaussian variant "
              "(text: 'Table 1, line 1'); Chaudhuri's is (ε, 0). It scales as 1/n here but as 1/n² in "
              "seed 001's rows. η = D, ζ = G, d = parameter dimension → p. Requirement: λ-smooth."),
    ),
    BoundRow(
        id="003-gradient", source=_src("003", "Table 1 row 2"), seed="003",
        method="Gradient descent", reference="Bassily et al. 2014", perturbation="gradient",
        pure=False, noise_type=EMPTY, noise_latex=EMPTY,
        risk_latex=r"O\left(\frac{\eta\zeta\sqrt{d\log^2(n/\delta)}}{\epsilon n}\right)",
        noise_fn=None,
        risk_fn=lambda v: _eta_zeta(v) * _SQRT(v["p"] * _LOG(v["n"] / v["delta"]) ** 2) / (v["epsilon"] * v["n"]),
        exactness="order only", mechanism="gradient-bassily",
        privacy_latex=r"(\epsilon, \delta)\text{-DP for model}",
        note=("No noise column. This is Bassily's convex (not strongly convex) rate; seed 001 row 4 "
              "quotes the strongly convex one. η = D, ζ = G, d → p."),
    ),
    BoundRow(
        id="003-input", source=_src("003", "Table 1 row 3"), seed="003",
        method="Input perturbation (proposal)", reference="Fukuchi et al. 2017",
        perturbation="input", pure=False, noise_type=EMPTY, noise_latex=EMPTY,
        risk_latex=r"O\left(\frac{\eta\zeta\sqrt{d\log(1/\delta)}}{\epsilon\alpha n}\right)",
        noise_fn=None,
        risk_fn=lambda v: _eta_zeta(v) * _SQRT(v["p"] * _LOG(1.0 / v["delta"]))
        / (v["epsilon"] * v["fk_alpha"] * v["n"]),
        exactness="order only", mechanism="input-fukuchi",
        privacy_latex=(r"(\alpha \epsilon, \delta)\text{-DP for model},\ (\beta \sqrt{\epsilon}, \delta)"
                       r"\text{-DLP for data s.t. } O(\sqrt{\alpha n}) = \beta"),
        privacy_fn=lambda v: _SQRT(v["fk_alpha"] * v["n"]) * _SQRT(v["epsilon"]),
        privacy_quantity="local ε of the data, β√ε with β = √(αn) (order only)",
        note=("No noise column. α ∈ (0, 1] is Fukuchi's privacy-scaling factor (§3.5: ε ← αε), not "
              "the learning rate ('fk_alpha', default 1); β here is not the smoothness. The table "
              "states the local level with δ while Cor. 1 gives 2δ. Requirement: λ-smooth "
              "quadratic loss. η = D, ζ = G, d → p."),
    ),
    BoundRow(
        id="003-lemma2", source=_src("003", "Lemma 2"), seed="003",
        method="Input perturbation, explicit excess risk", reference="Fukuchi et al. 2017",
        perturbation="input", pure=False, noise_type="Gaussian",
        noise_latex=r"\mathcal{N}(0, \frac{\zeta^2(8\log(2/\delta')+4\epsilon)}{\epsilon^2}\mathbb{I})",
        risk_latex=(
            r"J(\boldsymbol{w}^{in}; D) - J(\hat{\boldsymbol{w}}; D) \leq \frac{4d\zeta^{2}(8\log"
            r"\frac{4}{\delta} + 4\epsilon)\log\frac{1}{\beta}}{n\epsilon^{2}\Delta} + \frac{\Delta}{2n}"
            r"\|\hat{\boldsymbol{w}}\|_{2}^{2} + \frac{\sigma_{u}^{2} - \frac{2\lambda}{\epsilon}}{2n}"
            r"\|\hat{\boldsymbol{w}}\|_{2}^{2} + \frac{\sigma_{u}^{2}\sqrt{\log\frac{4}{\gamma}} + "
            r"\sigma_{u}\lambda\sqrt{2d\log\frac{2}{\gamma}}}{n\sqrt{n}} \|\hat{\boldsymbol{w}}\|_{2}^{2}"
            r" + \frac{\sigma_{u}^{2}\sqrt{\log\frac{4}{\gamma}} + \sigma_{u}\lambda\sqrt{2d\log"
            r"\frac{2}{\gamma}}}{n\sqrt{n}} \|\hat{\boldsymbol{w}}\|_{2}^{2}"),
        noise_fn=lambda v: fukuchi_sigma_b2(G=v["G"], epsilon=v["epsilon"], delta=v["delta"]),
        risk_fn=lambda v: fukuchi_lemma2_risk(
            d=v["p"], G=v["G"], lam=v["beta"], n=v["n"], epsilon=v["epsilon"], delta=v["delta"],
            Delta=v["fk_Delta"], w_norm=v["w_hat"], gamma=v["fk_gamma"], beta=v["fk_beta"]),
        exactness="exact", mechanism="input-fukuchi",
        noise_quantity="variance σ_b² of the linear-term noise b (δ' = δ/2)",
        note=("Real constants; a high-probability bound (w.p. ≥ 1 − γ − β), not an expectation. As "
              "stated, the last term appears twice; the appendix (Eq. 22) has it once with an extra "
              "σ_u² log(4/γ)/√n inside. Evaluated as stated. σ_u is Cor. 2's smallest value; "
              "γ = δ/2 (Thm 1), β = γ (as in Thm 2's proof), Δ = 'fk_Delta' (default: Thm 2's "
              "choice √(ζ²d log(1/δ))/(ε‖ŵ‖)), must exceed 2λ/ε. λ is Fukuchi's smoothness → β; "
              "ζ = G; d → p; ‖ŵ‖ = w_hat. Alg. 2 prints Δ_in = Δ 2λ/ε (the minus sign is lost)."),
    ),
    BoundRow(
        id="003-cor1", source=_src("003", "Cor. 1 (σ_u from Cor. 2)"), seed="003",
        method="Input perturbation, local-DP level", reference="Fukuchi et al. 2017",
        perturbation="input", pure=False, noise_type="Gaussian",
        noise_latex=(r"\sigma_{u} \geq \frac{\sqrt{2d}\lambda\sqrt{\frac{\log(2/\gamma)}{n}} + "
                     r"\sqrt{2d\lambda^{2}\frac{\log(2/\gamma)}{n} + \frac{2\lambda}{\epsilon}\left(1 - "
                     r"2\sqrt{\frac{\log(4/\gamma)}{n}}\right)}}{1 - 2\sqrt{\frac{\log(4/\gamma)}{n}}}"),
        risk_latex=EMPTY,
        noise_fn=lambda v: fukuchi_sigma_u(d=v["p"], lam=v["beta"], n=v["n"], epsilon=v["epsilon"],
                                           gamma=v["fk_gamma"]),
        risk_fn=None,
        privacy_latex=r"(2c\sqrt{n}(\lambda/\sigma_u+\zeta/\sigma_b),2\delta)",
        privacy_fn=lambda v: fukuchi_local_epsilon(d=v["p"], G=v["G"], lam=v["beta"], n=v["n"],
                                                   epsilon=v["epsilon"], delta=v["delta"],
                                                   gamma=v["fk_gamma"]),
        privacy_quantity="local ε per contributor (with 2δ), c = √(2 ln(1.25/δ))",
        exactness="exact", mechanism="input-fukuchi",
        noise_quantity="σ_u, Cor. 2's smallest standard deviation (each contributor adds N(0, σ_u²/n I))",
        note=("Real constants. Cor. 1 requires c > √(2 ln(1.25/δ)); the infimum is used. It rests on the "
              "Gaussian mechanism for ε ∈ (0, 1) (appendix Thm 3), but the level it states grows as "
              "√n and is far above 1 for realistic n, outside that range. It names a domain size B "
              "that does not appear in the formula. Cor. 2's proof writes √(2dλ) where its "
              "statement has √(2d)λ; the statement is used. γ = δ/2."),
    ),
]

_S004 = [
    BoundRow(
        id="004-wddp-convex", source=_src("004", "Thm 1 (noise), Thm 2 (risk)"), seed="004",
        method="WD-DP, weights n_j/n, λ-strongly convex", reference="Kang et al. (seed 004)",
        perturbation="distributed", pure=False, noise_type="Gaussian",
        noise_latex=r"\sigma^{2}=c\frac{G^{2}T\ln(1/\delta)}{n^{2}\epsilon^{2}}",
        risk_latex=(r"\mathbb{E}\left[L_{D}(\theta_{T})\right]-L_{D}^{*}\leq O\left(\frac{pG^{2}"
                    r"\ln(1/\delta)\log(n)}{n^{2}\epsilon^{2}}\right)"),
        noise_fn=_noisy_gd_noise,
        risk_fn=_noisy_gd_risk,
        exactness="order only", mechanism="distributed-wddp", noise_quantity=_VAR,
        note=("c = 1. LaTeX transcribed from the PDF text of Eq. (3) and Thm 2; seed 004's Table 1 "
              "itself is not in the extracted text. Independent of m: the same as centralised DP-GD. "
              "Eq. (1) writes the objective as (1/m)Σ_j (1/n_j)Σ_i ℓ, whereas weights n_j/n minimise "
              "the pooled (1/n)Σ ℓ (Eq. 4)."),
    ),
    BoundRow(
        id="004-wddp-pl", source=_src("004", "Thm 1 (noise), Thm 3 (risk)"), seed="004",
        method="WD-DP, weights n_j/n, Polyak-Lojasiewicz", reference="Kang et al. (seed 004)",
        perturbation="distributed", pure=False, noise_type="Gaussian",
        noise_latex=r"\sigma^{2}=c\frac{G^{2}T\ln(1/\delta)}{n^{2}\epsilon^{2}}",
        risk_latex=(r"\mathbb{E}\left[L_{D}(\theta_{T})\right]-L_{D}^{*}\leq O\left(\frac{pG^{2}"
                    r"\ln(1/\delta)\log(n)}{n^{2}\epsilon^{2}}\right)"),
        noise_fn=_noisy_gd_noise,
        risk_fn=_noisy_gd_risk,
        exactness="order only", mechanism="distributed-wddp", noise_quantity=_VAR,
        note="c = 1. Same bound as Thm 2 under the PL condition instead of strong convexity.",
    ),
    BoundRow(
        id="004-jayaraman", source=_src("004", "Thm 1 discussion and Thm 3 discussion (vs Jayaraman et al.)"),
        seed="004", method="Distributed DP-GD, plain average 1/m", reference="Jayaraman et al. 2018",
        perturbation="distributed", pure=False, noise_type="Gaussian",
        noise_latex=r"\sigma^{2}=c\frac{G^{2}T\ln(1/\delta)}{(mn_{(1)})^{2}\epsilon^{2}}",
        risk_latex=r"O\left(\frac{pG^{2}\ln(1/\delta)\log^{2}(mn_{(1)})}{(mn_{(1)})^{2}\epsilon^{2}}\right)",
        noise_fn=lambda v: noisy_gd_variance(v["G"], v["T"], v["m"] * v["n_min"], v["epsilon"], v["delta"]),
        risk_fn=lambda v: noisy_gd_risk(v["p"], v["G"], v["m"] * v["n_min"], v["epsilon"], v["delta"], 2),
        exactness="order only", mechanism="distributed-avg", noise_quantity=_VAR,
        note=("Derived, not printed in the extracted text: the noise from 'tighter … by a factor of "
              "(mn_(1))²/n²' (after Thm 1), the risk from 'by a factor of (mn_(1))² log(n)/(log(mn_(1))n)²' "
              "(after Thms 2 and 3). n_(1) = smallest party; equals WD-DP when all parties have n/m "
              "records."),
    ),
    BoundRow(
        id="004-wang2017-central", source=_src("004", "Thm 2 Remark 1 (vs Wang et al. 2017)"), seed="004",
        method="Centralised noisy GD on the pooled data", reference="Wang et al. 2017",
        perturbation="gradient", pure=False, noise_type="Gaussian",
        noise_latex=r"\sigma^{2}=c\frac{G^{2}T\ln(1/\delta)}{n^{2}\epsilon^{2}}",
        risk_latex=r"O\left(\frac{pG^{2}\ln(1/\delta)\log^{2}(n)}{n^{2}\epsilon^{2}}\right)",
        noise_fn=_noisy_gd_noise,
        risk_fn=lambda v: noisy_gd_risk(v["p"], v["G"], v["n"], v["epsilon"], v["delta"], 2),
        exactness="order only", mechanism="gradient-dpgd", noise_quantity=_VAR,
        note=("Derived: the noise 'has the same form as in centralized setting' (after Thm 1); the risk "
              "is WD-DP's times log(n) (Remark 1: Wang et al.'s proof keeps Tpσ²/(2L) with "
              "T = Õ(log n)). Seed 001 row 7 quotes the same paper with log(n), not log²(n)."),
    ),
]

CATALOG: tuple[BoundRow, ...] = tuple(_S001 + _S002 + _S003 + _S004)

_ROWS_BY_ID = {r.id: r for r in CATALOG}
assert len(_ROWS_BY_ID) == len(CATALOG), "row ids must be unique"


def get_row(row_id: str) -> BoundRow:
    """The catalog row with this id; a :class:`ParameterError` naming the ids otherwise.

    References: SPEC §4.
    """
    try:
        return _ROWS_BY_ID[row_id]
    except KeyError:
        raise ParameterError(
            f"unknown bound row {row_id!r}; choose one of: {', '.join(_ROWS_BY_ID)}"
        ) from None


# --------------------------------------------------------------------------
# parameters


@dataclass(frozen=True)
class ParamValue:
    """One named parameter: its value and where it came from.

    ``source`` is ``"dataset"``, ``"model"``, ``"user"``, ``"default"``,
    ``"derived"`` (computed from other parameters, recomputed when they change)
    or ``"override"``.  ``value`` is ``None`` where the quantity is undefined
    (e.g. β of the MLP).
    """

    name: str
    value: float | int | None
    source: str
    symbol: str
    description: str


# name: (LaTeX symbol, description, kind) — kind "int" or "float"
PARAMETERS: dict[str, tuple[str, str, str]] = {
    "n": (r"n", "training records", "int"),
    "d": (r"d", "features per record (bias included)", "int"),
    "p": (r"p", "model parameters (seed 002: m, seed 003: d)", "int"),
    "G": (r"G", "Lipschitz constant of the per-record loss (papers: G, ζ)", "float"),
    "beta": (r"\beta", "smoothness of the per-record loss (papers: L; seed 003: λ)", "float"),
    "lam": (r"\lambda", "strong convexity from (λ/2)‖θ‖² (papers: Δ)", "float"),
    "D": (r"D", "bound on ‖θ‖ (papers: D, η)", "float"),
    "w_hat": (r"\|\hat{\theta}\|", "norm of the non-private minimiser (Kifer's θ̂, Fukuchi's ŵ)", "float"),
    "T": (r"T", "iterations", "int"),
    "epsilon": (r"\epsilon", "privacy budget ε", "float"),
    "delta": (r"\delta", "privacy parameter δ", "float"),
    "alpha": (r"\alpha", "learning rate (seed 001 Thm 2)", "float"),
    "q": (r"q", "sampling rate of mini-batch SGD", "float"),
    "m": (r"m", "parties (seed 004)", "int"),
    "u": (r"u", "client-size skew n_max/n_min (seed 004)", "float"),
    "n_min": (r"n_{(1)}", "records of the smallest party (seed 004)", "int"),
    "m_svrg": (r"m", "DP-SVRG inner-loop length (seed 001 row 6)", "int"),
    "fk_alpha": (r"\alpha", "Fukuchi's privacy-scaling factor α ∈ (0, 1] (seed 003 §3.5)", "float"),
    "fk_Delta": (r"\Delta", "Fukuchi's regulariser Δ (> 2λ/ε)", "float"),
    "fk_gamma": (r"\gamma", "Fukuchi's failure probability γ of Lemma 1 / Cor. 2", "float"),
    "fk_beta": (r"\beta", "Fukuchi's failure probability β of Lemma 2 (not the smoothness)", "float"),
}

_OWNER = "bounds"
_DEFAULT_BATCH = 256  # gradient-dpsgd's default batch size (q = 256/n)


def client_sizes(n: int, clients: int, skew: float = 1.0) -> list[int]:
    """Party sizes: the distributed mechanisms' two-group split (one source of truth).

    References: seed 004 §Experiments (two groups, level of non-average u); SPEC §3.7.
    """
    m = validate("clients", clients, "client_sizes")
    u = validate("skew", skew, "client_sizes")
    return _sizes(int(n), m, u)


def _static_defaults(model, lam_value: float) -> dict[str, tuple[Any, str, str]]:
    """D from the model: its radius, or for logreg the bound √(2 ln 2/λ) on ‖θ*‖."""
    out: dict[str, tuple[Any, str, str]] = {}
    if model.radius is not None:
        out["D"] = (float(model.radius), "model", "radius of the model's parameter ball")
    elif model.id == "logreg" and lam_value > 0:
        out["D"] = (math.sqrt(2.0 * math.log(2.0) / lam_value), "derived",
                    "√(2 ln 2/λ): L(θ*) ≤ L(0) = ln 2 bounds ‖θ*‖; it does not bound noisy iterates")
    else:
        out["D"] = (None, "model", "undefined: no parameter-domain bound for this model")
    return out


def _derive(vals: dict[str, Any], fixed: set[str]) -> dict[str, tuple[Any, str]]:
    """Derived parameters (value, description) at the current n, ε, δ; skips ``fixed`` names."""
    out: dict[str, tuple[Any, str]] = {}
    n = vals["n"]
    if "w_hat" not in fixed:
        out["w_hat"] = (vals.get("D"), "taken as D (an upper bound on ‖θ̂‖); override or use exact_norm")
    if "q" not in fixed:
        out["q"] = (min(1.0, _DEFAULT_BATCH / n), f"min(1, {_DEFAULT_BATCH}/n): DP-SGD's default batch")
    if "n_min" not in fixed:
        sizes = client_sizes(int(round(n)), vals["m"], vals["u"])
        out["n_min"] = (min(sizes), f"smallest of the client sizes {_short(sizes)} (two groups, skew u)")
    beta, lam = vals.get("beta"), vals.get("lam")
    if "m_svrg" not in fixed:
        ok = beta is not None and lam is not None and lam > 0 and math.isfinite(beta)
        out["m_svrg"] = ((max(1, math.ceil(beta / lam)) if ok else None),
                         "⌈β/λ⌉ (SVRG's usual m = Θ(L/μ); seed 001 leaves it undefined)")
    if "fk_gamma" not in fixed:
        out["fk_gamma"] = (vals["delta"] / 2.0, "δ/2 (Fukuchi's Thm 1)")
    gamma = out.get("fk_gamma", (vals.get("fk_gamma"),))[0]
    if "fk_beta" not in fixed:
        out["fk_beta"] = (gamma, "= γ (Fukuchi's proof of Thm 2 sets β = γ)")
    if "fk_Delta" not in fixed:
        w = out.get("w_hat", (vals.get("w_hat"),))[0]
        if w:
            val = math.sqrt(vals["G"] ** 2 * vals["p"] * math.log(1.0 / vals["delta"])) / (vals["epsilon"] * w)
        else:
            val = None
        out["fk_Delta"] = (val, "√(ζ² d log(1/δ))/(ε‖ŵ‖): Fukuchi's Thm 2 choice with Θ-constant 1")
    return out


def _short(sizes: list[int]) -> str:
    uniq = sorted(set(sizes))
    return "{" + ", ".join(f"{s}×{sizes.count(s)}" for s in uniq) + "}"


def _check_override(name: str, value: Any) -> Any:
    if name not in PARAMETERS:
        raise ParameterError(
            f"cannot override unknown parameter {name!r}; choose one of: {', '.join(PARAMETERS)}"
        )
    kind = PARAMETERS[name][2]
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(float(value))
    if ok and kind == "int":
        ok = float(value).is_integer() and value >= 1
    if ok:
        ok = value > 0
    ranges = {"delta": (None, 1.0, "a float in (0, 1)"), "fk_gamma": (None, 1.0, "a float in (0, 1)"),
              "fk_beta": (None, 1.0, "a float in (0, 1)"), "q": (None, 1.0 + 1e-12, "a float in (0, 1]"),
              "fk_alpha": (None, 1.0 + 1e-12, "a float in (0, 1]"), "u": (1.0, None, "a float ≥ 1"),
              "n": (2, None, "an integer ≥ 2")}
    low, high, what = ranges.get(name, (None, None, "a positive integer" if kind == "int"
                                         else "a finite number > 0"))
    if ok and high is not None:
        ok = value < high
    if ok and low is not None:
        ok = value >= low
    if not ok:
        raise ParameterError(
            f"The override {name!r} of bounds must be {what}. Got {value!r} instead."
        )
    return int(value) if kind == "int" else float(value)


def _dataset_shape(dataset_id: str) -> tuple[int, int, str]:
    spec = _datasets.get_spec(dataset_id)
    if spec.n_train is not None and spec.d is not None:
        return int(spec.n_train), int(spec.d), spec.task
    ds = _datasets.load(dataset_id)
    return ds.n, ds.d, ds.task


def infer_parameters(
    dataset_id: str,
    model_id: str,
    epsilon: float,
    delta: float,
    iterations: int,
    clients: int | None = None,
    skew: float | None = None,
    lam: float | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    learning_rate: float | None = None,
    exact_norm: bool = False,
) -> dict[str, ParamValue]:
    """Every parameter the bounds use, each with its value and where it came from.

    n and d come from the dataset's documented shape (default split, bias
    on); p, G, β, λ, D from the model; ε, δ, T, m, u, λ, α from the user or
    defaults; q, n_(1), m_svrg, ‖θ̂‖ and Fukuchi's γ, β, Δ are derived.
    ``overrides`` replaces any of them (source ``"override"``); derived values
    are recomputed from the overridden ones.  ``exact_norm=True`` solves the
    non-private ERM once to set ‖θ̂‖ (slower on large datasets).

    Raises a :class:`~dpcore.exceptions.DPCoreError` subclass on bad input.

    References: SPEC §1 (constants), §3.7 (client sizes), §4.
    """
    epsilon = validate("epsilon", epsilon, _OWNER)
    delta = validate("delta", delta, _OWNER)
    iterations = validate("iterations", iterations, _OWNER)
    if clients is not None:
        clients = validate("clients", clients, _OWNER)
    if skew is not None:
        skew = validate("skew", skew, _OWNER)
    if lam is not None:
        lam = validate("lam", lam, _OWNER)
    if learning_rate is not None:
        learning_rate = validate("learning_rate", learning_rate, _OWNER)
    overrides = dict(overrides or {})
    checked = {k: _check_override(k, v) for k, v in overrides.items()}
    n, d, task = _dataset_shape(dataset_id)
    return _infer(dataset_id, n, d, task, model_id, epsilon, delta, iterations, clients, skew, lam,
                  learning_rate, checked, exact_norm)


def _infer(dataset_id, n, d, task, model_id, epsilon, delta, iterations, clients, skew, lam,
           learning_rate, overrides, exact_norm, n_source="dataset") -> dict[str, ParamValue]:
    model = make_model(model_id, lam=lam)
    if model.task != task:
        raise ModelError(
            f"model {model.id!r} is for {model.task} but dataset {dataset_id!r} is a {task} task; "
            f"pick a {task} model" + (" (linreg)" if task == "regression" else " (logreg or mlp)")
        )
    rec: dict[str, tuple[Any, str, str]] = {}
    rec["n"] = (n, n_source, "training rows of the dataset (default split)")
    rec["d"] = (d, "dataset", "features incl. the bias")
    G = model.lipschitz
    if math.isfinite(G):
        rec["G"] = (G, "model", f"Lipschitz bound of the {model.id} loss on ‖x‖ ≤ 1")
    else:
        rec["G"] = (1.0, "default", "no Lipschitz bound: the clipping norm C = 1 plays G")
    beta = model.smoothness
    rec["beta"] = ((beta, "model", f"smoothness of the {model.id} loss on ‖x‖ ≤ 1") if math.isfinite(beta)
                   else (None, "model", "undefined: no smoothness bound for this model"))
    lam_value = float(model.strong_convexity)
    rec["lam"] = (lam_value, "user" if lam is not None else "model",
                  "L2 regularisation λ (0 for a non-convex model)")
    rec["T"] = (iterations, "user", "iterations")
    rec["epsilon"] = (epsilon, "user", "privacy budget")
    rec["delta"] = (delta, "user", "privacy parameter")
    rec["alpha"] = ((learning_rate, "user", "learning rate") if learning_rate is not None
                    else (PARAMS["learning_rate"].default, "default", "learning rate (RunSpec default)"))
    rec["m"] = ((clients, "user", "parties") if clients is not None
                else (PARAMS["clients"].default, "default", "parties (default)"))
    rec["u"] = ((skew, "user", "client-size skew") if skew is not None
                else (PARAMS["skew"].default, "default", "client-size skew (default: even)"))
    rec["fk_alpha"] = (1.0, "default", "Fukuchi's privacy-scaling factor (1: no scaling)")
    # overrides of base values first, so that everything derived follows them
    for k, v in overrides.items():
        if k in rec:
            rec[k] = (v, "override", rec[k][2])
    rec["p"] = (model.n_params(int(rec["d"][0])), "model", f"parameters of {model.id} with d features")
    rec.update(_static_defaults(model, rec["lam"][0]))
    if exact_norm:
        erm_model = make_model(model_id, lam=rec["lam"][0]) if "lam" in overrides else model
        rec["w_hat"] = (_exact_norm(dataset_id, erm_model), "dataset", "‖θ*‖ of the exact non-private ERM")
    for k, v in overrides.items():
        if k in ("p", "D", "w_hat"):
            rec[k] = (v, "override", PARAMETERS[k][1])
    vals = {k: v[0] for k, v in rec.items()}
    vals.update(overrides)
    for k, (value, desc) in _derive(vals, set(rec) | set(overrides)).items():
        rec[k] = (value, "derived", desc)
    for k, v in overrides.items():
        if rec.get(k, (None, ""))[1] != "override":
            rec[k] = (v, "override", PARAMETERS[k][1])
    return {k: ParamValue(k, rec[k][0], rec[k][1], PARAMETERS[k][0], rec[k][2])
            for k in PARAMETERS if k in rec}


def _exact_norm(dataset_id: str, model) -> float:
    ds = _datasets.load(dataset_id)
    sol = solve_erm(model, ds.X_train, ds.y_train)
    return float(np.linalg.norm(sol.theta))


def _values(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (v.value if isinstance(v, ParamValue) else v) for k, v in params.items()}


def _at(params: Mapping[str, Any], over: str, x: float) -> dict[str, Any]:
    """Plain values with ``over`` set to ``x`` and the derived parameters recomputed."""
    vals = _values(params)
    vals[over] = x
    derived = {k for k, v in params.items() if isinstance(v, ParamValue) and v.source == "derived"}
    if derived:
        fixed = set(vals) - derived
        for k, (value, _) in _derive(vals, fixed).items():
            vals[k] = value
    return vals


# --------------------------------------------------------------------------
# evaluation


def _call(fn, vals: _Values) -> tuple[float | None, str | None]:
    if fn is None:
        return None, None
    try:
        out = float(fn(vals))
    except _Undefined as exc:
        name = exc.args[0]
        what = PARAMETERS[name][1] if name in PARAMETERS else name
        return None, f"needs {name} ({what}), undefined here: give it with overrides={{'{name}': …}}"
    except ZeroDivisionError:
        return None, "division by zero: the bound is infinite here (λ = 0 or n = 1?)"
    except OverflowError:
        return None, "overflow: the bound is astronomically large here"
    except ValueError as exc:
        return None, f"outside the formula's domain ({exc})"
    if not math.isfinite(out):
        return None, "the bound is not finite here"
    return out, None


def evaluate(params: Mapping[str, Any], rows: Iterable[BoundRow] = CATALOG) -> list[dict[str, Any]]:
    """Each row's noise, excess-risk and (where stated) privacy value at ``params``.

    ``params`` maps names of :data:`PARAMETERS` to :class:`ParamValue` or plain
    numbers.  A value is ``None`` where the paper gives nothing or the formula
    does not apply; ``issues`` then says why.

    References: SPEC §4.
    """
    vals = _Values(_values(params))
    out = []
    for row in rows:
        rec: dict[str, Any] = {"id": row.id}
        issues = []
        for part, fn in (("noise", row.noise_fn), ("risk", row.risk_fn), ("privacy", row.privacy_fn)):
            value, issue = _call(fn, vals)
            rec[part] = value
            if issue:
                issues.append(f"{part}: {issue}")
        rec["issues"] = issues
        out.append(rec)
    return out


def loglog_slope(x: Sequence[float], y: Sequence[float | None]) -> float | None:
    """Least-squares slope of log y against log x; ``None`` unless ≥ 2 points are positive and finite.

    References: SPEC §4 ("log-log slope vs n and vs ε").
    """
    pts = [(a, b) for a, b in zip(x, y) if b is not None and math.isfinite(b) and b > 0 and a > 0]
    if len(pts) < 2 or len({a for a, _ in pts}) < 2:
        return None
    lx = np.log([a for a, _ in pts])
    ly = np.log([b for _, b in pts])
    return float(np.polyfit(lx, ly, 1)[0])


def _grid(params: Mapping[str, Any], over: str, grid: Sequence[float] | None) -> list[float]:
    if over not in ("n", "epsilon"):
        raise ParameterError(f"scaling is over 'n' or 'epsilon', got {over!r}")
    if grid is None:
        x0 = _values(params)[over]
        grid = [x0 * 2.0**k for k in range(-3, 4)]
    grid = list(grid)
    if len(grid) < 2 or not all(isinstance(g, numbers.Real) and math.isfinite(g) and g > 0 for g in grid):
        raise ParameterError(f"a scaling grid needs at least 2 finite values > 0; got {grid!r}")
    if over == "n":
        if any(g < 2 for g in grid):
            raise ParameterError(f"every n in the grid must be ≥ 2; got {grid!r}")
        grid = [int(g) if float(g).is_integer() else float(g) for g in grid]
    return grid


def scaling(rows: Iterable[BoundRow], params: Mapping[str, Any], over: str = "n",
            grid: Sequence[float] | None = None) -> dict[str, Any]:
    """Values over a grid of n or ε and their numerical log-log slopes.

    Derived parameters (n_(1), q, Fukuchi's γ, β, Δ, …) are recomputed at each
    grid point; overridden ones stay fixed.  The default grid is the current
    value times 2^k, k = −3…3.

    References: SPEC §4 ("how each scales").
    """
    rows = list(rows)
    grid = _grid(params, over, grid)
    series: dict[str, dict[str, list]] = {r.id: {"noise": [], "risk": [], "privacy": [], "issues": []}
                                          for r in rows}
    for x in grid:
        for rec in evaluate(_at(params, over, x), rows):
            s = series[rec["id"]]
            for part in ("noise", "risk", "privacy"):
                s[part].append(rec[part])
            for issue in rec["issues"]:
                if issue not in s["issues"]:
                    s["issues"].append(issue)
    out_rows = []
    for r in rows:
        s = series[r.id]
        out_rows.append({
            "id": r.id,
            "noise": s["noise"], "risk": s["risk"], "privacy": s["privacy"],
            "noise_slope": loglog_slope(grid, s["noise"]),
            "risk_slope": loglog_slope(grid, s["risk"]),
            "privacy_slope": loglog_slope(grid, s["privacy"]),
            "issues": s["issues"],
        })
    return {"over": over, "grid": grid, "rows": out_rows}


def scaling_report(dataset: str, model: str, epsilon: float, delta: float, iterations: int,
                   clients: int | None = None, skew: float | None = None, *, over: str = "n",
                   rows: Iterable[BoundRow] = CATALOG) -> dict[str, Any]:
    """:func:`scaling` of ``rows`` over ``n`` or ``epsilon`` around the setting's inferred
    parameters (the Theory view's curves)."""
    params = infer_parameters(dataset, model, epsilon, delta, iterations, clients, skew)
    return scaling(rows, params, over)


# --------------------------------------------------------------------------
# what the measured-vs-predicted comparison reads (it runs in dpcore.experiments.studies)


def scaling_plan(dataset_id: str, model_id: str, epsilon: float, delta: float, iterations: int, *,
                 over: str = "n", grid: Sequence[float] | None = None, lam: float | None = None,
                 learning_rate: float | None = None, clients: int | None = None,
                 skew: float | None = None) -> dict[str, Any]:
    """Where a scaling check runs and the parameters its predictions are evaluated at.

    Over n the runs use the synthetic dataset of the model's task with the
    chosen dataset's feature count (bundled files cannot be resized); over ε
    they use the chosen dataset.  Default grid: n = 500, 1000, 2000, 4000 or
    ε × (1/4, 1/2, 1, 2).  Returns ``over``, ``grid``, ``run_dataset``,
    ``d_raw`` (raw features of the synthetic data, over n), ``dataset_note`` and
    ``params`` (for :func:`predictions`).
    """
    epsilon = validate("epsilon", epsilon, _OWNER)
    delta = validate("delta", delta, _OWNER)
    iterations = validate("iterations", iterations, _OWNER)
    n0, d0, task = _dataset_shape(dataset_id)
    spec = _datasets.get_spec(dataset_id)
    if over == "n":
        run_dataset = f"synthetic-{task}"
        d_raw = int(d0) - 1 if not spec.synthetic else PARAMS["d"].default
        d_raw = max(1, d_raw)
        dataset_note = (f"n-scaling runs on {run_dataset} with d = {d_raw} raw features (+ bias), the "
                        f"feature count of {dataset_id}; bundled datasets cannot be resized.")
        grid = _grid({"n": n0}, "n", grid if grid is not None else (500, 1000, 2000, 4000))
        params = _infer(run_dataset, grid[0], d_raw + 1, task, model_id, epsilon, delta, iterations,
                        clients, skew, lam, learning_rate, {}, False, n_source="user")
    elif over == "epsilon":
        run_dataset, d_raw = dataset_id, None
        dataset_note = f"ε-scaling runs on {dataset_id} itself."
        grid = _grid({"epsilon": epsilon}, "epsilon",
                     grid if grid is not None else [epsilon * f for f in (0.25, 0.5, 1.0, 2.0)])
        params = _infer(dataset_id, n0, d0, task, model_id, epsilon, delta, iterations, clients, skew,
                        lam, learning_rate, {}, False)
    else:
        raise ParameterError(f"compare_measured scales over 'n' or 'epsilon', got {over!r}")
    return {"over": over, "grid": grid, "run_dataset": run_dataset, "d_raw": d_raw,
            "dataset_note": dataset_note, "params": params}


def predictions(plan: Mapping[str, Any], mechanism: str,
                rows: Iterable[BoundRow] = CATALOG) -> list[dict[str, Any]]:
    """Each catalog row implemented by ``mechanism``: its predicted excess risk at every
    grid point of a :func:`scaling_plan` and the log-log slope of those predictions."""
    over, grid, params = plan["over"], plan["grid"], plan["params"]
    out = []
    for r in rows:
        if r.mechanism != mechanism:
            continue
        risks = [evaluate(_at(params, over, x), [r])[0]["risk"] for x in grid]
        out.append({"id": r.id, "predicted_risk": risks, "predicted_slope": loglog_slope(grid, risks)})
    return out


# --------------------------------------------------------------------------
# the report


def bounds_report(
    dataset: str,
    model: str,
    epsilon: float,
    delta: float,
    iterations: int,
    clients: int | None = None,
    skew: float | None = None,
    lam: float | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    learning_rate: float | None = None,
    exact_norm: bool = False,
) -> dict[str, Any]:
    """The bounds view as one strict-JSON-able document (``dpcore bounds --json``).

    Rows carry their metadata (LaTeX as published, exactness, notes), values at
    the inferred parameters, and log-log slopes in n and ε over the current
    value ×(1/2, 1, 2); ``parameters`` carries every value with its provenance.

    References: SPEC §4, §7.
    """
    params = infer_parameters(dataset, model, epsilon, delta, iterations, clients, skew, lam,
                              overrides, learning_rate=learning_rate, exact_norm=exact_norm)
    values = {r["id"]: r for r in evaluate(params)}
    slopes: dict[str, dict[str, dict[str, float | None]]] = {r.id: {} for r in CATALOG}
    for over in ("n", "epsilon"):
        x0 = params[over].value
        sc = scaling(CATALOG, params, over, [x0 / 2.0, x0, x0 * 2.0])
        for rec in sc["rows"]:
            slopes[rec["id"]][over] = {"noise": rec["noise_slope"], "risk": rec["risk_slope"],
                                       "privacy": rec["privacy_slope"]}
    rows = []
    for r in CATALOG:
        rec = r.metadata()
        rec["mechanism_registered"] = r.mechanism in REGISTRY if r.mechanism else False
        v = values[r.id]
        rec.update(noise=v["noise"], risk=v["risk"], privacy=v["privacy"], issues=v["issues"],
                   slopes=slopes[r.id])
        rows.append(rec)
    counts: dict[str, int] = {}
    for r in CATALOG:
        counts[r.seed] = counts.get(r.seed, 0) + 1
    doc = {
        "dataset": dataset,
        "model": model,
        "settings": {"epsilon": params["epsilon"].value, "delta": params["delta"].value,
                     "iterations": params["T"].value, "clients": params["m"].value,
                     "skew": params["u"].value, "lam": params["lam"].value},
        "parameters": {k: {"value": p.value, "source": p.source, "symbol": p.symbol,
                           "description": p.description} for k, p in params.items()},
        "rows": rows,
        "counts": counts,
        "notes": list(GLOBAL_NOTES),
    }
    return to_jsonable(doc)
