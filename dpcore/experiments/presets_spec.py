"""A seed-paper figure as a named sweep: its declaration and the tasks it expands into.

Each :class:`Preset` holds the paper's settings where the paper gives them and
our documented choice where it does not (``choices``).  ``tasks()`` expands it
into :class:`~dpcore.experiments.sweep.Task` objects (one per mechanism × dataset × model ×
x-value × learning rate, each a batch of repeats); ``figure()`` draws the tidy
results in the paper's panel layout (:mod:`dpcore.experiments.presets_figures`).

Where a paper "chooses T and the learning rate by cross-validation" the preset
runs the whole grid and the figure shows, for every point, the grid value with
the best mean test metric.  That is how such figures are usually made, and it
is optimistic: choosing a hyper-parameter on the data spends privacy that no
ε in the table accounts for.  The CSV keeps every grid value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import plotly.graph_objects as go

from ..datasets import DATASETS
from ..mechanisms import REGISTRY
from ..models import make_model
from . import presets_figures
from .run import RunSpec
from .sweep import Task

__all__ = ["QUICK_ROWS", "QUICK_ROWS_DISTRIBUTED", "Preset", "auto_delta"]

QUICK_ROWS = 300  # training rows per bundled dataset in a quick run
QUICK_ROWS_DISTRIBUTED = 800


def auto_delta(n: int) -> float:
    """δ = 10^−⌈log10 n⌉: the largest power of ten below 1/n (our reading of
    "δ is set according to the size of datasets")."""
    return 10.0 ** (-math.ceil(math.log10(n)))


@dataclass(frozen=True)
class Preset:
    id: str
    title: str
    paper: str
    figures: str
    datasets: tuple[str, ...]
    mechanisms: tuple[str, ...]
    epsilons: tuple[float, ...]
    models: tuple[str, ...] = ("logreg",)
    delta: float | None = None  # None: auto_delta(n) per dataset
    iterations: int = 100
    learning_rates: tuple[float, ...] = (1.0,)
    repeats: int = 5
    x: str = "epsilon"  # epsilon | n | skew
    ns: tuple[int, ...] = ()
    skews: dict[str, tuple[float, ...]] = field(default_factory=dict)  # per dataset
    clients: int | None = None
    partition: str = "two-groups"
    metrics: tuple[str, ...] = ("accuracy",)
    rows: str = "model"  # model | metric | none
    cols: str = "dataset"  # dataset | epsilon
    base: dict[str, Any] = field(default_factory=dict)  # other RunSpec fields
    per_mechanism: dict[str, dict[str, Any]] = field(default_factory=dict)
    choices: tuple[str, ...] = ()
    reference: tuple[str, ...] = ()  # series drawn as a flat line (no x dependence)
    log_x: bool = False
    #: how to read the figure where it surprises (shown under it in the Paper figures view)
    note: str = ""

    # ------------------------------------------------------------------ tasks

    def tasks(self, *, quick: bool = False, repeats: int | None = None,
              max_n: int | None = None, calibration: str | None = None) -> list[Task]:
        """The sweep, or (``quick``) a reduced one for tests: 2 repeats, ≤ 10
        iterations, a few hundred rows, the first and last x values and the
        first learning rate; every dataset, model and mechanism stays.
        ``calibration`` overrides the preset's (``published`` runs the papers'
        noise formulas with c = 1 wherever a mechanism has them)."""
        R = repeats or (2 if quick else self.repeats)
        T = min(self.iterations, 10) if quick else self.iterations
        lrs = self.learning_rates[:1] if quick else self.learning_rates
        epsilons = _ends(self.epsilons) if quick else self.epsilons
        out: list[Task] = []
        seen: set[str] = set()
        for dataset in self.datasets:
            spec = DATASETS[dataset]
            for model in self.models:
                for mech in self.mechanisms:
                    m = REGISTRY[mech]
                    if model not in m.models:
                        continue  # e.g. output perturbation has no MLP version
                    for xv in self._xs(dataset, quick):
                        for eps in epsilons:
                            for lr in lrs:
                                cfg = self._config(dataset, spec, model, mech, xv, eps, lr, T, R,
                                                   quick, max_n, calibration)
                                if not m.private and cfg.learning_rate != lrs[0]:
                                    continue
                                task = Task(cfg, tags=(("preset", self.id),))
                                if task.key in seen:
                                    continue  # e.g. the pooled reference, the same at every u
                                seen.add(task.key)
                                out.append(task)
        return out

    def _xs(self, dataset: str, quick: bool) -> tuple:
        if self.x == "n":
            return self.ns[:2] if quick else self.ns
        if self.x == "skew":
            xs = self.skews.get(dataset) or self.skews["default"]
            return _ends(xs) if quick else xs
        return (None,)

    def _config(self, dataset, spec, model, mech, xv, eps, lr, T, R, quick, max_n,
                calibration=None) -> RunSpec:
        kw: dict[str, Any] = dict(self.base)
        kw.update(self.per_mechanism.get(mech, {}))
        options = dict(kw.pop("options", {}))
        n = None
        if self.x == "n":
            n = int(xv)
        if max_n is not None or quick:
            cap = max_n or (QUICK_ROWS_DISTRIBUTED if self.clients else QUICK_ROWS)
            full = spec.n_train if not spec.synthetic else (n or 10_000)
            if full > cap:
                n = cap if n is None else min(n, cap)
        n_delta = n or spec.n_train or 10_000
        delta = self.delta if self.delta is not None else auto_delta(n_delta)
        mechanism = REGISTRY[mech]
        private = mechanism.private
        distributed = mechanism.family == "distributed"
        if distributed:
            kw["clients"] = self.clients
            kw["skew"] = float(xv) if self.x == "skew" else 1.0
            options.setdefault("partition", self.partition)
        if not private:
            eps = 1.0  # ε does not apply: one run serves every ε
        preset_calibration = kw.pop("calibration", "certified")
        cal = calibration or preset_calibration
        if cal not in mechanism.calibrations or not private:
            cal = mechanism.calibrations[0]  # the non-private run is shared by both calibrations
        return RunSpec(
            dataset=dataset, model=model, mechanism=mech, epsilon=float(eps), delta=float(delta),
            iterations=int(T), repeats=int(R), seed=0, calibration=cal,
            learning_rate=float(kw.pop("learning_rate", lr)), n=n,
            options=tuple(sorted(options.items())), **kw,
        )

    # ------------------------------------------------------------------ figure

    def figure(self, df, published=None, calibration: str | None = None):
        """The paper's layout from the tidy table (pandas DataFrame).  ``published``: the same
        preset run with the papers' published calibrations (``--calibration published``),
        drawn over it as dotted lines in the same colours; its points whose certified ε
        misses the target get red rings like any other.  ``calibration``: the table's own
        calibration when a run overrode the preset's (named in the title)."""
        return self.figure_and_points(df, published, calibration)[0]

    def figure_and_points(self, df, published=None, calibration: str | None = None) -> tuple[go.Figure, dict]:
        """:meth:`figure`, and what its note is made of: ``{"rows": …, "panels": …, "x": …}``,
        the keyword arguments of :func:`dpcore.figures.charts.figure_note` (every point drawn of a
        private mechanism: its series, mechanism, calibration, panel, x, target and certified
        ε; the panels in order; the swept coordinate).  The figure's note is
        ``figure_note(**points)``; a page that writes the note itself calls it the same way."""
        return presets_figures.figure_and_points(self, df, published, calibration)

    def comparison(self, dataset: str) -> dict[str, Any]:
        """This figure's setting for a comparison over ε on ``dataset`` (the Compare view's
        one-click setting): model, ε grid, the private mechanisms, T, δ (the paper's, or
        :func:`auto_delta` of the dataset's size), λ and, for the distributed figures, the
        clients at equal sizes."""
        out = {"dataset": dataset, "model": self.models[0], "epsilons": list(self.epsilons),
               "mechanisms": [m for m in self.mechanisms if REGISTRY[m].private],
               "iterations": self.iterations,
               "delta": self.delta if self.delta is not None else auto_delta(DATASETS[dataset].n_train),
               "lam": self.base.get("lam", make_model(self.models[0]).lam)}
        if self.clients:
            out.update(clients=self.clients, skew=1.0)
        return out

    def overrides(self, dataset: str, mechanisms: Sequence[str]) -> tuple[dict[str, dict], dict[str, Any]]:
        """What of this figure still holds in a comparison on ``dataset`` with ``mechanisms``:
        the per-mechanism RunSpec fields and the data options (``d`` of synthetic data, say);
        nothing when the dataset is not one of the figure's."""
        if dataset not in self.datasets:
            return {}, {}
        per_mechanism = {m: dict(v) for m, v in self.per_mechanism.items() if m in mechanisms}
        data_options = {k: v for k, v in self.base.items() if k != "lam"}
        return per_mechanism, data_options

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id, "title": self.title, "paper": self.paper, "figures": self.figures,
            "datasets": list(self.datasets), "models": list(self.models),
            "mechanisms": list(self.mechanisms), "epsilons": list(self.epsilons),
            "delta": self.delta if self.delta is not None else "10^-ceil(log10 n)",
            "iterations": self.iterations, "learning_rates": list(self.learning_rates),
            "repeats": self.repeats, "x": self.x, "ns": list(self.ns),
            "skews": {k: list(v) for k, v in self.skews.items()}, "clients": self.clients,
            "partition": self.partition if self.clients else None,
            "metrics": list(self.metrics), "base": self.base,
            "per_mechanism": self.per_mechanism, "choices": list(self.choices),
            "tasks": len(self.tasks()),
        }


def _ends(xs):
    return tuple(dict.fromkeys((xs[0], xs[-1])))
