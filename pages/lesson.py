from pages.boot import load_core

load_core()  # before the core: a new server can run a view before app.py (pages/boot.py)

import math
from urllib.parse import urlsplit

import plotly.graph_objects as go
import streamlit as st

from dpcore import lesson
from dpcore.experiments.run import RunSpec
from dpcore.figures.charts import NOTE, privacy_region_figure, tradeoff_figure
from dpcore.figures.views import lesson_noise_figure, lesson_places_figure, lesson_skew_figure, odds_figure
from dpcore.figures.result import best_central_words
from dpcore.report import LessonStep, lesson_html
from dpcore.experiments.baselines import row_lambdas
from pages.common import (
    LEAKING_AUDIT,
    LEAKING_THREAT,
    LEAKING_TRIALS,
    app_context,
    audit_view_state,
    download_code,
    enter_view,
    fmt_eps,
    held_within,
    reference_for,
    show_chart,
)
from pages.auditview import FOLD, noise_check_line, show_verdict, show_verdict_box, show_verdict_details, verdict_text
from pages.links import restore_from_url, share_link, url_text, write_to_url

enter_view("lesson")
#: on a projector (presenter mode) each step's header, words, whole chart and settings line fit one
#: 1400 × 900 screen (:func:`presenter_height`)
PRESENTING = bool(st.session_state.get("present"))
if not PRESENTING:  # the step's own header says where the class is
    st.title("A lesson in six steps")
URL_KEYS = {"lesson_step": 1}  # the step shown (each step's "Open this step live" link sets it)
restore_from_url(URL_KEYS)
DATA, BASE = lesson.DATA, lesson.BASE
# the Audit view's leaking setup: DP-GD with the published formula at c = 0.1 (dpcore.lesson)
LEAKING = LEAKING_AUDIT
NOISE_EPS, PLACES, PLACES_EPS = lesson.NOISE_EPS, lesson.PLACES, lesson.PLACES_EPS


# each step's computation (dpcore.lesson: read from the app's stores, which "Prepare for class" fills),
# kept in this process too
@st.cache_data(show_spinner="Running this step's trainings (Prepare for class computes them ahead)…")
def _step(name: str):
    return getattr(lesson, name)(app_context())


def odds() -> go.Figure:
    return odds_figure()  # as the step's export draws it (dpcore.figures.views), and the lesson's file


def _reference_line(spec: RunSpec) -> tuple[float, str]:
    """The one non-private reference of the lesson's data (value, label), as every view draws it."""
    ref = reference_for(spec)
    return ref.value, ref.label


def noise() -> go.Figure:
    rows = _step("noise_rows")
    # the one non-private reference every view draws
    return lesson_noise_figure(rows, reference_for(BASE, row_lambdas(rows, BASE.lam)))


def places() -> go.Figure:
    return lesson_places_figure(_step("places_rows"))


def skew() -> go.Figure:
    return lesson_skew_figure(_step("skew_rows"))


def audited() -> go.Figure:
    return privacy_region_figure(_step("audit_record"))


def audit_numbers(rec: dict) -> str:
    return (f"**ε target** {fmt_eps(rec['epsilon_target'])} · **ε certified** {fmt_eps(rec['epsilon_certified'])} · "
            f"**ε audited** (lower bound) {fmt_eps(rec['epsilon_lower_bound'])}.")


def audit_line() -> str:
    """The verdict in the Audit view's words, then the step's numbers (the lesson's file: one paragraph)."""
    rec = _step("audit_record")
    return f"{verdict_text(rec, sep=' ')} {audit_numbers(rec)}"


def show_audit_line() -> list[str]:
    """The verdict as the Audit view draws it (pages.auditview.show_verdict), the step's numbers under
    it; returns the blocks of words shown, for the presenter's height.  On a projector only the box
    (one paragraph) stands above the chart; its numbers and fold follow the settings
    (:func:`show_audit_details`), so the whole chart fits the screen."""
    rec = _step("audit_record")
    if PRESENTING:
        show_verdict_box(rec, compact=True)
        return [verdict_text(rec, sep=" ", short=True)]
    show_verdict(rec, lambda: st.markdown(audit_numbers(rec)))
    return [audit_numbers(rec), verdict_text(rec), noise_check_line(rec) or "", FOLD]


def show_audit_details() -> None:
    """On a projector, under the step's settings: the numbers and the fold the Audit view shows under
    its verdict box (pages.auditview.show_verdict_details)."""
    rec = _step("audit_record")
    show_verdict_details(rec, lambda: st.markdown(audit_numbers(rec)))


_RUNS = f"{BASE.dataset}, logistic regression, T = {BASE.iterations}, δ = {BASE.delta:g}"
#: each step's view as the app's navigation names it (app.py's PAGES), by its URL path
VIEW_NAMES = {"glossary": "Glossary", "explore": "Explore", "compare": "Compare",
              "local_central": "Local vs central", "distributed": "Distributed", "audit": "Audit"}


#: (title, what to say, the view to try it in (its URL path), the one chart, the settings that made it,
#: a line printed beside the chart or None)
STEPS = [
    ("What ε means", "Differential privacy bounds how much replacing **one record** can change what anyone "
     "concludes from the model: by at most a factor of e to the power ε in the odds, up to a small slack δ. "
     "Small ε, strong privacy.", "glossary", odds, "e to the power ε at ε = 0.1, 0.5, 1, 2, 5 (no data)", None),
    ("Noise costs accuracy", "The guarantee is bought with noise. As ε grows the noise shrinks and the private "
     "model approaches the non-private one (dotted: the best exact model over the λ's a private run may "
     "use). At ε = 0.01 the noise drowns the data: on average the model does worse than always answering "
     "the majority class, and its runs scatter from nearly right to mostly wrong (the band: one standard "
     "deviation over the repeats).", "explore", noise,
     f"DP-GD, certified calibration, {_RUNS}, {BASE.repeats} repeats, ε = {', '.join(f'{e:g}' for e in NOISE_EPS)}",
     None),
    ("Four places to add noise", "Perturb the output, the objective, every gradient, or the data themselves. "
     "They cost different amounts at the same ε. Objective perturbation pays twice at small ε: for its "
     "noise, and for the extra regularisation its proof demands (Δ ≥ 2λ_H/ε), which pulls the model "
     "towards zero. On this data its gap is still ≈ 2 at ε = 1, where output perturbation's has fallen to "
     "≈ 0.1.", "compare", places,
     f"{', '.join(PLACES)}, certified calibration, {_RUNS}, {BASE.repeats} repeats, "
     f"ε = {', '.join(f'{e:g}' for e in PLACES_EPS)}", None),
    ("Local vs central", "Central mechanisms trust the server with the raw data (local ε = ∞); input "
     "perturbation protects each record from the server too, at a price. Fukuchi et al.'s input perturbation "
     "can land far *below* guessing at local ε = 1: each patient's noise is about ten times their own record, "
     "the statistics the server solves with are mostly noise, and the data only pick the model's sign, often "
     "wrongly; such a model, turned around, scores well. Its two runs here are both turned around; over many "
     "runs it averages about what guessing scores, and a larger ε (about 3 here) lets the data win.",
     "local_central",
     lambda: tradeoff_figure(_step("tradeoff_result"), *_reference_line(BASE)), f"every mechanism at ε = 1, {_RUNS}, 2 repeats",
     lambda: best_central_words(_step("tradeoff_result"), _reference_line(BASE)[0], short=True)),  # the dotted line
    ("Skewed clients", "Split the data over clients of very different sizes and weigh each client either by "
     "its share of the data (WD-DP) or equally (plain averaging). On this small, easy dataset at ε = 1 the "
     "two stay within each other's bands (averaging is even a little higher): with a certified, per-client "
     "noise, the small clients add little. Whether weighting pays depends on how noisy the small clients "
     "are: try a smaller ε, a larger skew or the published calibration in the Distributed view.",
     "distributed", skew, f"WD-DP and plain averaging on 4 clients, skew u = 1, 2, 4, 8, ε = 1, {_RUNS}, 3 repeats",
     None),
    # one line of words: the verdict box under it says the rest (two audits, which claim), and on a
    # projector the box, the chart's notes and its settings must fit one 1400 × 900 screen
    ("What an audit shows", "Watch every noisy step of a thousand trainings: the audit bounds ε from below, and "
     "too small a constant leaks.", "audit", audited,
     f"white-box audit of DP-GD with the published formula at c = {LEAKING.c:g}, target ε = {LEAKING.epsilon:g}, "
     f"{_RUNS}, {LEAKING_TRIALS:,} trainings a side, seed {LEAKING.seed}", audit_line),
]


#: each step's chart as its view's own settings (the view's declared link keys): "Try it yourself"
#: opens the view at exactly what the chart shows
TRY = {
    "glossary": {},
    "explore": {"ex_dataset": DATA, "ex_model": "logreg", "ex_mechanism": "gradient-dpgd", "ex_epsilon": 1.0,
                "ex_delta": BASE.delta, "ex_T": BASE.iterations, "ex_R": BASE.repeats, "ex_lam": 1e-3, "ex_lr": 1.0,
                "ex_calibration": "certified", "ex_seed": 0},
    "compare": {"cmp_dataset": DATA, "cmp_model": "logreg", "cmp_mechs": list(PLACES),
                "cmp_eps": ", ".join(f"{e:g}" for e in PLACES_EPS), "cmp_delta": BASE.delta, "cmp_T": BASE.iterations,
                "cmp_R": BASE.repeats, "cmp_lam": 1e-3, "cmp_cal": "certified", "cmp_tuned": False},
    "local_central": {"lc_dataset": DATA, "lc_epsilon": 1.0, "lc_delta": 1e-5, "lc_R": 2, "lc_T": 100},
    "distributed": {"dist_dataset": DATA, "dist_model": "logreg", "dist_m": 4, "dist_u": 4.0, "dist_epsilon": 1.0,
                    "dist_delta": 1e-5, "dist_cal": "certified", "dist_T": 100, "dist_R": 3},
    "audit": audit_view_state(LEAKING, LEAKING_TRIALS, LEAKING_THREAT),
}


def try_link(view: str, base: str = "") -> str:
    """The link that opens ``view`` at this step's settings (``base``: the app's address; empty: a
    link relative to the app)."""
    params = {k: url_text(v) for k, v in TRY[view].items()}
    return share_link(f"{base.rstrip('/')}/{view}", params)


def lesson_file(base_url: str) -> str:
    """Every step, computed (cached after the first time), as one offline HTML file whose links
    go to ``base_url`` (the app's address students can reach)."""
    steps = []
    for k, (title, text, view, chart, settings, line) in enumerate(STEPS, 1):
        steps.append(LessonStep(title, text + f" [Try it yourself in the {VIEW_NAMES[view]} view]"
                                f"({try_link(view, base_url)}).",
                                chart(), settings, share_link(f"{base_url.rstrip('/')}/lesson", {"lesson_step": str(k)}),
                                line() if line else ""))
    return lesson_html("A lesson in six steps: differentially private learning", steps,
                       source="Made with the DP-ERM teaching app; each step's link reopens it live.")


#: Presenter mode at 1400 × 900, measured in Chromium: the step's words start WORDS_TOP px down
#: (under the step buttons and the header); a line of words (22 px type) is WORD_LINE px high and
#: holds 116–123 characters (WORD_CHARS: fewer, to be safe), a line of the settings caption
#: CAPTION_LINE px and about 150 (CAPTION_CHARS); Streamlit puts GAP px between two elements.
SCREEN, WORDS_TOP, GAP = 900, 270, 22
WORD_LINE, WORD_CHARS, CAPTION_LINE, CAPTION_CHARS = 35, 112, 31, 135
#: the chart's height in presenter mode: never so small that the plot is a strip, never taller than
#: the class needs to read it
PRESENTER_HEIGHTS = (225, 420)


def presenter_height(blocks: list[str], caption: str) -> int:
    """The chart's height in presenter mode: what one 1400 × 900 screen has left once the step's
    ``blocks`` of words (its text, the line beside the chart, the chart's title and notes: each an
    element, its lines estimated from its length) are around the chart and the one-line-or-two
    ``caption`` (settings and the "Try it yourself" link) is below it.  A step with few words gets a tall
    chart, a step with many a shorter one, and nothing falls below the screen: the chart is what
    the class looks at, and every word of the step is what the lecturer talks through."""
    def lines(text: str, per_line: int) -> int:  # Markdown's stars are not on screen
        return max(1, math.ceil(len(text.replace("*", "")) / per_line))

    used = WORDS_TOP + sum(lines(b, WORD_CHARS) * WORD_LINE + GAP for b in blocks if b)
    used += GAP + lines(caption, CAPTION_CHARS) * CAPTION_LINE  # under the chart
    low, high = PRESENTER_HEIGHTS
    return int(min(high, max(low, SCREEN - 8 - used)))  # 8 px: the screen's edge is not a line to touch


def _move(by: int) -> None:
    """Step forward or back (a callback: the buttons then render with the new step)."""
    st.session_state["lesson_step"] = min(max(int(st.session_state.get("lesson_step", 1)) + by, 1), len(STEPS))


step = held_within("lesson_step", "lesson_step", 1, len(STEPS), 1)  # a link's step beyond the lesson: said
c1, c2, c3 = st.columns([1, 4, 1])
c1.button("← previous", key="lesson_prev", disabled=step == 1, on_click=_move, args=(-1,))
c3.button("next →", key="lesson_next", disabled=step == len(STEPS), on_click=_move, args=(1,))
title, text, view, chart, settings, line = STEPS[step - 1]
c2.progress(step / len(STEPS), text=f"step {step} of {len(STEPS)}")
write_to_url(list(URL_KEYS))
st.header(f"{step}. {title}")
st.markdown(text)
if view == "audit":  # the verdict box and its fold, as the Audit view draws them
    said = show_audit_line()
else:
    said = [line() if line else ""]
    if said[0]:
        st.markdown(said[0])
figure = chart()
try_it = f"Try it yourself in the {VIEW_NAMES[view]} view →"
if PRESENTING:
    # One screen: the chart takes the room the words leave, and the settings and the link share
    # one small line under it (the lecturer's, not the class's: what the class reads is the words
    # and the chart, so they get the screen).
    words = [text, *said, figure.layout.title.text or ""] + [a.text for a in figure.layout.annotations
                                                            if a.name == NOTE]  # show_chart writes notes below
    figure.update_layout(height=presenter_height(words, f"Settings: {settings} · {try_it}"))
show_chart(figure)
if PRESENTING:
    st.caption(f"Settings: {settings} · [{try_it}]({try_link(view)})")
    if view == "audit":
        show_audit_details()
else:
    st.caption(f"Settings: {settings}")
    st.markdown(f"[{try_it}]({try_link(view)})")
with st.sidebar.expander("Take the lesson away"):
    st.caption("Every step's text, chart and settings in one HTML file that opens offline, each step with "
               "links that reopen it live, at the address below. The first time, every step is computed.")
    here = urlsplit(getattr(st.context, "url", None) or "")
    st.session_state.setdefault("lesson_base", f"{here.scheme}://{here.netloc}" if here.netloc else "")
    base = st.text_input("The app's address for students", key="lesson_base",
                         help="Where students open this app, e.g. http://192.168.1.20:8501 on the class network. "
                              "The file's links start with it.")
    if urlsplit(base).hostname in ("localhost", "127.0.0.1", "::1", "0.0.0.0"):
        st.warning(f"{base} is this computer's own name: on a student's machine the links would open their own "
                   "computer. Give the address students reach (your machine on the class network, or the server's).")
    if st.button("Prepare the lesson file", key="lesson_export"):
        with st.spinner("Computing every step…"):
            st.session_state["lesson_html"] = lesson_file(base)
    if st.session_state.get("lesson_html"):
        st.download_button("Download the lesson (HTML)", st.session_state["lesson_html"].encode(),
                           file_name="dp-erm-lesson.html", mime="text/html", key="lesson_download")
    st.caption("This step as code that computes it again:")
    download_code("lesson", URL_KEYS, "lesson_dl_code")  # this step as a notebook and a script
