"""App support shared by the pages: widgets built from dpcore's parameter
declarations, cached dpcore calls, formatting and Plotly figures.  No numerical
work happens here beyond arranging results for display.
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import time
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from streamlit.runtime.pages_manager import PagesManager

from dpcore import datasets
from dpcore.exceptions import DPCoreError
from dpcore.experiments.baselines import Baseline, baseline, lambdas_for
from dpcore.experiments import presets as _presets
from dpcore.figures import (REFERENCE_LINE, figure_note, legend_html, on_screen, panel_columns, panels, target_note,
                            without_notes)
from dpcore.experiments.context import Context, cache_dir
from dpcore.experiments.progress import TimeLeft, duration
from dpcore.experiments.run import RunSpec, noise_plan, run, slow_reference
from dpcore.lesson import LEAKING_AUDIT, LEAKING_THREAT, LEAKING_TRIALS  # noqa: F401  (the views' leaking setup)
from dpcore.jsonutil import dumps
from dpcore.privacy import dp_events_list
from dpcore.mechanisms import REGISTRY
from dpcore.models import MODELS
from dpcore.params import PARAMS, Interval, Options, Param, check, log_ticks
from dpcore.partition import check_split


#: Exact reference solutions (L*) of registered data outlive the server (the MLP's takes
#: minutes); keyed by data, model, version and solver source, so never stale.  Uploads
#: are never written there.  ``DPCORE_CACHE_DIR`` moves it.
CACHE_DIR = cache_dir()
# -- how a view is entered ---------------------------------------------------------------

def enter_view(name: str) -> None:
    """Every view's first call.  Until app.py has called ``st.navigation`` once in this server
    process, Streamlit serves a link straight to a view with its older page mechanism (the
    ``pages/`` folder): the view runs without app.py (no navigation, no layout, no presenter
    mode, helper modules listed as pages).  Then send it through app.py, to the same view
    with the same link parameters, once per session.  ``PagesManager.uses_pages_directory`` is
    Streamlit's own record of which mechanism is in charge (if it ever disappears, nothing is
    redirected); AppTest resets it before every run, so a session that has been through
    app.py is not sent again."""
    old_mechanism = getattr(PagesManager, "uses_pages_directory", False)
    if not old_mechanism or st.session_state.get("_entered_via_app"):
        st.session_state["_entered_via_app"] = True
        return
    st.session_state["_entered_via_app"] = True
    st.switch_page("app.py", query_params={**st.query_params.to_dict(), "view": name})


#: grids run their configurations in this many worker processes
WORKERS = min(2, os.cpu_count() or 1)


@st.cache_resource
def app_context() -> Context:
    """The app's one execution context (shared by sessions): grids on :data:`WORKERS`
    processes, exact solutions kept in ``CACHE_DIR/erm`` and in memory, and every grid's
    finished configurations in ``CACHE_DIR/results`` (keyed by the configuration and the
    code's source), so a comparison any session has run opens at once for every other."""
    return Context(workers=WORKERS, erm_dir=CACHE_DIR / "erm", results_dir=CACHE_DIR / "results")


def progress_reporter(bar, clock=time.perf_counter):
    """A ``progress(done, total, label)`` callback for a ``st.progress`` bar: the count, the last
    configuration and, once the work has run 2 s, the time spent and the time left as
    :func:`time_left` measures it (a grid's ``work``, when it tells it, weighs its configurations)."""
    eta = time_left(clock)

    def report(k: int, n: int, label: str, work: tuple[float, float] | None = None) -> None:
        left = eta.update(k, n, work)
        text = f"{k}/{n}: {label}"
        if eta.spent > 2 and 0 < k < n:
            text += f" · {_duration(eta.spent)} so far, {_left_text(left)}"
        bar.progress(k / n, text=text)

    report.takes_work = True  # a grid tells it each configuration's cost (Context.tell)
    return report


def time_left(clock=time.perf_counter):
    """The pages' one estimate of the time left (:class:`dpcore.experiments.progress.TimeLeft`):
    measured on the work under way, in work rather than counts when a grid knows its tasks'
    costs, the start-up left out, and ``None`` until enough is known."""
    return TimeLeft(clock)


def _left_text(left: float | None) -> str:
    """``about 3 min left``, or, before an estimate is known, ``estimating the time left``."""
    return "estimating the time left" if left is None else f"about {_duration(left)} left"


def live_drawer(draw, every: float = 0.5, after: float = 0.0, clock=time.perf_counter):
    """A callback that redraws ``draw(*what, k)`` (the ``k``-th drawing) into one placeholder
    each time it is called with ``what`` (a study's ``partial(rows)``, a run's
    ``on_trace(steps, trace)``), at most once per ``every`` seconds and not before ``after``
    seconds (by default the first at once), so the first results show while the rest
    computes.  ``.clear()`` removes the drawing once the whole result is shown."""
    slot = st.empty()
    state = {"start": clock(), "last": -math.inf, "count": 0}

    def update(*what) -> None:
        now = clock()
        if len(what[0]) == 0 or now - state["start"] < after or now - state["last"] < every:
            return
        state["last"], state["count"] = now, state["count"] + 1
        with slot.container():
            draw(*what, state["count"])

    update.clear = slot.empty
    return update


def _duration(seconds: float) -> str:
    return duration(seconds)


def with_progress(bar) -> Context:
    """The app's context, reporting each finished configuration on a ``st.progress`` bar."""
    return app_context().with_(progress=progress_reporter(bar))


# -- the glossary -------------------------------------------------------------------------

#: The glossary view's terms, in teaching order: anchor → (term, explanation in Markdown).
GLOSSARY = {
    "epsilon": ("ε (epsilon), the privacy budget",
                "Replacing one record changes the probability of any output by at most a factor "
                "$e^\\varepsilon$ (up to δ). Smaller ε: more noise, stronger privacy. ε = 1 means the "
                "odds of any conclusion about one person move by at most $e \\approx 2.7$×."),
    "delta": ("δ (delta), the slack",
              "The probability with which the $e^\\varepsilon$ bound may fail. Keep it well below 1/n: "
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
            "non-private optimum. It is the excess empirical risk the bounds predict."),
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


# -- formatting -------------------------------------------------------------------------

def fmt_eps(value) -> str:
    """ε for display: ∞ when there is no guarantee."""
    if value is None or (isinstance(value, float) and math.isinf(value)):
        return "∞"
    return f"{value:.3g}"


def readable(rows: list[dict]) -> list[dict]:
    """Rows for an on-screen table: ∞ for an infinite ε (no guarantee), — for a missing value,
    lists joined.  A column holding either is shown as text throughout (one type per column,
    as Arrow needs); the other columns keep their numbers.  Downloads keep the raw values."""
    def special(v):
        return v is None or isinstance(v, (list, tuple)) or (isinstance(v, float) and not math.isfinite(v))

    def text(v):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "—"
        if isinstance(v, float) and math.isinf(v):
            return "∞" if v > 0 else "−∞"
        if isinstance(v, (list, tuple)):
            return ", ".join(text(x) for x in v)
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    keys = list(dict.fromkeys(k for r in rows for k in r))
    as_text = {k for k in keys if any(special(r.get(k)) or isinstance(r.get(k), str) for r in rows)}
    return [{k: text(r.get(k)) if k in as_text else r.get(k) for k in keys} for r in rows]


def fmt_num(value, spec: str = ".4f") -> str:
    return "—" if value is None else format(value, spec)


# -- widgets ----------------------------------------------------------------------------

def _select_slider(container, label, options, value, key, fmt, help=None, refuse=None):
    """A select_slider whose state (from a URL, say) is snapped to the nearest option; a link's
    value that ``refuse`` refuses (:func:`_refused`) goes down to the largest option it accepts.

    The default goes into session state instead of ``value=`` so that the widget's
    identity never changes between runs (which would reset it).
    """
    current = st.session_state.get(key, value)
    before = current
    if current not in options:
        try:  # nearest on a log scale (an option 0 counts as 1e-300; inf goes to the top)
            target = float(current)
            if math.isnan(target):
                raise ValueError("nan")
            current = options[-1] if math.isinf(target) and target > 0 else min(
                options, key=lambda o: abs(math.log(max(o, 1e-300)) - math.log(max(target, 1e-300))))
        except (TypeError, ValueError):
            current = value
    current, why = _refused(key, current, refuse, (o for o in reversed(options) if o <= current), value)
    if current != before or why:
        _say_link_changed(key, label, before, fmt(current), why)
    st.session_state[key] = current
    return container.select_slider(label, options, key=key, format_func=fmt, help=help)


def _refused(key: str, value, refuse, instead, default) -> tuple[Any, str | None]:
    """A link's ``value`` that the core refuses with the settings chosen before it (``refuse(value)``:
    the reason, or ``None`` when it accepts it) → (the first of ``instead``, else ``default``, that
    it accepts; the reason).  A value set by hand is left to the core, whose error the view shows."""
    if refuse is None or key not in st.session_state.get("_from_url", {}):
        return value, None
    why = refuse(value)
    if why is None:
        return value, None
    return next((v for v in instead if refuse(v) is None), default), f"cannot be used: {why}"


def _say_link_changed(key: str, label: str, given, used, why: str | None = None) -> None:
    """A value from the link that could not be used: say what was used instead (once); ``why``:
    what is wrong with it (by default, that it is out of range or unknown)."""
    from_url = st.session_state.get("_from_url", {})
    if key in from_url:
        st.warning(f"The link's {label} = {str(from_url.pop(key))[:40]} {why or 'is out of range or unknown'}; "
                   f"using {used}.")


def keep_choice(key: str, options, label: str, default=None) -> None:
    """Before a choice widget: a value (from the link, or left from another setting) that is not
    one of ``options`` is replaced by ``default`` (else the first option), and the page says so
    when it came from the link; the value is given back as soon as the options offer it again,
    unless it was changed by hand meanwhile.  A multiselect's list keeps its known values."""
    options = list(options)
    if key not in st.session_state or not options:
        return
    value = st.session_state[key]
    used = default if default in options else options[0]
    if isinstance(value, (list, tuple)):
        kept = [v for v in value if v in options]
        if len(kept) != len(value):
            _say_link_changed(key, label, ", ".join(map(str, value)), ", ".join(map(str, kept)) or "none")
            st.session_state[key] = kept
        return
    # a value replaced only because these options lacked it comes back when they have it again
    # (input-dbdp-if offers only the published calibration: the next mechanism is certified again)
    wanted_key = f"_wanted_{key}"
    replaced_by, wanted = st.session_state.get(wanted_key, (None, None))
    if wanted_key in st.session_state and value != replaced_by:
        del st.session_state[wanted_key]  # changed by hand meanwhile: nothing to give back
    elif wanted_key in st.session_state and wanted in options:
        del st.session_state[wanted_key]
        st.session_state[key] = value = wanted
    if value not in options:
        _say_link_changed(key, label, value, "none" if used == "" else used)
        st.session_state[key] = used
        st.session_state[wanted_key] = (used, value)


def choice(kind: str, label: str, options, *, key: str, container=st, fallback=None, **kw):
    """A choice widget (``kind``: selectbox, radio, select_slider, multiselect) whose state is
    first checked against ``options`` (:func:`keep_choice`, replacing an unknown value by
    ``fallback``): every choice-valued link parameter goes through this one validator, and a
    replaced value is said on the page.  ``kw`` go to the widget."""
    options = list(options)
    keep_choice(key, options, label, fallback)
    return getattr(container, kind)(label, options, key=key, **kw)


def _hold_within(key: str, label: str, kind: type, lo, hi, default, refuse=None) -> None:
    """The widget's held value (a link's, a tuned setting's) brought within [lo, hi] and to its kind
    before the widget is made (Streamlit raises on a value outside a widget's range); a link's value
    that ``refuse`` refuses goes back to the default (:func:`_refused`); a change is said."""
    current = st.session_state.get(key, default)
    before = current
    try:
        if isinstance(current, bool):
            raise TypeError("a flag")
        current = kind(min(max(kind(current), kind(lo)), kind(hi)))
        if isinstance(current, float) and math.isnan(current):
            raise ValueError("nan")
    except (TypeError, ValueError, OverflowError):
        current = kind(default)
    current, why = _refused(key, current, refuse, (), kind(default))
    if current != before or why:
        _say_link_changed(key, label, before, current, why)
    st.session_state[key] = current


def held_within(key: str, label: str, lo, hi, default) -> Any:
    """A setting without a widget of its own (the lesson's step) held within [lo, hi], as a slider's
    would be (:func:`_hold_within`): a link's value beyond them is said; the value held is returned."""
    _hold_within(key, label, type(default), lo, hi, default)
    return st.session_state[key]


def bounded_slider(label: str, lo, hi, key: str, default, container=st, **kw) -> Any:
    """A slider on [lo, hi] whose held value is brought within them first (:func:`_hold_within`): a
    link's ``tu_acc=2`` or ``lc_T=5`` gives a note and the nearest end, never an exception."""
    _hold_within(key, label, type(default), lo, hi, default)
    return container.slider(label, lo, hi, key=key, **kw)


def declared_number(p: Param, key: str, label: str, default, container=st, **kw) -> Any:
    """A number input over the whole range of a declaration (``p``: a parameter of a table other than
    :data:`PARAMS`, such as :data:`dpcore.certify.CERTIFY_PARAMS`); a held value it refuses (a
    link's: a typed one is kept in range by the widget) goes back to ``default``, said with the range."""
    cons, held = p.constraint, st.session_state.get(key)
    if held is not None and not cons.contains(held):
        _say_link_changed(key, key, held, f"{default:g}, the default",
                          why=f"is outside the range of {label} ({cons.describe()})")
        st.session_state[key] = default
    return container.number_input(label, min_value=cons.kind(cons.low), max_value=cons.kind(cons.high), key=key,
                                  help=p.help, **kw)


def param_widget(name: str, key: str, *, label: str | None = None, container=st, zero: bool = False,
                 refuse=None, **kw) -> Any:
    """One widget for a declared parameter; its range comes from :data:`dpcore.params.PARAMS`.

    ``zero`` adds 0 to a log-scale slider (for a parameter whose range includes it, like λ).
    ``refuse(value)``: why the core refuses a value with the settings chosen before this one
    (``None`` when it accepts it); a link's value it refuses is replaced and said
    (:func:`skew_refusal`: a skew the clients cannot take).
    """
    p = PARAMS[name]
    label = label or p.help
    kw.setdefault("help", param_help(name))
    if p.ticks:
        opts = list(p.ticks)
        held = st.session_state.get(key)  # a value set by a tuned setting or a link stays exact
        if held not in opts and isinstance(held, float) and p.constraint.contains(held) and math.isfinite(held):
            opts = sorted({*opts, held})
        return _select_slider(container, label, opts, kw.pop("value", p.default), key,
                              lambda v: format(v, p.tick_format), kw.pop("help"), refuse)
    kind = getattr(p.constraint, "kind", float)
    lo, hi = p.ui_min, p.ui_max
    value = kw.pop("value", p.default)
    if p.log_scale and kind is float:
        extra = {float(value)} | ({0.0} if zero else set())
        held = st.session_state.get(key)  # a value set by a tuned setting or a link stays exact
        if isinstance(held, (int, float)) and not isinstance(held, bool) and lo <= held <= hi:
            extra.add(float(held))
        opts = list(log_ticks(lo, hi, 25, extra))
        return _select_slider(container, label, opts, float(value), key, lambda v: f"{v:g}", kw.pop("help"),
                              refuse)
    _hold_within(key, label, kind, lo, hi, value, refuse)
    if kind is int:
        return container.number_input(label, min_value=int(lo), max_value=int(hi), step=1, key=key,
                                      help=kw.pop("help"))
    return container.number_input(label, min_value=float(lo), max_value=float(hi), key=key, help=kw.pop("help"))


#: A tuned setting's fields (dpcore.experiments.tune) → Explore's widgets.
TUNED_WIDGETS = {"iterations": "ex_T", "learning_rate": "ex_lr", "lam": "ex_lam", "sample_rate": "ex_q",
                 "clip_norm": "ex_clip", "batch_size": "ex_batch"}


def _setting_widgets(setting: dict, mechanism: str | None) -> dict:
    """Explore's widget key of each entry of a tuned setting: a common setting's, or (an option
    such as ``tune_on_release``) that mechanism's box."""
    keys = {k: TUNED_WIDGETS[k] for k in setting if k in TUNED_WIDGETS}
    if mechanism is not None:
        keys.update({k: f"ex_opt_{mechanism}_{k}" for k in setting
                     if k not in TUNED_WIDGETS and k in REGISTRY[mechanism].options})
    return keys


def _tuned_state(setting: dict, mechanism: str | None) -> dict:
    """Explore's tunable widgets as a tuned setting declares them: its own values, and every
    tunable widget it does not name at its declared default (a setting tuned for another
    mechanism leaves nothing behind: output perturbation's λ alone does not run at DP-GD's T = 800)."""
    defaults = {"clip_norm": 0.0}  # Explore's clipping box: 0 is "the loss's own bound"
    state = {key: defaults.get(name, PARAMS[name].default) for name, key in TUNED_WIDGETS.items()}
    state.update({key: setting[k] for k, key in _setting_widgets(setting, mechanism).items()})
    return state


def apply_setting(setting: dict, mechanism: str | None = None) -> None:
    """Put a tuned setting into Explore's widgets (a button's callback, before the rerun): what it
    names at its values, every other tunable widget at its default (:func:`_tuned_state`), so a
    mechanism opens at the very setting Compare's tuned row runs, whichever was chosen before it.
    A setting chosen on the released records (``tune_on_release``) thus also runs at the default
    T, η and λ: with the box unticked, the mechanism then runs as its paper does."""
    st.session_state.update(_tuned_state(setting, mechanism))


def reset_tuned_widgets() -> None:
    """Explore's tunable widgets back at their declared defaults (no tuning applies any more)."""
    st.session_state.update(_tuned_state({}, None))


def setting_in_use(setting: dict, mechanism: str) -> bool:
    """Whether Explore's widgets hold a tuned setting whole (none changed by hand, the widgets it
    does not name included)."""
    default = _tuned_state({}, None)  # a widget not drawn this run (its key gone) comes back at its default
    return all(st.session_state.get(key, default.get(key)) == value
               for key, value in _tuned_state(setting, mechanism).items())


#: a mechanism option's label in words (its declaration's help is the tooltip; the name is the
#: link's and the command line's)
OPTION_LABELS = {"tune_on_release": "tune T, η and λ on the released records", "debias_labels": "debias the flipped labels",
                 "smoothing": "Laplacian smoothing σ", "t_local": "local steps per round",
                 "normalize": "divide the selection's norm by √d", "w_min": "floor I of the gradient norm",
                 "radius": "radius η of the parameter ball", "partition": "client sizes",
                 "split": "which records each client holds"}
HIDDEN_OPTIONS = ("keep_data",)  # for audits and scripts, not a user's choice


def option_widgets(cls, key_prefix: str, container=st) -> tuple:
    """Widgets for a mechanism's declared options (those with a default), from their
    declarations: a checkbox, a select box or a bounded number input. Returns the options.
    Their keys are ``<key_prefix>_<mechanism>_<option>``: :func:`option_default` declares them
    for a link.  A value from a link that the declaration refuses is said and replaced."""
    out = {}
    for p in cls.options.values():
        if p.default is None or p.name in HIDDEN_OPTIONS:
            continue
        key = f"{key_prefix}_{cls.id}_{p.name}"
        label = OPTION_LABELS.get(p.name, p.name.replace("_", " "))
        cons = p.constraint
        held = st.session_state.get(key, p.default)
        try:
            held = check(p, held, cls.id)
        except DPCoreError:  # the declaration refuses it (a link's value): back to the default
            _say_link_changed(key, label, held, p.default)
            held = p.default
        if isinstance(cons, Options) and set(cons.values) == {True, False}:
            st.session_state[key] = bool(held)
            out[p.name] = container.checkbox(label, key=key, help=p.help)
        elif isinstance(cons, Options):
            vals = list(cons.values)
            st.session_state[key] = held if held in vals else p.default
            out[p.name] = container.selectbox(label, vals, key=key, help=p.help)
        elif isinstance(cons, Interval):
            kind = cons.kind
            lo = cons.low if cons.low is not None else None
            hi = cons.high if cons.high is not None else None
            if cons.closed in ("right", "neither") and lo is not None:
                lo = lo + 1 if kind is int else None  # an open bound: checked by the declaration
            if cons.closed in ("left", "neither") and hi is not None:
                hi = hi - 1 if kind is int else None
            st.session_state[key] = kind(held)
            out[p.name] = container.number_input(label, min_value=None if lo is None else kind(lo),
                                                 max_value=None if hi is None else kind(hi),
                                                 key=key, help=p.help)
    return tuple(sorted(out.items()))


def option_default(key_prefix: str):
    """A link's declaration of the option boxes :func:`option_widgets` makes under ``key_prefix``:
    a key's declared default (its type), or ``None`` for a key no mechanism declares."""
    head = key_prefix + "_"

    def default_of(key: str):
        rest = key[len(head):]
        for mid, cls in REGISTRY.items():
            if rest.startswith(mid + "_"):
                p = cls.options.get(rest[len(mid) + 1:])
                if p is not None and p.default is not None and p.name not in HIDDEN_OPTIONS:
                    return p.default
        return None

    return default_of


UPLOAD_PREFIX = "upload:"


def user_datasets() -> dict:
    """This session's uploaded datasets (never shared between users)."""
    return st.session_state.setdefault("user_datasets", {})


def user_dataset(dataset_id: str):
    """The session's Dataset for an ``upload:`` id, else None (a registered dataset)."""
    if dataset_id.startswith(UPLOAD_PREFIX):
        return user_datasets().get(dataset_id[len(UPLOAD_PREFIX):])
    return None


def dataset_picker(key: str = "dataset", container=st, default: str = "breast-cancer",
                   uploads: bool = True, task: str | None = None) -> str:
    """The dataset select box: the registry, then (``uploads``) this session's own CSVs;
    ``task`` keeps only classification or only regression data."""
    ids = list(datasets.DATASETS) + ([UPLOAD_PREFIX + name for name in user_datasets()] if uploads else [])
    if task is not None:
        ids = [i for i in ids if dataset_task(i) == task]
    if st.session_state.get(key) not in ids:
        wanted = st.session_state.get(key)
        if isinstance(wanted, str) and wanted.startswith(UPLOAD_PREFIX):
            st.warning(f"The dataset {wanted[len(UPLOAD_PREFIX):]!r} was uploaded in another session (uploads "
                       f"are never shared or kept): upload it again on the Datasets view. Showing "
                       f"{dataset_label(default)} meanwhile.")
            st.session_state.get("_from_url", {}).pop(key, None)
        else:
            _say_link_changed(key, "dataset", wanted, dataset_label(default))
        st.session_state[key] = default
    return container.selectbox("Dataset", ids, key=key, format_func=dataset_label)


def dataset_label(dataset_id: str) -> str:
    if dataset_id.startswith(UPLOAD_PREFIX):
        return f"{dataset_id[len(UPLOAD_PREFIX):]} (uploaded)"
    return datasets.DATASETS[dataset_id].name


def dataset_task(dataset_id: str) -> str:
    ds = user_dataset(dataset_id)
    return ds.task if ds is not None else datasets.DATASETS[dataset_id].task


def model_picker(dataset_id: str, key: str = "model", container=st) -> str:
    task = dataset_task(dataset_id)
    options = [m for m, cls in MODELS.items() if cls.task == task]
    if st.session_state.get(key) not in options and key in st.session_state.get("_from_url", {}):
        keep_choice(key, options, "model")  # a link's unknown model is said; a task change is not news
    return container.selectbox("Model", options, key=key, format_func=lambda m: f"{m} — {MODELS[m].name}")


def skew_refusal(dataset_id: str, clients: int):
    """``refuse`` for a skew widget (:func:`param_widget`): why the core refuses a skew u with these
    ``clients`` over this dataset's training rows (:func:`dpcore.partition.check_split`: a skew with
    one client, or one that leaves the small clients empty), ``None`` when it takes it."""
    ds = user_dataset(dataset_id)
    n = ds.n if ds is not None else datasets.DATASETS[dataset_id].n_train

    def refuse(skew) -> str | None:
        try:
            check_split(n, clients, float(skew))
        except DPCoreError as exc:
            return str(exc)
        return None

    return refuse


def mechanisms_for(model_id: str, families: tuple[str, ...] | None = None) -> list[str]:
    return [m for m, cls in REGISTRY.items()
            if model_id in cls.models and (families is None or cls.family in families)]


# -- cached dpcore calls ----------------------------------------------------------------

@st.cache_data(show_spinner="Loading and preprocessing the dataset…")
def dataset_details(dataset_id: str) -> dict:
    """Summary, preprocessing notes and a row-norm histogram of a registered dataset (cached)."""
    ds = datasets.load(dataset_id)
    out = ds.summary()
    out["notes"] = list(ds.notes)
    out["feature_names"] = list(ds.feature_names)
    norms = np.linalg.norm(ds.X_train, axis=1)
    counts, edges = np.histogram(np.minimum(norms, 1.0), bins=20, range=(0.0, 1.0))
    out["norm_histogram"] = {f"≤ {e:.2f}": int(c) for e, c in zip(edges[1:], counts)}
    out["max_row_norm"] = float(norms.max())
    return out


def _record(config: RunSpec, dataset=None, progress=None, on_trace=None) -> dict:
    """``dpcore.experiments.run.run`` as a record with the loss trace."""
    res = run(config, app_context().with_(progress=progress, on_trace=on_trace), dataset=dataset)
    rec = res.to_dict()
    rec["loss_trace"] = None if res.loss_trace is None else res.loss_trace.tolist()
    rec["trace_steps"] = None if res.trace_steps is None else res.trace_steps.tolist()
    return rec


def run_records():
    """Records of runs on registered data, shared by sessions (runs are pure and seed-keyed): the
    app context's memo (:class:`dpcore.cache.Memo`, single flight across sessions) rather than
    ``st.cache_data``, so that a run being computed can report its progress on the page that asked."""
    return app_context().memo


#: a run shows a progress bar once it has taken this long (shorter ones only a spinner)
PROGRESS_AFTER_SECONDS = 2.0


@contextlib.contextmanager
def run_progress(after: float = PROGRESS_AFTER_SECONDS):
    """A ``progress(done, total, label)`` callback that, once the work has lasted ``after``
    seconds, shows a bar with what it is doing and the time left (:func:`time_left`, the
    estimate the grids' bars show); the bar goes when the work ends."""
    slot = st.empty()
    # a count that starts again is a new loop (training after the reference solve), timed from
    # the last report of the loop before (:func:`time_left`)
    eta = time_left(time.perf_counter)
    last = [-math.inf]  # when the bar last changed

    def progress(done: int, total: int, label: str, work: tuple[float, float] | None = None) -> None:
        left = eta.update(done, total, work)
        now = eta.now
        if eta.spent < after or now - last[0] < 0.2 or total <= 0:
            return
        last[0] = now
        frac = min(1.0, done / total)
        what = label[:1].upper() + label[1:]  # "L-BFGS" stays upper case
        slot.progress(frac, text=f"{what}: {done:,} of {total:,} · {_left_text(left)}")

    progress.takes_work = True

    try:
        yield progress
    finally:
        slot.empty()


#: a run draws its loss curve while it trains once it has taken this long, at most every REDRAW s
CURVE_AFTER_SECONDS = 0.5
CURVE_REDRAW_SECONDS = 0.5


@contextlib.contextmanager
def live_curve(iterations: int, after: float = CURVE_AFTER_SECONDS, every: float = CURVE_REDRAW_SECONDS,
               clock=time.perf_counter):
    """An ``on_trace(steps, trace)`` callback (:class:`~dpcore.experiments.context.Context`) that,
    once a run has trained ``after`` seconds, draws its loss curve so far (every repeat) and
    redraws it as it grows, at most every ``every`` seconds; the drawing goes when the run ends
    (the finished curve is then drawn with the rest).  The first useful picture of a long run
    (the MLP on Adult: within a second, not after eight)."""
    def draw(steps, trace, k) -> None:
        fig = loss_figure({"loss_trace": trace.tolist(), "trace_steps": steps.tolist()},
                          title=f"Training objective so far: step {int(steps[-1])} of {iterations}")
        st.plotly_chart(fig, width="stretch", key=f"live_curve_{k}")

    on_trace = live_drawer(draw, every=every, after=after, clock=clock)
    try:
        yield on_trace
    finally:
        on_trace.clear()


def run_or_error(config: RunSpec) -> dict | None:
    """Run (kept for every session; uploads never) and show a clear ``st.error`` instead of a
    traceback; a long run shows its progress and the time it still needs."""
    try:
        ds = user_dataset(config.dataset)
        with reference_notice(config), run_progress() as progress, live_curve(config.iterations) as on_trace:
            if ds is None:
                return copy.deepcopy(run_records().get(
                    config, lambda: _record(config, progress=progress, on_trace=on_trace)))
            return _record(config, dataset=ds, progress=progress, on_trace=on_trace)  # never shared
    except DPCoreError as exc:
        st.error(f"{exc}")
        return None


def reference_for(config: RunSpec, lams=()) -> Baseline | None:
    """The one non-private reference of ``config``'s data and model
    (:func:`dpcore.experiments.baselines.baseline`: the best exact model over the tuning's λ
    grid and the λ's in ``lams`` and ``config.lam``), kept for every session (uploads: for
    this run only); ``None`` with an ``st.error`` when it cannot be computed."""
    lams = tuple(sorted({float(v) for v in lams if v is not None}))
    # a new dataset's first reference solves it exactly at every λ of the grid (KDD Cup's 395k
    # rows: 17 s after a 5 s training): the page says so rather than sit under a finished bar
    # (the spinner shows only when it lasts)
    wait = ("Computing the non-private reference: the exact model at each λ of the grid "
            f"({', '.join(f'{v:g}' for v in lambdas_for(config, lams))}), "
            "once per dataset on this server…")
    try:
        ds = user_dataset(config.dataset)
        with st.spinner(wait):
            if ds is not None:
                return baseline(config, lams, app_context(), dataset=ds)
            key = ("baseline", config.dataset, config.model, config.n, config.d, config.noise, config.lam, lams)
            return run_records().get(key, lambda: baseline(config, lams, app_context()))
    except DPCoreError as exc:
        st.error(f"The non-private reference could not be computed: {exc}")
        return None


@contextlib.contextmanager
def reference_notice(config: RunSpec):
    """A spinner while the run trains; it says why the wait is long when the run first needs
    the MLP's slow reference solve."""
    note = slow_reference(config, app_context()) if user_dataset(config.dataset) is None else None
    with st.spinner(note or "Training…"):
        yield


# -- figures ----------------------------------------------------------------------------

def missed_target_note(rows, target: str = "epsilon", x: str | None = None) -> None:
    """Under a plot: which mechanisms miss their target, and by how much (``x``: the swept
    coordinate when it is not ε, e.g. ``"skew"``), written by the one note formatter."""
    note = target_note(rows, target=target, x=x)
    if note:
        st.warning(note)


def loss_figure(rec: dict, title: str = "Training objective on the data the optimiser saw") -> go.Figure | None:
    """Every repeat's training objective against the step, with L* when the record has it, and
    the *released* model's objective L* + gap (mean ± sd over runs) at the last step: the loss
    of the model whose gap the view reports.  Where noise is added after training (output
    perturbation) it stands apart from the curve, and the title says so."""
    trace, steps = rec.get("loss_trace"), rec.get("trace_steps")
    if not trace:
        return None
    arr = np.asarray(trace, dtype=float)
    fig = go.Figure()
    for r in range(arr.shape[1]):
        fig.add_trace(go.Scatter(x=steps, y=arr[:, r], mode="lines", name=f"run {r + 1}",
                                 line=dict(width=1)))
    star, gap = rec.get("loss_star"), rec.get("gap_mean")
    if star is not None:
        # under its line: the released model's label sits above its point, at L* + gap ≥ L*
        fig.add_hline(y=star, annotation_text="L* (non-private optimum)", annotation_position="bottom right",
                      **REFERENCE_LINE)
    if star is not None and gap is not None and math.isfinite(gap):
        released = star + gap
        end = float(np.nanmean(arr[-1])) if np.isfinite(arr[-1]).any() else math.nan
        apart = not math.isfinite(end) or abs(released - end) > 1e-6 * max(1.0, abs(released))
        fig.add_trace(go.Scatter(
            x=[steps[-1]], y=[released], mode="markers", name="released model",
            marker=dict(symbol="diamond", size=11, color="#d62728"),
            error_y=dict(type="data", array=[rec.get("gap_std") or 0.0], visible=True),
            hovertext=[f"the released model: L(θ) = L* + gap = {released:.4g} (mean over runs)"
                       + ("; the curve is the training before the noise added at the end" if apart else "")],
            hoverinfo="text"))
        fig.add_annotation(x=steps[-1], y=released, text="released model" + (" (after its noise)" if apart else ""),
                           showarrow=False, xanchor="right", yanchor="bottom", font=dict(color="#d62728"))
        if apart:
            title = "Training objective before the noise, and the released model's (◆, after it)"
    fig.update_layout(title=title, xaxis_title="step t",
                      yaxis_title="L(θ_t)", margin=dict(l=10, r=10, t=40, b=10), showlegend=False)
    return fig


def drawn(results):
    """(figure, the figure as the page shows it (``on_screen``'s title, copy and notes, with its
    panels one chart each: for :func:`show_panels`), its note): the note under the figure is written
    by :func:`figure_note` from the points drawn (the figure keeps it, wrapped, for the download; on
    screen it is page text, which wraps by itself)."""
    fig, points = results.figure_and_points()
    title, shown, notes = on_screen(without_notes(fig))
    return fig, (title, shown, notes, legend_html(shown), panel_columns(shown), panels(shown)), figure_note(**points)


#: the most panels side by side (:func:`show_panels`)
MAX_PANELS_A_ROW = 3


def show_panels(prepared) -> None:
    """A figure of many panels as :func:`drawn` prepared it: its title, its one legend (wrapping at
    the page's width), then its panels in rows of columns as the paper lays them out; on a phone
    (Streamlit stacks columns below 640 px) one panel a row, each as wide as the screen."""
    title, shown, notes, legend, columns, charts = prepared
    if len(charts) <= 1:
        show_chart(prepared=(title, shown, notes))
        return
    if title:
        st.markdown(f"**{_escape(title)}**")
    st.html(legend)
    # a row of the paper in rows of at most MAX_PANELS_A_ROW (5 → 3 + 2), so that a panel keeps
    # ~250 px of plot in the wide layout beside the sidebar
    per = math.ceil(columns / math.ceil(columns / MAX_PANELS_A_ROW))
    for row in range(0, len(charts), columns):
        paper_row = charts[row:row + columns]
        for start in range(0, len(paper_row), per):
            for col, (name, chart) in zip(st.columns(per), paper_row[start:start + per]):
                with col:
                    if name:
                        st.caption(f"**{_escape(name)}**")
                    st.plotly_chart(chart, width="stretch")
    for note in notes:
        st.markdown(f":red[{_escape(note)}]")


@st.cache_resource(show_spinner="Reading the shipped results…")
def load_shipped(preset_id: str):
    """``shipped_results`` and :func:`drawn` of it, made once per server (the files change
    only with the app; pages only read the figures: show_chart draws a copy).  Paper figures
    reads it; the Start view's "Prepare for class" draws the first figure ahead (a few seconds
    the first time in a server process, which 30 students opening it at once would all wait)."""
    # by the module: a test may replace it; every number verified (dpcore.shipped's rule), the
    # certificates recomputed on the app's calibration table (kept on disk: seconds once, then at once);
    # a refused file raises ShippedFileError, which is not cached: the page shows its one line
    shipped = _presets.shipped_results(preset_id, ctx=app_context())
    return (shipped, None, None, None) if shipped is None else (shipped, *drawn(shipped))


#: a record's non-private model is the exact one at that row's own λ; the line the views draw is
#: the best over a λ grid (pages.common.reference_for): a downloaded table names its column so
#: that the two are not read as one number (a new user found 0.8423 in the file, 0.8467 drawn)
ROW_LAMBDA_COLUMNS = {"accuracy_nonprivate": "accuracy_nonprivate_at_this_rows_lambda",
                      "rmse_nonprivate": "rmse_nonprivate_at_this_rows_lambda"}


def table_csv(rows) -> bytes:
    """A view's table as the CSV file it downloads (:data:`ROW_LAMBDA_COLUMNS` renamed)."""
    return pd.DataFrame(rows).rename(columns=ROW_LAMBDA_COLUMNS).to_csv(index=False).encode()


def download_table(rows, name: str, key: str, label: str = "Download table (CSV)") -> None:
    """The table as CSV (:func:`table_csv`), written when the button is clicked (not on every run
    of the page: a paper figure's table took half of the view's time, for every student who opened it)."""
    st.download_button(label, lambda: table_csv(rows), file_name=f"{name}.csv", mime="text/csv", key=key)


def download_plan(config: RunSpec, key: str) -> None:
    """The run's noise plan as dp-accounting events (the file ``run --plan-out`` writes and
    ``certify --plan`` reads), written when the button is clicked; nothing where the mechanism
    declares no plan before training (non-private, the distributed mechanisms)."""
    try:
        plan = noise_plan(config, app_context(), dataset=user_dataset(config.dataset))
    except (DPCoreError, NotImplementedError):
        return
    st.download_button("Download noise plan (dp-accounting events, JSON)",
                       lambda: dumps(dp_events_list([(config.label(), plan, config.delta)]), indent=1).encode(),
                       file_name=f"noise-plan-{config.mechanism}.json", mime="application/json", key=key,
                       help="`python -m dpcore certify --plan FILE` certifies it again; dp-accounting composes its "
                            "events (docs/certify.md)")


def client_bars(sizes) -> None:
    """Records per client as bars, clients numbered from 1 as in the tables."""
    st.bar_chart({"client": list(range(1, len(sizes) + 1)), "records": list(sizes)}, x="client", y="records",
                 x_label="client", y_label="records")


def show_chart(fig=None, width: str = "stretch", key: str | None = None, *, prepared=None) -> None:
    """A chart, readable at any width (:func:`dpcore.figures.on_screen`): its title as text above
    it, its notes (red) below it, a horizontal legend above the plot.  ``prepared``: what
    ``on_screen`` made of a figure every session shows alike (:func:`drawn`), made once: the
    copy it makes checks every property of every trace, most of a session's work on a shipped
    figure (30 sessions opening Paper figures at once: 63 % of the server's time)."""
    title, shown, notes = prepared if prepared is not None else on_screen(fig)
    if title:
        st.markdown(f"**{_escape(title)}**")
    st.plotly_chart(shown, width=width, key=key)
    for note in notes:
        st.markdown(f":red[{_escape(note)}]")


def plain_markdown(text: str) -> str:
    """Markdown-safe: text from the core (a figure's title, an estimator's detail) written as a page's,
    its ``*``, ``_``, ``$`` and brackets shown as themselves."""
    return _escape(text)


def _escape(text: str) -> str:
    """Markdown-safe: a figure's text written as a page's."""
    return "".join("\\" + c if c in "\\`*_{}[]$#<>|" else c for c in text)


def download_figure(fig, name: str, key: str) -> None:
    """The figure as a self-contained HTML file: plotly.js is embedded, so it opens offline.
    It is written when the button is clicked (a callable, which Streamlit runs then), not at
    every rerun: the file embeds plotly.js (4.8 MB, 55 ms to write)."""
    st.download_button("Download plot (HTML)", lambda: fig.to_html(include_plotlyjs=True).encode(),
                       file_name=f"{name}.html", mime="text/html", key=key)




def audit_view_state(spec: RunSpec, trials: int, threat: str) -> dict[str, Any]:
    """The Audit view's widgets (its declared link keys) at ``spec``: what its "Load a leaking
    setup" button sets and what the lesson's "Try it yourself" opens."""
    return {"au_dataset": spec.dataset, "au_model": spec.model, "au_mechanism": spec.mechanism,
            "au_epsilon": spec.epsilon, "au_delta": spec.delta, "au_cal": spec.calibration, "au_c": spec.c,
            "au_T": spec.iterations, "au_trials": trials, "au_threat": threat, "au_canary": "auto",
            "au_noise": spec.noise_scale, "au_seed": spec.seed}


def shared_audit(config: RunSpec, trials: int, bar, *, dataset=None, **options) -> dict:
    """:func:`dpcore.audit.audit`'s record of ``config`` (``bar``: its progress), kept for every
    session of this server when it audits a bundled dataset (an audit is seeded: the same settings
    give the same record; in the app context's memo, as :func:`run_records`): a lecturer's audit,
    opened by a student's link (pages.links.linked_result),
    is read at once instead of run again (the leaking setup's confirmed audit: 27 s).  An upload's
    audit runs in its own session and is never kept."""
    from dpcore.audit import audit  # the audit sits above the runs this module draws

    def run_it() -> dict:
        return audit(config, trials, dataset=dataset, ctx=app_context(), **options,
                     progress=lambda done, total: bar.progress(done / total, text=f"audit: {done}/{total} runs")
                     ).to_dict()

    if dataset is not None:
        return run_it()
    return run_records().get(("audit", config, trials, tuple(sorted(options.items()))), run_it)
