"""The mechanism interface and its registry.

A mechanism is one registered class: metadata as class attributes, and a
``run`` that trains R runs at once on top of :mod:`dpcore.optim` and says what
noise actually ran.  Pages, the command line and the test suites enumerate
:data:`REGISTRY`, so a new mechanism shows up everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..numerics import streams
from ..datasets import Dataset
from ..erm import ErmSolution, ReferenceStore
from ..exceptions import ModelError, ParameterError, unknown_choice
from ..models import Model
from ..optim import BatchRNG, Progress, TraceListener
from ..params import Param, check
from ..privacy.core import (  # replace-one (SPEC §1)
    NEIGHBOURING,
    NoisePlan,
    calibrate,
    certify,
)

__all__ = ["Mechanism", "MechanismOutput", "Problem", "Stack", "REGISTRY", "register", "get_mechanism", "declare",
           "validate_options"]


FAMILIES = ("baseline", "output", "objective", "gradient", "input", "local", "distributed")


@dataclass(frozen=True, eq=False)
class Problem:
    """What a mechanism trains on: the data, the model and the exact reference solution,
    with what the run's execution context lends it: how many loss-curve points its
    optimisers record, and a store for noise-free results worth reusing across runs."""

    dataset: Dataset
    model: Model
    erm: ErmSolution | None  # None: not solved (a plan is asked for, nothing trains)
    trace_points: int | None = None  # None: the optimisers' default
    store: ReferenceStore | None = None  # None: nothing is reused
    progress: Progress | None = None  # told of the optimisers' steps (never changes a number)
    on_trace: TraceListener | None = None  # told of the loss curve as it grows (never changes a number)
    # where iterative training starts, (p,), in place of the model's own start: an auditor's
    # choice (a privacy claim holds for every start), None for the model's default
    theta_start: np.ndarray | None = None

    @property
    def X(self) -> np.ndarray:
        return self.dataset.X_train

    @property
    def y(self) -> np.ndarray:
        return self.dataset.y_train

    @property
    def n(self) -> int:
        return self.dataset.n

    @property
    def d(self) -> int:
        return self.dataset.d

    @property
    def p(self) -> int:
        return self.model.n_params(self.dataset.d)

    def start(self, rngs) -> np.ndarray:
        """Starting parameters of iterative training, (R, p): zeros for convex models, a
        seeded random start (its own stream, apart from the noise) for the MLP; ``theta_start``
        when one is set."""
        if self.theta_start is not None:
            return np.tile(np.asarray(self.theta_start, dtype=float), (len(rngs), 1))
        return self.model.init(len(rngs), self.d, None if self.model.convex else rngs.spawn_stream(streams.MODEL_INIT))


def require_strong_convexity(mechanism: "Mechanism", problem) -> None:
    """Refuse a loss that is not convex, or a λ of 0, for a mechanism whose sensitivity proof needs a
    λ-strongly convex objective (:attr:`Mechanism.strongly_convex`)."""
    model = problem.model
    if not model.convex:
        raise ModelError(
            f"{mechanism.id} needs a convex loss and {model.id} is not convex: its sensitivity "
            "proof does not apply (use gradient perturbation with clipping instead)."
        )
    if model.lam <= 0:
        raise ModelError(
            f"{mechanism.id} needs a λ-strongly convex objective (its sensitivity is 2G/(nλ)): "
            "set λ > 0."
        )


@dataclass(frozen=True)
class MechanismOutput:
    """What ran: the released parameters and the noise plan behind them.

    ``plan`` declares every noisy release with its sensitivity (or why there is
    no guarantee); :meth:`certified` turns it into the ε it provably gives, in
    one place for every mechanism (:mod:`dpcore.privacy.core`).  ``local_plan`` is
    what a record's owner is protected by against the server (``None``: nothing,
    ε_local = ∞, the central mechanisms).
    """

    theta: np.ndarray  # (R, p)
    plan: NoisePlan
    local_plan: NoisePlan | None = None
    sigma: float | None = None
    loss_trace: np.ndarray | None = None  # (K, R)
    trace_steps: np.ndarray | None = None  # (K,)
    client_sizes: list[int] | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    # What the server receives besides the model (input perturbation's D_priv), per run:
    # (X (R, n, d), y (R, n)).  Never serialised.
    released_data: tuple[np.ndarray, np.ndarray] | None = None

    def certified(self, delta: float) -> tuple[float, float]:
        """(ε certified, ε local) at ``delta``: what the noise that ran provably gives."""
        local = math.inf if self.local_plan is None else certify(self.local_plan, delta)
        return certify(self.plan, delta), local


class Stack:
    """Configurations of one mechanism that differ only in its :attr:`Mechanism.stack_fields`
    (ε, the learning rate), trained as one batch of runs: config k's R_k runs follow each
    other, with their own generators (so their noise is what separate runs would draw).

    A stack of one configuration is exactly a plain run: :meth:`per_run` then gives the
    scalar it always passed.
    """

    def __init__(self, configs: Sequence[Any], rngs: Sequence[BatchRNG]):
        self.configs = list(configs)
        self.sizes = [len(r) for r in rngs]
        self.rngs = rngs[0] if len(rngs) == 1 else BatchRNG.concat(rngs)

    def per_run(self, values: Sequence[float]) -> float | np.ndarray:
        """One value per configuration, as the optimisers take it: a scalar when all are
        equal, else one per run, (R_total,)."""
        if all(v == values[0] for v in values):
            return values[0]
        return np.repeat(np.asarray(values, dtype=float), self.sizes)

    def learning_rate(self, rates: Sequence[Any]):
        """The optimisers' learning rate for per-configuration rates (floats or schedules t ↦ η_t)."""
        if not any(callable(r) for r in rates):
            return self.per_run(rates)
        return lambda t: self.per_run([r(t) if callable(r) else r for r in rates])

    def split(self, array: np.ndarray | None, axis: int = 0) -> list[np.ndarray | None]:
        """Each configuration's share of a per-run array (runs along ``axis``)."""
        if array is None:
            return [None] * len(self.configs)
        return np.split(array, np.cumsum(self.sizes)[:-1], axis=axis)


class Mechanism:
    """Base class.  Subclasses set the metadata and implement :meth:`run`."""

    id: ClassVar[str] = ""
    name: ClassVar[str] = ""
    # A few words for legends and notes, where the name is too long and the id too raw.
    short: ClassVar[str] = ""
    family: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    models: ClassVar[tuple[str, ...]] = ()
    notion: ClassVar[str] = ""  # "(ε, 0)", "(ε, δ)" or "none"
    calibrations: ClassVar[tuple[str, ...]] = ("certified",)
    private: ClassVar[bool] = True
    #: its sensitivity proof needs a convex loss and λ > 0 (output and objective perturbation): :meth:`check` refuses others
    strongly_convex: ClassVar[bool] = False
    description: ClassVar[str] = ""
    formula: ClassVar[str] = ""  # LaTeX of the noise calibration
    heuristic: ClassVar[bool] = False
    # Does the work grow with the iterations T? (for the run's work budget)
    iterative: ClassVar[bool] = True
    # How many (runs × rows × features) float64 arrays a run builds: the perturbed records of
    # input and local perturbation, one per repeat (for the run's memory budget; a test over the
    # registry measures every mechanism's real peak against the estimate)
    data_copies: ClassVar[int] = 0
    # The privacy event of the noise plan, in words (mechanisms --json).
    privacy_event: ClassVar[str] = ""
    # Where the published calibration is not what the paper printed, or equals the certified one.
    calibration_note: ClassVar[str] = ""
    # Mechanism-specific options (``--option KEY=VALUE``), declared like the common settings.
    options: ClassVar[dict[str, Param]] = {}
    # The optional common settings this mechanism reads (the command line refuses the others).
    settings: ClassVar[tuple[str, ...]] = ()
    # RunSpec fields in which configurations may differ and still train as one batch
    # (:meth:`run_stack`): those that change only the noise scale or the step size.
    stack_fields: ClassVar[tuple[str, ...]] = ()

    def work_steps(self, config, n: int, d: int = 0) -> float:
        """Passes over the n training rows (d features) one run makes, for the work budget
        (:func:`~dpcore.experiments.run.work_estimate`): T for an iterative mechanism, else 1."""
        return config.iterations if self.iterative else 1

    def check(self, problem: Problem, config) -> None:
        """Refuse a model or setting the mechanism cannot handle, saying why."""
        if problem.model.id not in self.models:
            raise ModelError(
                f"mechanism {self.id!r} does not support model {problem.model.id!r} "
                f"(supported: {', '.join(self.models)})"
            )
        if config.calibration not in self.calibrations:
            raise ModelError(
                f"mechanism {self.id!r} has no {config.calibration!r} calibration "
                f"(available: {', '.join(self.calibrations)})"
            )
        if self.strongly_convex:
            require_strong_convexity(self, problem)

    def clips_records(self, model: Model, config) -> str | None:
        """Why a run of ``config`` on ``model`` is private whatever the rows' norms, in a few words
        (every record's contribution is clipped before the noise: ``"DP-SGD clips every per-record
        gradient to C = 1"``), or ``None``: its sensitivity assumes ``‖x‖ ≤ 1`` (SPEC §1), so data
        beyond that bound are refused at the door (:mod:`dpcore.datasets.contract`), never run
        under a certificate that does not hold.  The default: ``None``."""
        return None

    def run(self, problem: Problem, config, rngs) -> MechanismOutput:
        raise NotImplementedError

    def run_stack(self, problem: Problem, configs: Sequence[Any], rngs: Sequence[BatchRNG]) -> list[MechanismOutput]:
        """Several configurations that differ only in :attr:`stack_fields`, one output each.

        A mechanism with stack fields trains them as one batch (one pass over the data per
        step for all their runs: a whole ε × learning-rate grid costs a little more than
        one configuration); its :meth:`run` is the stack of one.  Each output is what
        :meth:`run` gives that configuration, to the rounding of the batched products.
        Others run the configurations in turn.
        """
        return [self.run(problem, c, r) for c, r in zip(configs, rngs)]

    # The noise of a mechanism with one noise parameter s: the plan it would run with s,
    # the paper's s, and the certified s (the inverse of certification, dpcore.privacy.core).
    def plan(self, problem: Problem, config, s: float) -> NoisePlan:
        raise NotImplementedError

    def published_noise(self, problem: Problem, config) -> float:
        raise NotImplementedError

    def planned(self, problem: Problem, config) -> NoisePlan:
        """The plan a run of ``config`` declares, known before it trains: :meth:`plan` at
        :meth:`noise` (mechanisms whose noise is one calibrated parameter; the output,
        objective and gradient families)."""
        return self.plan(problem, config, self.noise(problem, config))

    def certified_noise(self, problem: Problem, config) -> float:
        table = None if problem.store is None else problem.store.calibrations
        return calibrate(lambda s: self.plan(problem, config, s), config.epsilon, config.delta,
                         start=self.calibration_start(problem, config), table=table)

    def calibration_start(self, problem: Problem, config) -> float:
        return 1.0

    def noise(self, problem: Problem, config) -> float:
        """The noise parameter that runs: the calibration's, times ``config.noise_scale``
        (below 1 deliberately under-noises; the plan then records the noise that ran)."""
        s = (self.published_noise(problem, config) if config.calibration == "published"
             else self.certified_noise(problem, config))
        return s * config.noise_scale

    @classmethod
    def metadata(cls) -> dict[str, Any]:
        return {
            "id": cls.id,
            "name": cls.name,
            "short": cls.short,
            "family": cls.family,
            "paper": cls.paper,
            "models": list(cls.models),
            "privacy_notion": cls.notion,
            "calibrations": list(cls.calibrations),
            "neighbouring": NEIGHBOURING,
            "heuristic": cls.heuristic,
            "privacy_event": cls.privacy_event,
            "calibration_note": cls.calibration_note,
            "options": [{"name": p.name, "constraint": p.constraint.describe(), "default": p.default,
                         "help": p.help} for p in cls.options.values()],
            "settings": list(cls.settings),
            "description": cls.description,
            "formula": cls.formula,
        }


def declare(*params: Param) -> dict[str, Param]:
    """A mechanism's options, by name."""
    return {p.name: p for p in params}


def validate_options(mechanism_id: str, options) -> tuple[tuple[str, Any], ...]:
    """The options of a run, checked against what ``mechanism_id`` declares (unknown mechanisms
    pass through: the run reports them); a typo or a value out of range is refused."""
    cls = REGISTRY.get(mechanism_id)
    items = dict(options)
    if cls is None:
        return tuple(sorted(items.items()))
    out = {}
    for key, value in items.items():
        param = cls.options.get(key)
        if param is None:
            known = ", ".join(cls.options) or "none"
            raise ParameterError(f"unknown option {key!r} for {mechanism_id} (its options: {known})")
        out[key] = check(param, value, f"{mechanism_id} (option)")
    return tuple(sorted(out.items()))


REGISTRY: dict[str, type[Mechanism]] = {}


def register(cls: type[Mechanism]) -> type[Mechanism]:
    """Class decorator adding a mechanism to :data:`REGISTRY`; duplicates are refused."""
    if not cls.id:
        raise ValueError(f"{cls.__name__} has no id")
    if cls.id in REGISTRY:
        raise ValueError(f"mechanism id {cls.id!r} is already registered by {REGISTRY[cls.id].__name__}")
    if cls.family not in FAMILIES:
        raise ValueError(f"{cls.__name__}: unknown family {cls.family!r}")
    REGISTRY[cls.id] = cls
    return cls


def short_name(mechanism_id: str) -> str:
    """A mechanism's legend name ("DP-GD" for ``gradient-dpgd``); anything else unchanged,
    so a chart grouped by something other than mechanisms can call it too."""
    cls = REGISTRY.get(str(mechanism_id))
    return cls.short if cls is not None and cls.short else str(mechanism_id)


def get_mechanism(mechanism_id: str) -> Mechanism:
    try:
        return REGISTRY[mechanism_id]()
    except KeyError:
        raise ModelError(unknown_choice("mechanism", mechanism_id, REGISTRY)) from None
