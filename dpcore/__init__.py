"""dpcore: the numerical core of the DP-ERM teaching app.

Datasets, models, exact ERM, batched optimisers, mechanisms with published and
certified calibration, the bounds catalog, experiments and the command line
(``python -m dpcore``).  Never imports streamlit.  The layers, bottom to top
(each imports only its own and lower ones; ``tests/test_layering.py``):
foundations (``params``, ``privacy``, ``accounting``, ``theory.formulas``, …),
data and models, solvers (``erm``, ``optim``), ``mechanisms``, the bounds catalog
(``theory.catalog``), ``experiments`` (run, grid, studies, presets), ``audit`` (black-box,
white-box and one-run privacy audits), and the interfaces (``estimators``, ``cli``).

Glossary (one meaning per name across the package):

spec
    a :class:`~dpcore.experiments.run.RunSpec`: every setting that can change a
    number (parameters named ``config`` hold one too).
ctx
    an execution :class:`~dpcore.experiments.context.Context`: how, never what.
seed
    the user's seed (run r of a batch uses ``seed + r``), or a dataset's own seed;
    independent uses of one seed draw from the named streams of :mod:`dpcore.numerics.streams`.
target ε / certified ε / local ε / audited ε
    what the user asked for; what the noise that ran provably gives under
    replace-one neighbours (:func:`dpcore.privacy.core.certify`, ``inf`` when nothing is
    proven); the per-record guarantee against the server that collects the data;
    an empirical lower bound from an audit (never a guarantee).
sensitivity
    how far replacing one record moves a released quantity (L2 unless stated).
noise_std
    the standard deviation of Gaussian noise an optimiser adds per coordinate to the
    mean gradient (``optim``).
noise_multiplier
    z = noise standard deviation / sensitivity of one sampled-Gaussian step (DP-SGD).
sigma
    in results (``RunResult.sigma``, the ``sigma`` of the JSON record and the tidy
    table): the mechanism's headline noise scale, whose meaning the run's
    ``noise`` extra states (per-coordinate std of the released noise for most
    mechanisms, ``z·C`` for the sampled ones, the largest client's for the
    distributed ones, the sampling radius for local-duchi; ``None`` when there
    is no one scale); inside a mechanism the local name for that same scale.
record σ
    input and local perturbation's per-record feature noise (the ``sigma`` option of
    input-kang fixes it).
gap
    the optimality gap L(θ) − L* on the training data, L* from the exact ERM.
calibration
    ``published`` (the paper's formula, constant ``c``) or ``certified`` (the
    smallest noise whose certified ε meets the target).

Examples
--------
>>> from dpcore import RunSpec, run
>>> spec = RunSpec("breast-cancer", mechanism="gradient-dpgd", epsilon=1.0, repeats=3)
>>> result = run(spec)
>>> len(result.accuracy), result.epsilon_certified <= spec.epsilon
(3, True)
"""

import importlib
import importlib.util

from ._version import __version__
from .exceptions import BudgetError, DatasetError, DPCoreError, ModelError, ParameterError, PrivacyWarning

#: the public face's names, each imported from its module on first use (PEP 562): ``import dpcore`` is
#: then the exceptions alone, and a command such as ``python -m dpcore certify`` loads only what it runs
#: (the whole face took 4 s of imports: scipy.stats, the solvers, the audit)
_LAZY = {"AuditResult": ".audit", "run_audit": ".audit", "Certificate": ".certify", "certify_noise": ".certify",
         "DPLinearRegression": ".estimators", "DPLogisticRegression": ".estimators",
         "baseline": ".experiments.baselines", "Context": ".experiments.context", "RunResult": ".experiments.run",
         "RunSpec": ".experiments.run", "run": ".experiments.run", "tune": ".experiments.tune",
         "export_view": ".export"}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    elif not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        value = importlib.import_module(f".{name}", __name__)  # a module: ``dpcore.audit`` as before
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

# No function shadows a module: ``dpcore.audit`` is the audit's subpackage and ``dpcore.certify``
# the certification module (both callable for one release as the functions that used to hide them,
# with a DeprecationWarning naming ``run_audit`` and ``certify_noise``).

#: the public face: what a script or a notebook needs (``from dpcore import RunSpec, run``); every
#: callable here takes its first parameter by position and the rest by keyword (tests/test_face.py)
__all__ = ["RunSpec", "RunResult", "run", "Context", "run_audit", "AuditResult", "tune", "baseline", "certify_noise",
           "Certificate", "DPLogisticRegression", "DPLinearRegression", "export_view",
           "BudgetError", "DPCoreError", "DatasetError", "ModelError", "ParameterError", "PrivacyWarning", "__version__"]
