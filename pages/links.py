"""A view's state, declared once: the link that reproduces it, and the settings views share.

A view declares its widgets' keys with a default of each one's type (:func:`restore_from_url`);
the same declaration writes the link (:func:`write_to_url`), so a link a lecturer hands out
opens the same numbers.  Settings such as the dataset, ε and δ travel from view to view
(:func:`shared_settings`, :func:`publish_settings`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import streamlit as st

from dpcore.export.declare import url_text, url_value  # one reader and writer of links: the app's and the export's

def _declared(defaults: dict[str, Any], prefixes: dict[str, Any], key: str) -> Any:
    """The default (hence the type) a view declares for ``key``, or ``None`` when it declares none."""
    if key in defaults:
        return defaults[key]
    for prefix, default_of in prefixes.items():
        if key.startswith(prefix):
            return default_of(key)
    return None


def restore_from_url(defaults: dict[str, Any], prefixes: dict[str, Any] | None = None) -> None:
    """Seed widget state from ``st.query_params`` once per session (so a shared link reproduces a view).

    ``defaults`` maps widget keys to a value of the right type (a list for a multiselect);
    ``prefixes`` maps a key prefix (a family of widgets made on the fly, such as a mechanism's
    option boxes) to a function giving a key's default, ``None`` for a key it does not know.
    URL strings are converted to that type; a value that does not parse is said and ignored.
    A key the link gives more than once with different values is said too: Streamlit keeps the
    last of them (``st.query_params``), which is used.
    The same declaration writes the link (:func:`write_to_url`): a view's state is declared once.
    """
    prefixes = prefixes or {}
    flag = "_url_restored_" + "_".join(sorted(defaults))
    if st.session_state.get(flag):
        return
    st.session_state[flag] = True
    for key in list(st.query_params):
        default = _declared(defaults, prefixes, key)
        if default is None or key in st.session_state:
            continue
        raw = st.query_params[key]
        given = st.query_params.get_all(key)
        if len(set(given)) > 1:
            shown = ", ".join(v[:40] for v in given[:5]) + (", …" if len(given) > 5 else "")
            times = "twice" if len(given) == 2 else f"{len(given)} times"
            st.warning(f"The link gives {key} {times} ({shown}); using the last, {raw[:40]}.")
        st.session_state.setdefault("_from_url", {})[key] = raw
        try:
            value = url_value(raw, default)
        except (ValueError, OverflowError):
            kind = "true or false" if isinstance(default, bool) else "a whole number" if isinstance(default, int) \
                else "a number"
            used = f"{default:g}" if isinstance(default, float) else url_text(default)
            st.warning(f"The link's {key} = {raw[:40]} is not {kind}; using {used}, the default.")
            continue
        st.session_state[key] = value


#: the query key of presenter mode (app.py): kept in the lecturer's own address, never in a link handed out
PRESENTER_KEY = "present"


def share_link(base: str | None, params: dict[str, str]) -> str:
    """The address that opens this view with these settings: the page's URL without its old
    query, then the settings (relative, ``?…``, when the page's URL is unknown)."""
    page = (base or "").split("?", 1)[0].split("#", 1)[0]
    return f"{page}?{urlencode(params)}" if params else page or "?"


def write_to_url(keys, prefixes=()) -> None:
    """Mirror the current widget values into the URL, and offer that URL in the sidebar as a
    link to hand out (a class opens the same view with the same settings).  ``keys``: the
    view's declared widget keys; ``prefixes``: its families of widgets made on the fly (every
    key in the session that starts with one)."""
    chosen = [k for k in keys if k in st.session_state]
    chosen += sorted(k for k in st.session_state if isinstance(k, str) and k not in chosen
                     and any(k.startswith(p) for p in prefixes))
    for key in chosen:
        st.query_params[key] = url_text(st.session_state[key])
    with st.sidebar.expander("Link for students"):
        st.session_state["_link_slot"] = st.empty()  # this run's: a result shown later rewrites it
        st.caption("Opens this view with these settings, and with the result shown here when there is one "
                   "(the copy button is at the right of the box), in the reader's ordinary type: presenter mode "
                   "stays on the projector (add &present=1 to open the link in it).")
    _show_link()


def _show_link() -> None:
    """The link box's text: the page's address with the query as it stands now."""
    slot = st.session_state.get("_link_slot")
    if slot is not None:
        # a student's phone opens in the reader's mode: the lecturer's presenter mode is not handed on
        link = share_link(getattr(st.context, "url", None),
                          {k: st.query_params[k] for k in st.query_params if k != PRESENTER_KEY})
        slot.code(link, language=None, wrap_lines=True)


# -- results a link brings back ------------------------------------------------------------

def linked_result(key: str, flag: str, settings: Any, pressed: bool, compute, *, what: str,
                  button: str, stale: bool = True) -> tuple[Any, bool]:
    """A view's computed result (a comparison, a sweep, an audit) and whether it is the one for the
    settings on screen, kept in ``st.session_state[key]`` (the settings it was computed for beside it).

    The result travels with the link: while the result on screen is the one for these settings, the
    link carries ``flag=true`` (a key the view declares with ``False``), and a link that carries it
    computes the result when it opens, with progress, as pressing ``button`` would (at once where
    the server's shared results or the shipped files hold it: the view's ``compute`` reads them
    first), so a student sees the lecturer's chart, not an empty form.  ``compute(bar)`` (given a
    ``st.progress`` bar) is called when ``pressed`` too; a refusal (``DPCoreError``) is said and
    keeps what was there.  A result computed for other settings is kept, with a warning saying so
    (``stale=False``: the view shows something else then, and says so itself).
    """
    from dpcore.exceptions import DPCoreError

    for_key = f"_{key}_for"
    linked = (not pressed and st.session_state.get(flag) is True and flag in st.session_state.get("_from_url", {})
              and f"_{key}_opened" not in st.session_state)
    st.session_state[f"_{key}_opened"] = True  # the link is acted on once, at the view's first run
    current = key in st.session_state and st.session_state.get(for_key) == settings
    if pressed or (linked and not current):
        bar = st.progress(0.0, text=f"the link shows {what}: computing it (at once where this server holds it)…"
                          if linked else "starting…")
        try:
            value = compute(bar)
        except DPCoreError as exc:
            st.error(f"{exc}")
        else:
            if value is not None:
                st.session_state[key], st.session_state[for_key] = value, settings
        finally:
            bar.empty()
    current = key in st.session_state and st.session_state.get(for_key) == settings
    st.session_state[flag] = current
    if current:
        st.query_params[flag] = "true"
    elif flag in st.query_params:
        del st.query_params[flag]
    _show_link()
    if stale and key in st.session_state and not current:
        st.warning(f"The {what} below was computed for earlier settings; press **{button}** to compute it for "
                   "the settings above.")
    return st.session_state.get(key), current


# -- settings shared across views -------------------------------------------------------

def shared_settings(mapping: dict[str, str]) -> None:
    """Carry common settings (dataset, ε, δ, T, seed) from view to view.

    ``mapping`` maps a shared name to this view's widget key.  A widget that has no
    state yet (first visit, or Streamlit dropped it while another view was shown)
    starts from the value last set in any view; call :func:`publish_settings` after
    the widgets to record this view's values.
    """
    for name, key in mapping.items():
        shared = st.session_state.get(f"shared_{name}")
        if key not in st.session_state and shared is not None:
            st.session_state[key] = shared


def publish_settings(mapping: dict[str, str]) -> None:
    for name, key in mapping.items():
        if key in st.session_state:
            st.session_state[f"shared_{name}"] = st.session_state[key]
