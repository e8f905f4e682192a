"""The glossary: the words every view uses (the Glossary view lists them) and each parameter's
tooltip, which links to its entry."""

from __future__ import annotations

from dpcore.figures.result import reference_terms
from dpcore.params import PARAMS


#: The glossary view's terms, in teaching order: anchor → (term, explanation in Markdown).
GLOSSARY = {
    "epsilon": ("ε (epsilon), the privacy budget",
                "Replacing one record changes the probability of any output by at most a factor "
                "$e^\\varepsilon$ (up to δ). Smaller ε: more noise, stronger privacy. ε = 1 means the "
                "odds of any conclusion about one person move by at most $e \\approx 2.7$×."),
    "delta": ("δ (delta), the slack",
              "An additive slack in the bound: for every set S of outputs, "
              "P[M(D) ∈ S] ≤ $e^\\varepsilon$ P[M(D') ∈ S] + δ. It is often read as the chance that the "
              "$e^\\varepsilon$ bound fails; that reading is a stronger guarantee (probabilistic DP), which "
              "implies (ε, δ) but not the other way round. Keep it well below 1/n: "
              "with δ ≥ 1/n a mechanism could publish a whole record and still meet (ε, δ)."),
    "replace-one": ("Neighbouring datasets (replace-one)",
                    "Two datasets that differ in one record, replaced by another. Every guarantee here is "
                    "stated for this relation; a proof for adding or removing a record can give half the "
                    "sensitivity and must be converted."),
    "sensitivity": ("Sensitivity",
                    "How far replacing one record can move what is released (a gradient, a minimiser), in "
                    "L2 norm. The noise is scaled to it: twice the sensitivity needs twice the noise."),
    "calibration": ("Calibration: published or certified",
                    "*Published*: the paper's noise formula with its constant c. *Certified*: the smallest "
                    "noise whose certified ε meets the target. A published formula can under-deliver; the "
                    "app then shows its certified ε in red."),
    "target": ("ε target", "What you asked for."),
    "certified": ("ε certified",
                  "What the noise that actually ran provably gives, from one accountant for every mechanism "
                  "(∞ when no valid proof applies)."),
    "local": ("ε local: local vs central privacy",
              "A central guarantee protects a record from whoever sees the model; a local one protects it "
              "from the server that collects the data. Central mechanisms have local ε = ∞."),
    "audited": ("ε audited",
                "A lower bound from attacking the model with a planted record (a canary): privacy is at "
                "least this bad, with 95 % confidence. An audit can refute a claim, never prove one."),
    "gap": ("Optimality gap",
            "L(θ) − L*: how much worse the private model's training objective is than the exact "
            "non-private optimum. It is the excess empirical risk the bounds predict. A non-convex model's "
            f"(the MLP's) has no certified optimum: its gap is {reference_terms('mlp').gap}, to "
            f"{reference_terms('mlp').minimiser}."),
    "clipping": ("Clipping",
                 "Scaling each record's gradient down to norm at most C, so that one record's influence "
                 "(the sensitivity) is bounded whatever the data."),
    "regularisation": ("λ, L2 regularisation",
                       "The objective adds (λ/2)‖θ‖². It makes the minimiser stable (strongly convex), which "
                       "output and objective perturbation need: smaller λ, larger sensitivity."),
    "skew": ("Clients and skew u",
             "In distributed learning m parties each hold part of the data; u = n_max/n_min says how "
             "uneven their sizes are. WD-DP weights each party by its share n_j/n."),
}

#: the glossary entry each parameter's tooltip links to
PARAM_TERMS = {"epsilon": "epsilon", "delta": "delta", "calibration": "calibration", "c": "calibration",
               "clip_norm": "clipping", "lam": "regularisation", "clients": "skew", "skew": "skew"}


def glossary_link(anchor: str) -> str:
    """A Markdown link to one glossary entry (for ``help=`` tooltips)."""
    return f"[Glossary: {GLOSSARY[anchor][0]}](/glossary#{anchor})"


def param_help(name: str) -> str:
    """A parameter's tooltip: its declared help and, where there is one, its glossary entry."""
    term = PARAM_TERMS.get(name)
    return PARAMS[name].help + (f" — {glossary_link(term)}" if term else "")
