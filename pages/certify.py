"""Certify a run: a DP-SGD run (or k Gaussian / Laplace releases) as another library describes it,
certified under add/remove and replace-one side by side (:func:`dpcore.certify_noise`)."""

from pages.boot import load_core

load_core()  # before the core: a new server can run a view before app.py (pages/boot.py)

import math
from urllib.parse import urlencode

import streamlit as st

from dpcore import certify_noise
from dpcore.certify.core import CERTIFY_PARAMS as CP  # the declarations
from dpcore.certify.params import format_noise
from dpcore.exceptions import DPCoreError
from dpcore.figures.charts import privacy_profile_figure
from dpcore.export.views import certify_arguments
from pages.common import choice, declared_number, download_code, enter_view, fmt_eps, show_chart
from pages.links import restore_from_url, write_to_url


enter_view("certify")
st.title("Certify a run")
URL_KEYS = {"cert_mechanism": "dp-sgd", "cert_accountant": "opacus-rdp", "cert_sampling": "poisson",
            "cert_z": 1.1, "cert_rate": "sample rate", "cert_q": 0.004, "cert_batch": 256, "cert_n": 60_000,
            "cert_length": "epochs", "cert_steps": 1000, "cert_epochs": 60.0, "cert_sigma": 2.0, "cert_sens": 1.0,
            "cert_k": 10, "cert_delta": 1e-5, "cert_ask": False, "cert_target": 1.0}
restore_from_url(URL_KEYS)
for key, value in URL_KEYS.items():
    st.session_state.setdefault(key, value)
st.markdown(
    "A run described in another library's terms (Opacus, TF Privacy, JAX Privacy, dp-accounting), "
    "certified two ways: under **add/remove** one record, the relation those libraries use, and under "
    "**replace-one**, this app's relation (every other view's ε). Replacing a record is removing one and "
    "adding another, so its ε is larger. Both come from the tight privacy-loss distribution; the Rényi-DP "
    "figure is what Opacus' and TF Privacy's RDP accountants report."
)


def _bounded(name: str, key: str, label: str, container, fmt: str | None = None):
    return declared_number(CP[name], key, label, URL_KEYS[key], container=container, format=fmt)


c1, c2, c3 = st.columns(3)
#: the mechanisms and accountants as a reader names them (the link keeps the ids)
MECHANISM_NAMES = {"dp-sgd": "DP-SGD (sampled Gaussian steps)", "gaussian": "Gaussian mechanism",
                   "laplace": "Laplace mechanism"}
ACCOUNTANT_NAMES = {"opacus-rdp": "Opacus, RDP", "opacus-prv": "Opacus, PRV", "opacus-gdp": "Opacus, GDP",
                    "tf-privacy-rdp": "TF Privacy, RDP", "jax-privacy": "JAX Privacy",
                    "dp-accounting-pld": "dp-accounting, PLD"}
mechanism = choice("selectbox", "mechanism", CP["mechanism"].constraint.values, key="cert_mechanism",
                   container=c1, help=CP["mechanism"].help, format_func=lambda m: MECHANISM_NAMES.get(m, m))
delta = _bounded("delta", "cert_delta", "δ", c2, "%.1e")
if mechanism == "dp-sgd":
    accountant = choice("selectbox", "accounted with", CP["accountant"].constraint.values, key="cert_accountant",
                        container=c3, help=CP["accountant"].help, format_func=lambda a: ACCOUNTANT_NAMES.get(a, a))
    d1, d2, d3, d4 = st.columns(4)
    z = _bounded("noise_multiplier", "cert_z", "noise multiplier z", d1)
    sampling = choice("radio", "batches", CP["sampling"].constraint.values, key="cert_sampling", container=d1,
                      horizontal=True, help=CP["sampling"].help)
    rate = choice("radio", "rate from", ("sample rate", "batch and dataset size"), key="cert_rate", container=d2)
    if rate == "sample rate":  # each control under its key: certify_arguments reads them there
        _bounded("sample_rate", "cert_q", "sample rate q", d3, "%.3g")
    else:
        _bounded("batch_size", "cert_batch", "batch size", d3)
        _bounded("dataset_size", "cert_n", "dataset size n", d3)
    length = choice("radio", "length in", ("epochs", "steps"), key="cert_length", container=d4, horizontal=True)
    if length == "steps":
        _bounded("steps", "cert_steps", "steps T", d4)
    else:
        _bounded("epochs", "cert_epochs", "epochs", d4, "%g")
else:
    d1, d2, d3 = st.columns(3)
    _bounded("sigma", "cert_sigma", "σ" if mechanism == "gaussian" else "scale b", d1, "%g")
    _bounded("sensitivity", "cert_sens", "sensitivity Δ (add/remove)", d2, "%g")
    _bounded("compositions", "cert_k", "releases k", d3)
e1, e2 = st.columns([1, 3])
ask = e1.checkbox("find the noise for a target ε", key="cert_ask")
target = _bounded("target_epsilon", "cert_target", "target ε", e2, "%g") if ask else None

write_to_url(list(URL_KEYS))

try:
    with st.spinner("certifying…"):
        # the controls' values (each widget's, under its key) as its export passes them
        cert = certify_noise(**certify_arguments(**{k[len("cert_"):]: st.session_state[k] for k in URL_KEYS}),
                             full_curve=True)
except DPCoreError as exc:
    st.error(str(exc))
    st.stop()

m1, m2, m3, m4 = st.columns(4)
m1.metric("ε add/remove", fmt_eps(cert.add_remove))
m2.metric("ε replace-one", fmt_eps(cert.replace_one))
m3.metric("ε by Rényi DP (add/remove)", "no figure" if cert.rdp is None else fmt_eps(cert.rdp))
if cert.library:
    m4.metric(f"as {cert.accountant} reports",  # None: the route's ε is below 0 or NaN here (a note says why)
              "no figure" if cert.library_epsilon is None else fmt_eps(cert.library_epsilon))
    st.caption(f"{cert.accountant}: {cert.library}.")
if mechanism == "dp-sgd":
    d = cert.description
    st.caption(f"q = {d['sample_rate']:.4g}, T = {d['steps']} steps ({d['epochs']:.4g} epochs), δ = {delta:g}.")
for note in cert.notes:
    st.info(note)

if cert.inverse:
    inv = cert.inverse
    st.markdown(f"**For ε = {inv['target_epsilon']:g} at δ = {delta:g}:** {inv['what']} "
                f"{format_noise(inv['add-remove'])} under add/remove, {format_noise(inv['replace-one'])} under "
                "replace-one (rounded up: each meets the target).")

fig = privacy_profile_figure(cert.curve, delta)
show_chart(fig, key="cert_curve")
download_code("certify", URL_KEYS, "cert_dl_code")  # this certificate as a notebook and a script

eps_here = cert.replace_one
if math.isfinite(eps_here) and CP["target_epsilon"].constraint.low <= eps_here <= 1000:
    shown = float(f"{eps_here:.3g}")
    query = {"cmp_eps": f"{shown:g}", "cmp_delta": repr(float(delta))}
    st.markdown(f"[Open Compare at ε = {shown:g} (replace-one, this app's relation), δ = {delta:g}]"
                f"(/compare?{urlencode(query)})")
    st.caption("Compare trains the app's mechanisms at that ε: what this run's guarantee buys on real data.")
