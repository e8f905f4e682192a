"""What a shown result says beside its numbers, in one place for every view, the command line and the
charts: what guessing scores (:func:`versus_guessing`), a regression's R², and the noise's name
(:func:`noise_words`).

A private model that scores no better than a constant answer has learned nothing the data says:
the noise has drowned it.  Every place that shows a result applies :func:`versus_guessing` to
it, so a collapse is never shown without its box, whichever view the reader is in (issue 68).
Guessing is always answering the training split's majority class (an accuracy) or its mean
label (an RMSE), scored on the test split (:mod:`dpcore.metrics`).

The comparison is made at the digits shown (:data:`DIGITS`): 0.8874 beside a guess of 0.8874
reads as "no better", as a reader would read it.  A regression's R² is taken against the same
constant: ``1 − (RMSE / RMSE of guessing)²``, 0 for a model that does as well as the mean
label and negative for one that does worse.

>>> v = versus_guessing({"accuracy_mean": 0.4501, "accuracy_guess": 0.8874, "guess_class": "no"})
>>> v.no_better, v.worse
(True, True)
>>> v.words
'always answering the majority class, “no”'
>>> round(r_squared(0.1, 0.2), 4)
0.75
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from types import SimpleNamespace

from ..mechanisms import REGISTRY, short_name
from ..erm import MLP_RESTARTS
from ..exceptions import DPCoreError
from ..models import MODELS
from ..params import PARAMS
from ..partition import client_sizes
from .missed import join_words

__all__ = ["clip_words", "DIGITS", "Guessing", "versus_guessing", "r_squared", "r_squared_words", "no_better_rows", "no_better_groups", "runs_no_better", "from_zero",
           "noise_words", "noise_name", "sampling_of", "sampling_words", "sampling_note", "search_cost", "search_spent_words",
           "tuning_cost_note", "row_lam", "gap_objective_words", "gap_objectives_note", "best_central",
           "best_central_label", "best_central_words", "curve_note", "measured_note",
           "curve_point_name", "realised_skew", "skew_words", "split_skew_words", "reference_terms",
           "realised_skew_rows"]

#: results and guesses are compared at the digits the views and the command line print
DIGITS = 4


def r_squared(rmse: float, rmse_guess: float) -> float:
    """``1 − (rmse / rmse_guess)²``: the share of the test labels' spread around the training mean
    that the model explains (0: no better than predicting that mean; below 0: worse)."""
    if not (rmse_guess > 0 and math.isfinite(rmse_guess) and math.isfinite(rmse)):
        return math.nan
    return 1.0 - (rmse / rmse_guess) ** 2


def r_squared_words(rmse: float, rmse_guess: float, who: str = "private model") -> str:
    """A regression's R² named for whose it is, to stand beside that model's RMSE (issue 68, M4: an R²
    printed among the reference values was read as theirs).  The same words in every view.

    >>> r_squared_words(0.1859, 0.2288)
    'R² of the private model 0.340'
    >>> r_squared_words(0.1107, 0.2288, "non-private model")
    'R² of the non-private model 0.766'
    """
    r2 = r_squared(rmse, rmse_guess)
    return f"R² of the {who} " + ("–" if math.isnan(r2) else f"{r2:.3f}")


@dataclass(frozen=True)
class Guessing:
    """One result beside what guessing scores on the same test split."""

    metric: str  # "accuracy" or "rmse"
    value: float
    guess: float
    words: str  # what guessing answers, in words ("always answering the majority class, “>50K”")

    @property
    def no_better(self) -> bool:
        """Scores at most what guessing scores, at the digits shown (the box is due)."""
        v, g = round(self.value, DIGITS), round(self.guess, DIGITS)
        return v <= g if self.metric == "accuracy" else v >= g

    @property
    def worse(self) -> bool:
        """Scores strictly worse than guessing, at the digits shown."""
        v, g = round(self.value, DIGITS), round(self.guess, DIGITS)
        return v < g if self.metric == "accuracy" else v > g

    def sentence(self, who: str = "this private model") -> str:
        """"No better than guessing: … scores better than this private model." """
        return (f"No better than guessing: {self.words} "
                + (f"scores better than {who}" if self.worse else f"scores as well as {who}")
                + f" ({self.label}: guessing {self.guess:.{DIGITS}f}, {who} {self.value:.{DIGITS}f}).")

    @property
    def label(self) -> str:
        return "accuracy" if self.metric == "accuracy" else "RMSE"


def _finite(v) -> bool:
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def versus_guessing(row: dict, guess: float | None = None) -> Guessing | None:
    """``row`` (a run's record or a sweep's row: ``accuracy_mean`` or ``rmse_mean``) beside what
    guessing scores (its ``accuracy_guess`` / ``rmse_guess``, or ``guess`` when the row carries
    none); ``None`` when either is missing or not finite."""
    for metric in ("accuracy", "rmse"):
        value = row.get(f"{metric}_mean")
        g = row.get(f"{metric}_guess")
        g = guess if g is None else g
        if _finite(value) and _finite(g):
            if metric == "accuracy":
                cls = row.get("guess_class")
                words = ("always answering the majority class" + (f", “{cls}”" if cls else ""))
            else:
                words = "always predicting the training split's mean label"
            return Guessing(metric, float(value), float(g), words)
    return None


def no_better_rows(rows, guess: float | None = None) -> list[tuple[dict, Guessing]]:
    """The rows whose result is no better than guessing, each with its comparison."""
    out = []
    for r in rows:
        v = versus_guessing(r, guess)
        if v is not None and v.no_better:
            out.append((r, v))
    return out


def runs_no_better(record: dict) -> str | None:
    """The runs of a record (its ``runs``' ``accuracy`` or ``rmse``) that score no better than guessing while
    their mean does (a lecturer's walk: input (Kang) at ε = 1 showed 0.8599 ± 0.1472 over 5 runs and no
    flag, with seed 3 at 0.5985 under guessing's 0.6496, seen only in the JSON); ``None`` when there are
    none, or when the mean itself is no better (the view's box says so then).

    >>> runs_no_better({"accuracy_mean": 0.86, "accuracy_guess": 0.6496, "runs": [{"seed": s, "accuracy": a}
    ...                 for s, a in enumerate((0.93, 0.92, 0.91, 0.5985, 0.94))]})
    '1 of 5 runs scores no better than guessing (seed 3: 0.5985; guessing 0.6496): the mean hides it.'
    """
    versus = versus_guessing(record)
    if versus is None or versus.no_better:
        return None
    key = "accuracy" if versus.metric == "accuracy" else "rmse"
    runs = [r for r in record.get("runs") or () if _finite(r.get(key))]
    low = [r for r in runs if Guessing(versus.metric, float(r[key]), versus.guess, "").no_better]
    if not low:
        return None
    which = ", ".join(f"seed {r.get('seed')}: {r[key]:.{DIGITS}f}" for r in low[:4]) + (", …" if len(low) > 4 else "")
    verb = "scores" if len(low) == 1 else "score"
    return (f"{len(low)} of {len(runs)} runs {verb} no better than guessing ({which}; guessing "
            f"{versus.guess:.{DIGITS}f}): the mean hides it.")


def no_better_groups(found: list[tuple[dict, Guessing]], group, at, axis: str = "", limit: int = 4) -> list[str]:
    """:func:`no_better_rows`' findings in a line per group (``group(row)``: a figure's series and
    panel), each naming where (``at(row)``: the x value, "0.01", on the ``axis`` named once, "ε";
    at most ``limit``, then how many more), the lowest result (the highest RMSE) of several and what
    guessing scores there: a figure of many points in one short box rather than a point a line."""
    groups: dict[str, list[tuple[dict, Guessing]]] = {}
    for r, v in found:
        groups.setdefault(group(r), []).append((r, v))
    lines = []
    for name, items in groups.items():
        where = [w for w in dict.fromkeys(at(r) for r, _ in items) if w]
        worst = (min if items[0][1].metric == "accuracy" else max)(items, key=lambda item: item[1].value)[1]
        guesses = sorted({round(v.guess, DIGITS) for _, v in items})
        guess = (f"{guesses[0]:.{DIGITS}f}" if len(guesses) == 1
                 else f"{guesses[0]:.{DIGITS}f}–{guesses[-1]:.{DIGITS}f}")
        more = f" and {len(where) - limit} more" if len(where) > limit else ""
        places = f" at {axis + ' = ' if axis else ''}{', '.join(where[:limit])}{more}" if where else ""
        extreme = "" if len(items) == 1 else "down to " if worst.metric == "accuracy" else "up to "
        lines.append(f"{name}{places} ({worst.label} {extreme}{worst.value:.{DIGITS}f}; guessing {guess})")
    return lines


def from_zero(values, guess: float | None, metric: str = "accuracy") -> bool:
    """Whether a chart of ``values`` must draw its y axis from zero: some value falls to guessing
    or below, and a range fitted to the values would draw that fall out of scale with the
    whole scale of the metric (a 0.4-point dip drawn as a cliff, a 45-point collapse as a dip)."""
    vals = [float(v) for v in values if _finite(v)]
    if not vals or not _finite(guess):
        return False
    return any(Guessing(metric, v, float(guess), "").no_better for v in vals)


def noise_name(record: dict) -> str:
    """What a run's noise figure is, in its mechanism's own words (the record's ``noise``, up to what it is
    added to): "Gaussian σ", "Gamma-norm scale", "ℓ2-ball mechanism radius B".  A lecturer's walk read
    "noise σ" over all three in Explore, comparing a radius with a standard deviation.

    >>> noise_name({"noise": "ℓ2-ball mechanism radius B on each record's gradient"})
    'ℓ2-ball mechanism radius B'
    >>> noise_name({"noise": "Gamma-norm scale of the linear term b"})
    'Gamma-norm scale'
    >>> noise_name({})
    'noise σ'
    """
    name = re.split(r" (?:on|of|to) ", str(record.get("noise") or ""), maxsplit=1)[0].strip()
    return name or "noise σ"


def noise_words(record: dict) -> str:
    """The run's noise named as what it is: ``σ = 0.4`` on its own, or, for a sampled mechanism whose
    noise is a multiple z of its clip C (its record's ``noise_multiplier`` and ``clip_norm``),
    ``σ = z·C = 5.638 × 1``.  The same words in Explore and the command line's text; the JSON
    carries ``sigma``, ``noise_multiplier`` and ``clip_norm``.

    >>> noise_words({"sigma": 11.276, "noise_multiplier": 5.638, "clip_norm": 2.0})
    'σ = z·C = 5.638 × 2 = 11.28'
    >>> noise_words({"sigma": 0.25})
    'σ = 0.25'
    """
    sigma = record.get("sigma")
    if sigma is None or not isinstance(sigma, (int, float)):
        return "σ = –"
    z, clip = record.get("noise_multiplier"), record.get("clip_norm")
    if _finite(z) and _finite(clip):
        return f"σ = z·C = {z:.4g} × {clip:g} = {sigma:.4g}"
    return f"σ = {sigma:.4g}"


def sampling_of(spec, n_train) -> dict:
    """The sampling a run of ``spec`` (a sampled mechanism: DP-SGD) on ``n_train`` training records ran
    with, by the mechanism's own rule (a rate q, else a batch size over n): ``sample_rate``,
    ``expected_batch`` (q·n) and ``n_train``; empty for a mechanism that samples nothing.  Every
    view shows it beside a DP-SGD number (issue 68, M1: Compare's batch of 256 and Explore's q = 0.01
    read as one setting)."""
    cls = REGISTRY.get(getattr(spec, "mechanism", None))
    if cls is None or "sample_rate" not in cls.settings or not _finite(n_train) or n_train <= 0:
        return {}
    # the rate of the plan the mechanism certifies (its plan reads only the training size of the problem)
    q = cls().plan(SimpleNamespace(n=int(n_train)), spec, 1.0).releases[0].sample_rate
    return {"sample_rate": float(q), "expected_batch": float(q) * int(n_train), "n_train": int(n_train)}


def sampling_words(row: dict) -> str:
    """``sampling rate q = 0.4689 (batch ≈ 256 of 546 records)``, or ``""`` for a row that sampled nothing.

    >>> sampling_words({"sample_rate": 0.46886, "expected_batch": 256.0, "n_train": 546})
    'sampling rate q = 0.4689 (batch ≈ 256 of 546 records)'
    """
    q = row.get("sample_rate")
    if not _finite(q):
        return ""
    b, n = row.get("expected_batch"), row.get("n_train")
    return f"sampling rate q = {q:.4g}" + (f" (batch ≈ {b:.0f} of {n} records)" if _finite(b) and n else "")


def sampling_note(rows) -> str:
    """What a view of sampled rows says under them: each sampled mechanism, by its own name, with the
    rate(s) its rows ran with, and how to reproduce a point in Explore (set the rate there: Explore's
    sampling control decides it, whatever this view ran); ``""`` without a sampled row.

    >>> sampling_note([{"mechanism": "gradient-dpsgd", "sample_rate": 0.05, "expected_batch": 1808.85,
    ...                 "n_train": 36177}, {"mechanism": "gradient-lssgd", "sample_rate": 0.007076,
    ...                 "expected_batch": 256.0, "n_train": 36177}])[:130]
    'DP-SGD ran here with sampling rate q = 0.05 (batch ≈ 1809 of 36177 records); DP-LSSGD with sampling rate q = 0.007076 (batch ≈ 256'
    """
    by_mechanism: dict[str, dict[float, dict]] = {}
    for r in rows:
        if _finite(r.get("sample_rate")):
            by_mechanism.setdefault(r.get("mechanism") or "", {}).setdefault(r["sample_rate"], r)
    if not by_mechanism:
        return ""
    said = []
    for mechanism, rates in by_mechanism.items():
        name = REGISTRY[mechanism].short if mechanism in REGISTRY else (mechanism or "a sampled mechanism")
        said.append(f"{name} {'ran here ' if not said else ''}with "
                    + " and ".join(sampling_words(rates[q]) for q in sorted(rates)))
    return ("; ".join(said) + ". To reproduce a point in Explore, set its sampling rate there to the point's q "
            "(Explore's own control decides the rate it runs, and another q gives other numbers at the same ε).")


def search_spent_words(epsilon: float, spent: float | None, tuned_at: float) -> str:
    """What a run at tuned settings cost with the search that chose them (issue 68, M2: ε = 1 shown
    alone read as the whole cost of settings a search paid ε ≈ 10 to choose).

    >>> search_spent_words(1.0, 10.1, 1.0)[:76]
    'ε = 1 is this run’s alone. Its settings were chosen (tuned at ε = 1) by a pr'
    >>> search_spent_words(1.0, 1.0, 1.0)[:26]
    'ε = 1 is the whole cost: t'
    """
    if spent is None or not _finite(spent):
        return (f"ε = {epsilon:g} is this run’s alone: its settings were chosen (tuned at ε = {tuned_at:g}) by a private "
                "search whose cost is not shown here (the Tune view shows it).")
    if spent <= epsilon * (1 + 1e-9):  # a free choice (on the run's own released records: post-processing)
        return (f"ε = {epsilon:g} is the whole cost: the search that chose its settings (tuned at ε = {tuned_at:g}) "
                "spent nothing beyond this run's own ε.")
    return (f"ε = {epsilon:g} is this run’s alone. Its settings were chosen (tuned at ε = {tuned_at:g}) by a private "
            f"search on this dataset that spent ε = {spent:.3g} in all (every candidate run, the private choice and "
            f"the final run): with the choice of its settings, this model cost ε = {spent:.3g}, "
            f"{search_cost(epsilon, spent):.1f}× the ε above.")


def search_cost(epsilon: float, spent: float | None) -> float | None:
    """What a run at tuned settings cost with the search that chose them, as a multiple of the ε the run
    is drawn at (``spent / epsilon``; ``None`` where the search's ε is not known): the one figure Explore
    (:func:`search_spent_words`), Compare's hover and its caption (:func:`tuning_cost_note`) give for a point.
    Measured against the point's own ε, not the ε its settings were tuned at: a point below the smallest
    tuned ε uses the settings tuned there, whose search cost many times its ε (issue 68, the third walk's M1).

    >>> search_cost(0.01, 0.8)
    80.0
    """
    if spent is None or not _finite(spent) or not _finite(epsilon) or epsilon <= 0:
        return None
    return float(spent) / float(epsilon)


def tuning_cost_note(rows) -> str:
    """Compare's words under its chart for a comparison at tuned settings (``""`` where no row is tuned):
    which mechanisms ran at tuned settings and what their searches cost against the ε each point is drawn
    at (:func:`search_cost`, the figure Explore gives for that point), which points use settings tuned at
    another ε, and which mechanisms ran untuned (no shipped tuning: the settings above).

    >>> note = tuning_cost_note([
    ...     {"mechanism": "gradient-dpgd", "epsilon": 0.01, "tuned_at": 0.05, "tuned_search_epsilon": 0.464},
    ...     {"mechanism": "gradient-dpgd", "epsilon": 1.0, "tuned_at": 1.0, "tuned_search_epsilon": 10.1},
    ...     {"mechanism": "gradient-lssgd", "epsilon": 0.01}])
    >>> "spent 10.1–46.4× the ε the point is drawn at" in note, "Untuned (at the settings above): DP-LSSGD" in note
    (True, True)
    """
    tuned = [r for r in rows if r.get("tuned_at") is not None]
    if not tuned:
        return ""
    names = list(dict.fromkeys(short_name(r["mechanism"]) for r in tuned))
    untuned = [short_name(m) for m in dict.fromkeys(r["mechanism"] for r in rows)
               if not any(r["mechanism"] == m and r.get("tuned_at") is not None for r in rows)]
    costs = [c for c in (search_cost(r["epsilon"], r.get("tuned_search_epsilon")) for r in tuned) if c is not None]
    said = [f"Tuned settings ({join_words(names)}): each point's settings were chosen on this dataset by a private "
            "search"
            + (f" that spent {min(costs):.1f}–{max(costs):.1f}× the ε the point is drawn at (every candidate run, "
               "the private choice and the final run; the hover gives each point's, the figure Explore shows "
               "for it)." if costs else " (what it spent is not shown here yet; the Tune view shows it).")]
    elsewhere: dict[float, list[float]] = {}  # tuned ε → the plotted ε's that use its settings
    for r in tuned:
        if not math.isclose(float(r["tuned_at"]), float(r["epsilon"]), rel_tol=1e-9):
            elsewhere.setdefault(float(r["tuned_at"]), []).append(float(r["epsilon"]))
    if elsewhere:
        said.append("Points use the settings tuned at the nearest tuned ε: "
                    + "; ".join(f"ε = {join_words([f'{e:g}' for e in sorted(set(es))])} use those tuned at ε = {t:g}"
                                for t, es in sorted(elsewhere.items())) + ".")
    if untuned:
        said.append(f"Untuned (at the settings above): {join_words(untuned)}.")
    return " ".join(said)



def row_lam(row, default: float | None = None) -> float | None:
    """The λ a result's row ran at: its own (``lam``, or its ``overrides`` text as the studies write it,
    e.g. ``"T=800, lam=0.0001"``), else ``default``.

    >>> row_lam({"overrides": "clip_norm=0.5, lam=0.0001"}), row_lam({}, 0.001), row_lam({"lam": 0.01}, 0.001)
    (0.0001, 0.001, 0.01)
    """
    lam = row.get("lam")
    if lam is None:
        for part in str(row.get("overrides") or "").split(","):
            name, _, value = part.strip().partition("=")
            if name.strip() == "lam":
                lam = float(value)
    lam = default if lam is None else lam
    return None if lam is None else float(lam)


def gap_objective_words(row, default: float | None = None) -> str:
    """Whose L* a point's gap L(θ) − L* is measured against, for its hover: its own objective's (its λ).

    >>> gap_objective_words({"overrides": "lam=0.0001"})
    "L* = the exact minimum of the point's own objective (its λ = 0.0001)"
    """
    lam = row_lam(row, default)
    terms = reference_terms(row.get("model"))  # a non-convex model's is the reference's loss (M8)
    what = "the exact minimum" if terms.convex else "the non-private reference's loss, a local minimum,"
    return f"{terms.star} = {what} of the point's own objective (its λ" + ("" if lam is None else f" = {lam:g}") + ")"


def gap_objectives_note(rows, default: float | None = None) -> str:
    """The words under a gap chart whose points ran at different λ (``""`` where all ran at one): each
    gap is measured against the exact minimum of its own objective, so a curve can jump where its λ
    changes; then which λ each mechanism's points ran at (issue 68, the third walk's M9: output (Gaussian)'s
    gap rose from 0.007 to 0.06 with ε where its tuned λ fell to 10⁻⁴, which nothing on screen said).

    >>> gap_objectives_note([{"mechanism": "output-gaussian", "epsilon": e, "lam": l} for e, l in
    ...                      ((0.1, 0.003), (0.5, 0.0001), (1.0, 0.0001))] + [{"mechanism": "gradient-lssgd",
    ...                      "epsilon": 0.1}], 0.001).split("optimum. ")[1]
    'output (Gaussian) at λ = 0.003 for ε = 0.1, λ = 0.0001 for ε = 0.5–1; DP-LSSGD at λ = 0.001 throughout.'
    """
    by_mechanism: dict[str, list[tuple[float, float | None]]] = {}
    for r in rows:
        by_mechanism.setdefault(r["mechanism"], []).append((float(r["epsilon"]), row_lam(r, default)))
    if len({lam for pts in by_mechanism.values() for _, lam in pts}) <= 1:
        return ""
    throughout: dict[float | None, list[str]] = {}
    varied = []
    for mechanism, pts in by_mechanism.items():
        runs: list[list] = []  # consecutive ε's at one λ: [λ, first ε, last ε]
        for eps, lam in sorted(pts, key=lambda p: p[0]):
            if runs and runs[-1][0] == lam:
                runs[-1][2] = eps
            else:
                runs.append([lam, eps, eps])
        if len(runs) == 1:
            throughout.setdefault(runs[0][0], []).append(short_name(mechanism))
        else:
            varied.append(f"{short_name(mechanism)} at " + ", ".join(
                f"λ = {_lam_text(lam)} for ε = {lo:g}" + (f"–{hi:g}" if hi != lo else "") for lam, lo, hi in runs))
    said = varied + [f"{join_words(names)} at λ = {_lam_text(lam)} throughout" for lam, names in throughout.items()]
    return ("These points ran at different λ (each mechanism at its tuned λ, where tuned), so each gap is measured "
            "against the exact minimum L* of its own point's objective, a different L* for each λ: a curve can jump "
            "where its λ changes, and gaps at different λ are not distances to one optimum. "
            + "; ".join(said) + ".")


def _lam_text(lam: float | None) -> str:
    return "?" if lam is None else f"{lam:g}"


def best_central(rows) -> tuple[dict, int] | None:
    """Of a trade-off's rows, the central mechanism (local ε = ∞, not a heuristic) with the highest mean
    accuracy, and how many central means it is the best of; ``None`` where none ran."""
    central = [r for r in rows if "error" not in r and not r.get("heuristic") and _finite(r.get("accuracy_mean"))
               and r.get("epsilon_local") is not None and math.isinf(float(r["epsilon_local"]))]
    if not central:
        return None
    return max(central, key=lambda r: r["accuracy_mean"]), len(central)


def best_central_label(rows) -> str:
    """The label of the trade-off chart's best-central line: which mechanism, the best of how many means.

    >>> best_central_label([{"mechanism": "output-gaussian", "epsilon_local": math.inf, "accuracy_mean": 0.95},
    ...                     {"mechanism": "gradient-dpgd", "epsilon_local": math.inf, "accuracy_mean": 0.94}])
    'best of 2 central means: output (Gaussian)'
    """
    found = best_central(rows)
    if found is None:
        return ""
    return f"best of {found[1]} central means: {short_name(found[0]['mechanism'])}"


def best_central_words(result: dict, baseline: float | None = None, short: bool = False) -> str:
    """What the trade-off chart's best-central line is (issue 68, the third walk's M4: the best of nine
    2-run means equalled the non-private line and read as central DP costing nothing at ε = 1): that
    mechanism's mean with its sd over the runs, the best of N means of R runs each, and that a maximum of
    noisy means is optimistic; where it reaches the non-private ``baseline``, that this is within the runs'
    spread, not a free guarantee.  ``short``: the same in a projector's two lines (the lesson's step)."""
    found = best_central(result.get("rows", []))
    if found is None:
        return ""
    row, n = found
    runs = result.get("repeats")
    of = f" over {runs} run{'s' if runs != 1 else ''} each" if runs else ""
    sd = row.get("accuracy_std")
    if short:
        reaches = (baseline is not None and _finite(baseline) and row["accuracy_mean"] >= baseline - 1e-12)
        return (f"Dotted: {short_name(row['mechanism'])}, {row['accuracy_mean']:.4f}"
                + (f" ± {sd:.4f}" if _finite(sd) else "") + f", the best of {n} central means{of}: the luckiest of "
                "several noisy means, so optimistic" + ("; reaching the non-private line does not show that "
                                                       "central privacy is free." if reaches else "."))
    said = (f"The dotted “best of {n} central means” line (central: local ε = ∞, so a line, not a point) is "
            f"{short_name(row['mechanism'])}'s mean accuracy "
            f"{row['accuracy_mean']:.4f}" + (f" ± {sd:.4f} (sd over its runs)" if _finite(sd) else "")
            + f": the highest of {n} central mechanisms' means{of}. The highest of several noisy means is an "
            "optimistic estimate of any one mechanism: with few runs, the luckiest one is picked.")
    if baseline is not None and _finite(baseline) and row["accuracy_mean"] >= baseline - 1e-12:
        said += (f" It reaches the non-private line ({baseline:.4f}) here; from so few noisy runs that does not "
                 "show that central privacy costs nothing at this ε (the table gives each mechanism's mean ± sd).")
    return said


def curve_note(result: dict, guess: float | None = None) -> str:
    """What the trade-off's input-noise curve holds fixed (its labels' randomized response at ε/2 of the
    central ε) and what its accuracy does as the input noise falls, read from the curve's own points
    beside what guessing scores (``guess``): near or below guessing throughout, rising, or flat above it
    (issue 68: a fixed sentence said "near or below guessing" over a curve at 0.89–0.95)."""
    eps = result.get("epsilon")
    points = sorted(((r["input_sigma"], r["accuracy_mean"]) for r in result.get("curve") or []
                     if _finite(r.get("accuracy_mean")) and _finite(r.get("input_sigma"))), reverse=True)
    if not points or not _finite(eps):
        return ""
    ey = eps / 2
    keep = math.exp(ey) / (1 + math.exp(ey))
    head = (f"The grey curve varies only the input noise σ: every point keeps the labels' randomized response at "
            f"ε_y = ε/2 = {ey:g} (each label kept with probability {keep:.0%}), so its local ε counts them too. ")
    (s_most, a_most), (s_least, a_least) = points[0], points[-1]
    moves = f"from {a_most:.{DIGITS}f} at σ = {s_most:g} to {a_least:.{DIGITS}f} at σ = {s_least:g}"
    if _finite(guess) and max(a for _, a in points) <= guess + 0.02:
        return head + (f"Its accuracy stays near or below guessing's {guess:.{DIGITS}f} ({moves}): with labels "
                       f"this close to coin flips, little of what they say survives whatever the input noise.")
    if a_least - a_most > 0.01:
        return head + f"Less input noise lets the data's own signal through: its accuracy rises {moves}."
    return head + (f"Less input noise barely moves it ({moves}): the labels' flips, not the input noise, "
                   "limit it here.")


def measured_note(meas: dict) -> str:
    """Under Theory's measured gaps (:func:`dpcore.experiments.studies.compare_measured`'s result): the
    dotted lines are orders with their constants set to 1, so heights are not predictions; and where a
    measured slope departs from its rows' by more than 0.5, which way and what may cause it (the second
    walk: DP-GD flat at 0.1, slope −0.14, beside a prediction of slope −1.86 far below it, with no word)."""
    parts = ["The dotted lines are the papers' bounds as orders, every constant set to 1: their height is no "
             "prediction, so a measured gap above one does not break it. Compare slopes."]
    over = "n" if meas.get("over") == "n" else "ε"
    for m in meas.get("mechanisms", []):
        got = m.get("measured_slope")
        if not m.get("gap_mean") or not _finite(got):
            continue
        parted = [(row["id"], row["predicted_slope"]) for row in m.get("rows", [])
                  if _finite(row.get("predicted_slope")) and abs(got - row["predicted_slope"]) > 0.5]
        for slower, why in ((True, "what the bound leaves out can dominate here: an iterative method's error after "
                                   f"T = {meas.get('iterations')} steps, the regulariser's own pull, or an n too "
                                   "small for the rate to set in"),
                            (False, "a bound is a worst case, and this data is kinder than it")):
            rows = [f"{rid} {want:.2f}" for rid, want in parted if (got > want) == slower]
            if rows:
                parts.append(f"{m['mechanism']} falls {'more slowly' if slower else 'faster'} in {over} "
                             f"(slope {got:.2f}) than {'its rows' if len(rows) > 1 else 'its row'} "
                             f"({', '.join(rows)}): {why}.")
    return " ".join(parts)


def curve_point_name(result: dict, row: dict) -> str:
    """A point of the trade-off's input-noise curve named as the chart's legend and hover name it.

    >>> curve_point_name({"curve_mechanism": "input-kang", "epsilon": 0.1}, {"input_sigma": 0.5, "epsilon_local": 970.0})
    'input-kang curve, input noise σ = 0.5 (local ε = 970; labels at ε_y = 0.05)'
    """
    local = row.get("epsilon_local")
    return (f"{result.get('curve_mechanism')} curve, input noise σ = {row.get('input_sigma'):g} (local ε = "
            + (f"{local:.4g}" if _finite(local) else "∞") + f"; labels at ε_y = {result.get('epsilon', 0) / 2:g})")


def clip_words(clip: float, bound: float, own: str | None = None) -> str | None:
    """What the clipping control's value means for the noise, in the certificate's words: ``clip`` = 0
    is the mechanism's own (``own``: its statement of the clip it applies, or ``None``: the loss's gradient
    bound ``bound`` sets the noise); a ``clip`` above a finite ``bound`` clips nothing (no per-record
    gradient is longer) yet the noise is scaled to it; ``None`` otherwise.

    >>> clip_words(10.0, 1.0)
    "C = 10 is above the loss's own gradient bound G = 1 on rows of norm ≤ 1: no gradient is clipped, yet the noise is scaled to C, 10× what G needs. A C below G clips the longest gradients, and the noise comes down with it."
    >>> clip_words(0.5, 1.0) is None
    True
    """
    if not clip:
        return "C = 0: " + (own or f"no clipping; the loss's own gradient bound G = {bound:g} on rows of norm ≤ 1 "
                                   "sets the noise") + "."
    if math.isfinite(bound) and clip > bound:
        return (f"C = {clip:g} is above the loss's own gradient bound G = {bound:g} on rows of norm ≤ 1: no gradient "
                f"is clipped, yet the noise is scaled to C, {clip / bound:.3g}× what G needs. A C below G clips the "
                "longest gradients, and the noise comes down with it.")
    return None


#: an asked skew and the clients' realised one differ when they are more than 5 % apart (4.06 for 4 is rounding)
SKEW_TOLERANCE = 0.05


def realised_skew(sizes) -> float:
    """The skew the clients' whole-record sizes really have, n_max / n_min (1 for one client)."""
    sizes = [int(s) for s in sizes]
    return max(sizes) / min(sizes)


def skew_words(asked: float, sizes) -> str | None:
    """The skew asked beside the one the clients' sizes have, when they differ by more than 5 %
    (sizes are whole records, so a two-group split cannot always reach the asked ratio), else ``None``:
    "u = 32 asked; the clients' whole-record sizes give u = 54 (n_max 54 / n_min 1)".

    >>> skew_words(32, [1, 1, 54, 53])
    "u = 32 asked; the clients' whole-record sizes give u = 54 (n_max 54 / n_min 1)"
    >>> skew_words(4, [25, 100]) is None
    True
    """
    if not sizes:
        return None
    real = realised_skew(sizes)
    if abs(real / float(asked) - 1.0) <= SKEW_TOLERANCE:
        return None
    return (f"u = {float(asked):g} asked; the clients' whole-record sizes give u = {real:.3g} "
            f"(n_max {max(sizes)} / n_min {min(sizes)})")


def split_skew_words(n: int | None, clients: int, skew: float) -> str | None:
    """:func:`skew_words` for the seed-004 split of ``n`` rows over ``clients`` at ``skew``
    (:func:`dpcore.partition.client_sizes`); ``None`` where the rows are unknown or the split is refused
    (the skew widget says why)."""
    try:
        return skew_words(skew, client_sizes(n, clients, skew)) if n else None
    except DPCoreError:
        return None


def realised_skew_rows(rows: list[dict]) -> list[dict]:
    """A skew sweep's rows (:func:`dpcore.experiments.studies.skew_curve`) with the skew each point's
    clients really have: ``skew_asked`` (the swept u), ``skew`` (the realised n_max / n_min of the
    clients at that u, the centralised rows taking their federation's) and ``skew_note`` (:func:`skew_words`,
    or ``None`` where the two agree).  The charts draw each point at the u its data have, the tables keep both."""
    sizes_at = {}
    for r in rows:
        if r.get("client_sizes"):
            sizes_at.setdefault((r.get("epsilon"), r["skew"]), r["client_sizes"])
    out = []
    for r in rows:
        asked = r.get("skew_asked", r["skew"])
        sizes = r.get("client_sizes") or sizes_at.get((r.get("epsilon"), asked))
        real = realised_skew(sizes) if sizes else float(asked)
        out.append({**r, "skew_asked": float(asked), "skew": real,
                    "skew_note": skew_words(asked, sizes) if sizes else None})
    return out


def reference_terms(model_id: str | None) -> SimpleNamespace:
    """What the non-private reference and the gap to it are called for a model, in every view's and the
    command line's words.  A convex model's reference is the exact minimiser and its loss L*; a non-convex
    one's (the MLP) is the best loss non-private training found, a local minimum, so its gap is to L_ref,
    never to a certified L*.  ``None`` (a model unknown to the caller) takes the convex words.

    >>> reference_terms("logreg").gap_label
    'optimality gap L(θ) − L*'
    >>> reference_terms("mlp").gap
    'L(θ) − L_ref'
    """
    if model_id is None or model_id not in MODELS or MODELS[model_id].convex:
        return SimpleNamespace(convex=True, reference="the exact minimiser", star="L*", gap="L(θ) − L*",
                               minimiser=f"the exact minimiser of the same {model_id or 'model'} loss without noise",
                               gap_label="optimality gap L(θ) − L*", star_line="L* (non-private optimum)")
    return SimpleNamespace(
        convex=False,
        reference=(f"the non-private reference: the best loss found by non-private training (the best of "
                   f"{MLP_RESTARTS} seeded L-BFGS restarts), a local minimum, not a certified L*"),
        minimiser=(f"the {model_id} with the lowest loss non-private training found (the best of {MLP_RESTARTS} "
                   "seeded L-BFGS restarts, no noise): a local minimum of a non-convex loss, not a certified "
                   "exact minimiser"),
        star="L_ref", gap="L(θ) − L_ref", gap_label="gap to the reference L(θ) − L_ref (the reference's loss)",
        star_line="L_ref (the non-private reference's loss, a local minimum)")
