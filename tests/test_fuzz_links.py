"""Every view's link keys, given values outside their range and of the wrong type (issue 55).

The keys come from the views themselves: each page's ``URL_KEYS`` (and ``URL_PREFIXES``, the option
boxes a mechanism declares) is read from its source, and the value classes from each key's default
(its type) and from the declared range of the control that writes it (:data:`dpcore.params.PARAMS`,
the certify view's declarations, a raw slider's bounds).  A link opens the view in a fresh session
(``AppTest``), and :func:`verdict` checks what a class would see:

* no exception;
* the session holds a value its control accepts (in the number box's range, among the options …);
* whenever the value the view uses is not the link's value (replaced, clamped, refused, or a key the
  link gives twice), a note (``st.warning``) names the key or its control's label.

The default run opens a deterministic sample, every key once and every value class of every view at
least once, plus a repeated key for each view; the whole cross product is marked slow.  Both come
from :func:`cases`.  The check of the check silences the notes and shows the verdict catching it.

``python tests/test_fuzz_links.py [COUNT] [SEED]`` runs the random campaign (:func:`campaign`: random
values for random keys of random views) and prints its tally.
"""

from __future__ import annotations

import ast
import math
import random
import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import _format_value_for_widget

ROOT = Path(__file__).resolve().parent.parent
if __name__ == "__main__":  # run as a script (the campaign): what tests/conftest.py does for pytest
    import os
    import tempfile

    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DPCORE_CACHE_DIR", tempfile.mkdtemp(prefix="dpcore-links-"))

from dpcore.certify.core import CERTIFY_PARAMS  # noqa: E402
from dpcore.experiments.presets import PRESETS as PAPER_PRESETS  # noqa: E402
from dpcore.mechanisms import REGISTRY  # noqa: E402
from dpcore.params import PARAMS, Interval, Param  # noqa: E402
from pages.links import url_text, url_value  # noqa: E402

PAGES = ROOT / "pages"

# -- the declarations -------------------------------------------------------------------------


def _uses_streamlit(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "st" for n in ast.walk(node))


def declaration(path: Path) -> tuple[dict, dict]:
    """A page's ``URL_KEYS`` and ``URL_PREFIXES`` as the page evaluates them: its imports and the plain
    assignments before them run (nothing that touches Streamlit), then the two declarations."""
    tree = ast.parse(path.read_text(), str(path))
    ns: dict = {}
    found: dict = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            exec(compile(ast.Module([node], []), str(path), "exec"), ns)  # noqa: S102
        elif (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
              and not _uses_streamlit(node.value)):
            name = node.targets[0].id
            try:
                value = eval(compile(ast.Expression(node.value), str(path), "eval"), ns)  # noqa: S307
            except Exception:  # noqa: BLE001 - a later statement the declaration does not need
                if name in ("URL_KEYS", "URL_PREFIXES"):
                    raise
                continue
            ns[name] = value
            if name in ("URL_KEYS", "URL_PREFIXES"):
                found[name] = value
        if "URL_KEYS" in found and isinstance(node, ast.Expr) and "restore_from_url" in ast.unparse(node):
            break
    return found.get("URL_KEYS", {}), found.get("URL_PREFIXES", {})


def restores(path: Path) -> bool:
    """Whether a page seeds its state from the link (calls ``restore_from_url`` at its top level)."""
    return any(isinstance(node, ast.Expr) and ast.unparse(node).startswith("restore_from_url(")
               for node in ast.parse(path.read_text()).body)


def _prefixed_keys(prefixes: dict) -> dict:
    """The keys of a view's families of widgets (``ex_opt_<mechanism>_<option>``) with their declared
    defaults: every mechanism option, kept where the family's declaration knows it."""
    out = {}
    for prefix, default_of in prefixes.items():
        for mid, cls in REGISTRY.items():
            for name in cls.options:
                key = f"{prefix}{mid}_{name}"
                default = default_of(key)
                if default is not None:
                    out[key] = default
    return out


#: the declarations a number's control reads its range from: (pattern of the call in a page, table)
RANGE_SOURCES = ((r'param_widget\(\s*"(\w+)",\s*"(\w+)"', PARAMS),
                 (r'_bounded\(\s*"(\w+)",\s*"(\w+)"', CERTIFY_PARAMS))  # the certify view's declared_number


def _ranges(path: Path) -> dict:
    """key → (low, high) of the control that writes it: the widest of a declaration's range and its
    widget's, or a raw slider's bounds (``bounded_slider(label, lo, hi, key, …)``)."""
    text = path.read_text()
    out = {}
    for pattern, table in RANGE_SOURCES:
        for name, key in re.findall(pattern, text):
            out[key] = _param_range(table[name])
    for lo, hi, key in re.findall(r'bounded_slider\(\s*"[^"]*",\s*([-\d.e]+),\s*([-\d.e]+),\s*"(\w+)"', text):
        out[key] = (float(lo), float(hi))
    return out


def _param_range(p: Param) -> tuple[float, float] | None:
    cons = p.constraint
    if not isinstance(cons, Interval):
        return None
    lows = [v for v in (cons.low, p.ui_min) if v is not None]
    highs = [v for v in (cons.high, p.ui_max) if v is not None]
    return (min(lows) if lows else None, max(highs) if highs else None)


@dataclass(frozen=True)
class View:
    page: str
    keys: dict  # key → default (the declared URL_KEYS and the prefix families' keys)
    ranges: dict  # key → (low, high) for a number whose control declares a range


@lru_cache(maxsize=None)
def views() -> tuple[View, ...]:
    out = []
    for path in sorted(PAGES.glob("*.py")):
        if not restores(path):
            continue
        keys, prefixes = declaration(path)
        out.append(View(path.name, {**keys, **_prefixed_keys(prefixes)}, _ranges(path)))
    return tuple(out)


def view(page: str) -> View:
    return next(v for v in views() if v.page == page)


#: the link settings under which a control is drawn, for a control only some settings show (a key
#: whose control is never drawn fails the test until it is added here or to NO_CONTROL)
REVEAL = {
    "certify.py": {"cert_steps": {"cert_length": "steps"}, "cert_batch": {"cert_rate": "batch and dataset size"},
                   "cert_n": {"cert_rate": "batch and dataset size"}, "cert_sigma": {"cert_mechanism": "gaussian"},
                   "cert_sens": {"cert_mechanism": "gaussian"}, "cert_k": {"cert_mechanism": "gaussian"},
                   "cert_target": {"cert_ask": "true"}},
    "explore.py": {"ex_q": {"ex_mechanism": "gradient-dpsgd"}, "ex_batch": {"ex_mechanism": "output-bolt-on"},
                   "ex_m": {"ex_mechanism": "distributed-wddp"}, "ex_u": {"ex_mechanism": "distributed-wddp"},
                   "ex_c": {"ex_calibration": "published"},
                   # the toggle shows where a tuning is shipped (Adult's; a mechanism that trains at once)
                   "ex_auto_tuned": {"ex_dataset": "adult", "ex_mechanism": "output-gaussian"}},
    "compare.py": {"cmp_clients": {"cmp_mechs": "distributed-wddp"}, "cmp_skew": {"cmp_mechs": "distributed-wddp"}},
    # the canary box is drawn under black-box only (the view opens white-box)
    "audit.py": {"au_c": {"au_cal": "published"}, "au_canary": {"au_threat": "black-box"}},
}
#: settings a view holds without a control of their own, and the values it can use
NO_CONTROL = {("compare.py", "cmp_paper"): lambda v: v in ("", *PAPER_PRESETS),  # a seed figure's setting
              ("lesson.py", "lesson_step"): lambda v: v in range(1, 7),  # "A lesson in six steps"
              # whether the link brings the view's result (pages.links.linked_result): true or false
              **{(page, flag): (lambda v: isinstance(v, bool)) for page, flag in (
                  ("compare.py", "cmp_shown"), ("tune.py", "tu_shown"), ("local_central.py", "lc_shown"),
                  ("distributed.py", "dist_shown"), ("theory.py", "th_shown"), ("explore.py", "ex_audited"),
                  ("audit.py", "au_shown"), ("audit.py", "au_onerun_shown"))}}


def reveal(page: str, key: str) -> dict:
    """The settings that draw ``key``'s control (an option box: its mechanism's)."""
    if key.startswith("ex_opt_"):
        mid = next(m for m in sorted(REGISTRY, key=len, reverse=True) if key.startswith(f"ex_opt_{m}_"))
        return {"ex_mechanism": mid}
    return dict(REVEAL.get(page, {}).get(key, {}))


# -- the value classes ------------------------------------------------------------------------

NUMBER = ("below", "above", "negative", "zero", "huge", "text", "nan", "inf", "empty")
CHOICE = ("unknown", "empty")
LIST = ("unknown items", "empty")
FLAG = ("maybe", "empty")
REPEATED = "repeated"


def kind(default) -> str:
    if isinstance(default, bool):
        return "flag"
    if isinstance(default, (int, float)):
        return "number"
    if isinstance(default, (list, tuple)):
        return "list"
    return "choice"


def classes(v: View, key: str) -> tuple[str, ...]:
    k = kind(v.keys[key])
    if k == "number":
        known = v.ranges.get(key)
        return tuple(c for c in NUMBER if c not in ("below", "above") or (known and known[c == "above"] is not None))
    return {"flag": FLAG, "list": LIST, "choice": CHOICE}[k]


def raw_value(v: View, key: str, cls: str) -> tuple[str, ...]:
    """The link's text(s) for ``key`` in value class ``cls`` (two for a repeated key)."""
    default = v.keys[key]
    if cls == REPEATED:  # the last one (the one used) is the default: only the repetition is news
        return ("no-such-value", url_text(default))
    fixed = {"negative": "-1", "zero": "0", "huge": "1e20", "text": "abc", "nan": "nan", "inf": "inf", "empty": "",
             "unknown": "no-such-choice", "maybe": "maybe"}
    if cls in fixed:
        return (fixed[cls],)
    if cls == "unknown items":
        return (",".join(["no-such-item", *map(str, default[:1])]),)
    lo, hi = v.ranges[key]
    integral = isinstance(default, int)
    if cls == "below":
        return (str(int(lo) - 1) if integral else repr(lo / 10 if lo > 0 else lo - 1.0),)
    return (str(int(hi) + 1) if integral else repr(hi * 10 if hi > 0 else hi + 1.0),)


@dataclass(frozen=True)
class Case:
    page: str
    key: str
    cls: str

    @property
    def id(self) -> str:
        return f"{self.page[:-3]}:{self.key}={self.cls}"

    def link(self) -> dict:
        v = view(self.page)
        raws = raw_value(v, self.key, self.cls)
        return {**reveal(self.page, self.key), self.key: raws[0] if len(raws) == 1 else list(raws)}


def cases(sample: bool) -> list[Case]:
    """Every key of every view with each of its value classes and a repetition (``sample=False``), or
    a deterministic sample of them: each key once (its classes taken in turn), then each value class
    a view's keys have that the sample has not covered yet, then one repeated key a view."""
    out = []
    for vi, v in enumerate(views()):
        keys = list(v.keys)
        if not keys:  # said by test_the_declarations_are_read_from_every_view
            continue
        if not sample:
            out += [Case(v.page, k, c) for k in keys for c in (*classes(v, k), REPEATED)]
            continue
        chosen = [Case(v.page, k, classes(v, k)[i % len(classes(v, k))]) for i, k in enumerate(keys)
                  if not k.startswith("ex_opt_") or i % 3 == 0]  # a third of the option boxes
        for c in dict.fromkeys(c for k in keys for c in classes(v, k)):
            if c not in {x.cls for x in chosen}:
                having = [k for k in keys if c in classes(v, k)]
                chosen.append(Case(v.page, having[vi % len(having)], c))
        chosen.append(Case(v.page, keys[vi % len(keys)], REPEATED))
        out += chosen
    return out


# -- opening a link and judging it ------------------------------------------------------------

WIDGETS = ("number_input", "slider", "select_slider", "selectbox", "radio", "multiselect", "checkbox", "toggle",
           "text_input")


def open_link(page: str, link: dict) -> AppTest:
    at = AppTest.from_file(str(PAGES / page), default_timeout=300)
    for key, raw in link.items():
        at.query_params[key] = raw
    return at.run()


def control(at: AppTest, key: str):
    for name in WIDGETS:
        for w in getattr(at, name):
            if w.key == key:
                return w
    return None


def accepts(w, value) -> bool:
    """Whether the drawn control ``w`` holds ``value`` as one of its own values."""
    label = lambda x: _format_value_for_widget(w.format_func, x)  # noqa: E731
    if w.type in ("checkbox", "toggle"):
        return isinstance(value, bool)
    if w.type == "text_input":
        return isinstance(value, str)
    if w.type == "number_input":
        return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                and (w.min is None or value >= w.min) and (w.max is None or value <= w.max))
    if w.type == "slider":
        return isinstance(value, (int, float)) and w.proto.min <= value <= w.proto.max
    if w.type == "multiselect":
        return isinstance(value, (list, tuple)) and all(label(x) in w.options for x in value)
    return label(value) in w.options  # selectbox, radio, select_slider


def notes(at: AppTest) -> list[str]:
    return [w.value for w in at.warning]


def names(note: str, key: str, label: str | None) -> bool:
    """Whether a note names the key, or (a note about the link) its control's label."""
    if key in note:
        return True
    if not label:
        return False
    low = note.lower()
    return label.lower() in low and ("link" in low or "uploaded in another session" in low)


_MISSING = object()


def verdict(at: AppTest, page: str, key: str, raws, default, *, control_optional: bool = False) -> str | None:
    """``None`` when the view did right by the link's ``key`` (its texts ``raws``), else what went wrong:
    "exception …", "invalid …" (the session holds a value its control refuses) or "silent …" (the
    value used is not the link's, and no note names it).  ``control_optional``: a key whose control
    other settings of the same link hide is not judged (a random campaign's link)."""
    if at.exception:
        return f"exception: {at.exception[0].value[:300]}"
    raws = [raws] if isinstance(raws, str) else list(raws)
    held = at.session_state[key] if key in at.session_state else _MISSING
    w = control(at, key)
    if w is None and (page, key) not in NO_CONTROL:
        return None if control_optional else f"invalid: no control drawn for {key}: add its settings to REVEAL"
    if held is not _MISSING:
        if w is not None and not accepts(w, held):
            return f"invalid: {key} holds {held!r}, which its control ({w.type}) refuses"
        if w is None and not NO_CONTROL[page, key](held):
            return f"invalid: {key} holds {held!r}, which the view cannot use"
    try:
        linked = url_value(raws[-1], default)
    except (ValueError, OverflowError):
        linked = _MISSING
    used_as_given = linked is not _MISSING and held is not _MISSING and _same(held, linked)
    if used_as_given and len(set(raws)) == 1:
        return None
    if any(names(n, key, w.label if w is not None else None) for n in notes(at)):
        return None
    why = "given twice" if used_as_given else f"{raws[-1]!r} → {'nothing' if held is _MISSING else repr(held)}"
    return f"silent: {key} {why}, and no note names it (notes: {notes(at)})"


def _same(a, b) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return list(a) == list(b)
    return type(a) is not bool and type(b) is not bool and a == b or a is b


def judge(case: Case) -> str | None:
    link = case.link()
    at = open_link(case.page, link)
    return verdict(at, case.page, case.key, link[case.key], view(case.page).keys[case.key])


# -- the tests --------------------------------------------------------------------------------

SAMPLE = cases(sample=True)
EVERY = cases(sample=False)


def test_the_declarations_are_read_from_every_view():
    pages = {v.page for v in views()}
    assert all(v.keys for v in views())  # a view that restores from a link declares what
    assert {"explore.py", "compare.py", "certify.py", "distributed.py", "lesson.py", "tune.py"} <= pages
    assert view("explore.py").keys["ex_q"] == PARAMS["sample_rate"].default  # evaluated, not parsed as text
    assert any(k.startswith("ex_opt_") for k in view("explore.py").keys)  # the option boxes' family
    assert view("local_central.py").ranges["lc_T"] == (10.0, 500.0)  # a raw slider's bounds
    assert view("certify.py").ranges["cert_q"] == (1e-6, 1.0)
    assert sum(len(v.keys) for v in views()) >= 100


def test_the_sample_covers_every_key_class_and_view():
    for v in views():
        sampled = [c for c in SAMPLE if c.page == v.page]
        assert {c.cls for c in sampled} == {c for k in v.keys for c in classes(v, k)} | {REPEATED}, v.page
        missing = {k for k in v.keys if not k.startswith("ex_opt_")} - {c.key for c in sampled}
        assert not missing, (v.page, missing)
    assert {(c.page, c.key, c.cls) for c in SAMPLE} <= {(c.page, c.key, c.cls) for c in EVERY}


@pytest.mark.parametrize("case", SAMPLE, ids=[c.id for c in SAMPLE])
def test_a_bad_link_value_is_refused_with_a_note_never_an_exception(case):
    assert judge(case) is None


_SAMPLED = frozenset(SAMPLE)
SLOW = [c for c in EVERY if c not in _SAMPLED]  # the rest of the cross product


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW, ids=[c.id for c in SLOW])
def test_every_bad_link_value_of_every_view_is_refused_with_a_note(case):
    assert judge(case) is None


def _skew_pairs():
    """(page, clients key, skew key) of every view with a clients and a skew control, from the pages."""
    out = []
    for v in views():
        text = (PAGES / v.page).read_text()
        m = re.search(r'param_widget\(\s*"clients",\s*"(\w+)"', text)
        u = re.search(r'param_widget\(\s*"skew",\s*"(\w+)"', text)
        if m and u:
            out.append((v.page, m.group(1), u.group(1)))
    return out


@pytest.mark.parametrize("page, m_key, u_key", _skew_pairs())
@pytest.mark.parametrize("m, u", [(1, 100.0), (64, 1e6)])  # u = 1e6: within the declared range (u ≥ 1)
def test_a_skew_the_core_refuses_with_these_clients_is_said_and_lowered(page, m_key, u_key, m, u):
    """``distributed?dist_m=1&dist_u=100`` ran with a skew nothing skews; 64 clients at a skew that leaves
    the small clients empty stopped the view with an error.  Now the skew comes down to one the core
    takes (the largest of the slider's), and the note says why."""
    from dpcore import datasets
    from dpcore.partition import check_split

    at = open_link(page, {**reveal(page, u_key), m_key: str(m), u_key: str(u)})
    assert not at.exception
    held = at.session_state[u_key]
    dataset = next(at.session_state[k] for k in at.session_state if k.endswith("_dataset"))
    check_split(datasets.DATASETS[dataset].n_train, at.session_state[m_key], held)  # taken
    assert held < u and any("cannot be used" in n and "skew" in n for n in notes(at)), notes(at)


def test_check_of_the_check_a_missing_note_is_caught(monkeypatch):
    """With the notes silenced (``_say_link_changed`` does nothing, the repeated key is not seen),
    the same links are judged silent: the test would catch a note that goes missing."""
    import streamlit.runtime.state.query_params as qp

    import pages.widgets  # where the notes are written (pages.common re-exports the public names only)

    picked = [Case("explore.py", "ex_epsilon", "below"), Case("explore.py", "ex_mechanism", "unknown"),
              Case("certify.py", "cert_mechanism", "unknown"), Case("certify.py", "cert_q", "above"),
              Case("compare.py", "cmp_paper", "unknown"), Case("local_central.py", "lc_T", "huge"),
              Case("explore.py", "ex_epsilon", REPEATED)]
    assert all(judge(c) is None for c in picked)
    monkeypatch.setattr(pages.widgets, "_say_link_changed", lambda *a, **k: None)
    monkeypatch.setattr(qp.QueryParams, "get_all", lambda self, key: [self[key]] if key in self else [])
    for c in picked:
        assert (judge(c) or "").startswith("silent"), c.id


def test_check_of_the_check_a_value_its_control_refuses_is_caught():
    at = open_link("explore.py", {})
    assert verdict(at, "explore.py", "ex_T", "100", 100) is None
    at.session_state["ex_T"] = 10**9  # what a view that skipped the clamp would hold
    assert verdict(at, "explore.py", "ex_T", "1e9", 100).startswith("invalid")


# -- the random campaign ----------------------------------------------------------------------

WORDS = ("abc", "None", "null", "true", "FALSE", "yes", "1", "0", "-0", "0x10", "1_000", " 2 ", "1,2", "1e-320",
         "-inf", "NaN", "ε", "δ=1", "%20", "<b>x</b>", "'; drop", "x" * 200, "upload:mine", "..", "[]", "{}")


def _random_raw(rng: random.Random, v: View, key: str) -> str:
    default = v.keys[key]
    roll = rng.random()
    if roll < 0.25:
        return rng.choice(WORDS)
    if roll < 0.55:  # a number of any size and sign, written in one of several ways
        x = rng.choice((-1, 1)) * 10 ** rng.uniform(-12, 25)
        return rng.choice((f"{x:g}", repr(x), str(int(x)) if abs(x) < 1e18 else f"{x:e}", f"{x:.3f}"))
    if roll < 0.7:  # a value of another key of any view (a valid value in the wrong place)
        other = rng.choice([x for x in views() if x.keys])
        return url_text(rng.choice(list(other.keys.values())))
    if roll < 0.8 and isinstance(default, (list, tuple)):
        return ",".join(rng.choice((*map(str, default), "no-such-item", "", " ")) for _ in range(rng.randint(1, 4)))
    if roll < 0.9:
        return url_text(default)
    return "".join(rng.choice("abcxyz0123456789.-e,") for _ in range(rng.randint(1, 12)))


@dataclass
class Tally:
    total: int = 0
    clean: int = 0
    exception: int = 0
    silent: int = 0
    invalid: int = 0
    failures: list = field(default_factory=list)

    def add(self, link: dict, page: str, judged: list[str]) -> None:
        self.total += 1
        bad = [j for j in judged if j]
        for kind_ in ("exception", "silent", "invalid"):
            if any(j.startswith(kind_) for j in bad):
                setattr(self, kind_, getattr(self, kind_) + 1)
                break
        else:
            self.clean += 1
        if bad:
            self.failures.append((page, link, bad))


def campaign(count: int = 150, seed: int = 55) -> Tally:
    """``count`` random links, new to the sample: a random view, one to three of its keys (with the
    settings that draw their controls), random text for each, sometimes a key given twice."""
    rng = random.Random(seed)
    seen = {(c.page, tuple(sorted((k, str(x)) for k, x in c.link().items()))) for c in EVERY}
    tally = Tally()
    pool = [v for v in views() if v.keys]
    while tally.total < count:
        v = rng.choice(pool)
        keys = rng.sample(list(v.keys), min(len(v.keys), rng.choice((1, 1, 1, 2, 3))))
        link: dict = {}
        for key in keys:
            link.update({k: x for k, x in reveal(v.page, key).items() if k not in keys})
        for key in keys:
            raw = _random_raw(rng, v, key)
            link[key] = [_random_raw(rng, v, key), raw] if rng.random() < 0.1 else raw
        signature = (v.page, tuple(sorted((k, str(x)) for k, x in link.items())))
        if signature in seen:
            continue
        seen.add(signature)
        at = open_link(v.page, link)
        tally.add(link, v.page, [verdict(at, v.page, k, link[k], v.keys[k], control_optional=len(keys) > 1)
                                 for k in keys])
    return tally


@pytest.mark.slow
def test_a_campaign_of_random_links_is_clean():
    tally = campaign()
    assert tally.clean == tally.total, tally.failures


if __name__ == "__main__":
    count, seed = (int(a) for a in (sys.argv[1:] + ["150", "55"])[:2])
    result = campaign(count, seed)
    print(f"total {result.total}, clean {result.clean}, exception {result.exception}, "
          f"silently replaced/used {result.silent}, invalid value held {result.invalid}")
    for page, link, bad in result.failures:
        print(page, link, bad)
