import streamlit as st

st.title("Differentially private ERM, explained by running it")
st.markdown(
    """
Empirical risk minimisation (ERM) fits a model by minimising its average loss on
the training data. **Differential privacy** (DP) limits how much the released
model can reveal about any one training record: replacing one record changes the
probability of any output by at most a factor $e^\\varepsilon$ (plus a small
$\\delta$).

There are four places to add the noise that buys this guarantee:

* **output** – train exactly, then perturb the model;
* **objective** – add a random linear term to the loss, then minimise;
* **gradient** – add noise to every gradient step;
* **input** – perturb the data themselves, then train normally.

Input perturbation also protects each record from the server that collects it
(**local** privacy), which the other three do not.

Every result in this app shows three ε's: the **target** you asked for, the
**certified** ε that the noise that actually ran provably gives, and (on the audit
view) an **audited** lower bound measured by attacking the model.

Start with **Datasets** to see the bundled data. More views arrive as the core grows.
"""
)
