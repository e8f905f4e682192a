"""Widgets built from dpcore's parameter declarations: every value a widget holds (a link's, a
tuned setting's) is checked against its declaration before the widget is made, and a value that
cannot be used is replaced and said; the dataset, model and mechanism pickers; a tuned setting
put into Explore's widgets."""

from __future__ import annotations

import math
from typing import Any

import streamlit as st

from dpcore import datasets
from dpcore.exceptions import DPCoreError
from dpcore.mechanisms import REGISTRY
from dpcore.models import MODELS
from dpcore.params import PARAMS, Interval, Options, Param, check, log_ticks
from dpcore.partition import check_split
from dpcore.experiments.views import HIDDEN_OPTIONS, option_default_of  # one declaration of the option boxes
from pages.appstate import UPLOAD_PREFIX, user_dataset, user_datasets
from pages.terms import param_help


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
    if key in st.session_state:  # the held value wins; a default beside it only makes Streamlit warn
        for default in ("index", "value", "default"):
            kw.pop(default, None)
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
    :data:`PARAMS`, such as :data:`dpcore.certify.core.CERTIFY_PARAMS`); a held value it refuses (a
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
        return option_default_of(key[len(head):]) if key.startswith(head) else None

    return default_of


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
