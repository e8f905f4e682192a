import streamlit as st

st.title("Differentially private ERM, explained by running it")
st.markdown(
    """
Empirical risk minimisation (ERM) fits a model by minimising its average loss on the
training data. **Differential privacy** (DP) limits how much the released model can
reveal about any one training record: replacing one record changes the probability of
any output by at most a factor $e^\\varepsilon$, up to a small slack $\\delta$.

**Four places to add the noise** that buys this guarantee:

| where | what happens | example |
|---|---|---|
| output | train exactly, then perturb the model | Chaudhuri et al. 2011 |
| objective | add a random linear term to the loss, then minimise | Kifer et al. 2012 |
| gradient | add noise to every gradient step | DP-GD, DP-SGD |
| input | perturb the data themselves, then train normally | Kang et al.; Fukuchi et al. |

**Local vs central.** A central guarantee protects a record from whoever sees the *model*.
A local guarantee protects it from the *server* that collects the data. Only input
perturbation and local DP give the second one.

**Three ε's on every result.**
* **ε target**: what you asked for.
* **ε certified**: what the noise that actually ran provably gives, whatever formula chose
  the noise. Every mechanism declares what it released and with which noise; one function
  turns that into ε the same way for all of them: exact Gaussian composition, Google's
  `dp-accounting` (privacy-loss distributions) for sampled Gaussians and randomized response,
  and the published theorem where a proof is all there is (objective perturbation). It is ∞
  when no valid proof applies, and the reason is shown.
* **ε audited**: an empirical lower bound from attacking the model (the Audit view). It can
  show that privacy is *worse* than claimed; it can never prove a claim.

They differ for instructive reasons. A paper's formula "with some constant c" can
under-deliver when c = 1. A proof can rest on an assumption the data break. An attack can
only show that privacy is *at least this bad*.
"""
)
st.subheader("A one-minute tour")
for page, text in [
    ("pages/lesson.py", "**Lesson**: the ideas in six steps, one chart each (turn on presenter mode for a class)."),
    ("pages/explore.py", "**Explore**: one mechanism, one setting; see accuracy, gap and the three ε's."),
    ("pages/compare.py", "**Compare**: several mechanisms over a grid of ε, with the seed papers' presets."),
    ("pages/local_central.py", "**Local vs central**: what each mechanism gives the record's owner."),
    ("pages/distributed.py", "**Distributed**: uneven clients, WD-DP against plain averaging."),
    ("pages/theory.py", "**Theory**: every published bound, evaluated for your settings, beside the measured gap."),
    ("pages/audit.py", "**Audit**: attack a mechanism and compare the audited ε with the certified one."),
    ("pages/datasets.py", "**Datasets**: the bundled data and how they were prepared."),
    ("pages/glossary.py", "**Glossary**: ε, δ, sensitivity, certified, audited, local, replace-one, …"),
]:
    st.page_link(page, label=text)
