"""Privacy audits: empirical lower bounds on ε (SPEC §5).

A certified ε is a proof; an audited ε is evidence.  The modules, by role:

* :mod:`~dpcore.audit.core` – :func:`audit` (many runs a side, a lower bound on ε and a
  verdict) and its :class:`AuditResult`;
* :mod:`~dpcore.audit.threats` – the threat models as strategies ``audit`` picks from one
  table: black-box, white-box, white-box with the end-to-end check;
* :mod:`~dpcore.audit.canaries` – the neighbouring training sets: canaries, replaced records,
  the seeded subsample, the canary's score;
* :mod:`~dpcore.audit.membership` – the membership test, the direct bound, the verdict, the
  trade-off curve and the privacy region, the one-line summary;
* :mod:`~dpcore.audit.bounds` – the sharper estimators (Gaussian DP, the Poisson-sampled
  Gaussian fit, the one-run bound), each naming its assumption, and the α split among them;
* :mod:`~dpcore.audit.whitebox` – what a white-box attacker reads off each run;
* :mod:`~dpcore.audit.measured` – the default white-box audit of noisy-gradient mechanisms: a canary
  record through the real pipeline, its shift measured, the noise checked, and the noise check;
* :mod:`~dpcore.audit.one_run` – auditing with one training run (Steinke, Nasr & Jagielski 2023).

The audit sits above the experiments (it trains through their ``RunSpec`` and problems;
nothing in ``dpcore.experiments`` imports it) and below the interfaces.  The entry point is
:func:`run_audit` (``from dpcore import run_audit``).  Until the last release ``dpcore.audit`` was
that function and hid this package; for one release the package can still be called as the
function was (``dpcore.audit(spec, trials)``), with a ``DeprecationWarning`` naming the new spelling.
"""

import sys
import warnings

from . import bounds, canaries, core, evidence, measured, membership, noisecheck, one_run, threats, verdicts, whitebox
from .bounds import ALPHA_SHARES, ASSUMPTIONS, Estimate, clopper_pearson_upper
from .canaries import (
    CANARIES,
    NEIGHBOURING,
    SCORES,
    Canary,
    make_canary,
    replace_record,
    resolve_canary,
    subsample,
)
from .core import AuditResult, audit, run_audit
from .membership import (
    VERDICTS,
    basis_words,
    MembershipTest,
    choose_threshold,
    confirmed,
    epsilon_lower_bound,
    membership_test,
    privacy_region,
    roc_points,
    size_ceiling,
    summary,
    verdict_line,
    tradeoff_curve,
    verdict,
)
from .one_run import OneRunResult, one_run_audit
from .threats import STRATEGIES, THREATS
from .whitebox import WHITE_BOX_UNAVAILABLE

#: the package's modules
MODULES = (bounds, canaries, core, evidence, measured, membership, one_run, threats, whitebox)


class _CallableModule(type(sys.modules[__name__])):
    """This package, callable for one release as the function ``dpcore.audit`` that used to hide it."""

    def __call__(self, *args, **kwargs):
        warnings.warn("calling dpcore.audit(spec, trials, ...) is deprecated: call dpcore.run_audit(spec, trials=..., "
                      "...), whose parameters after the spec are keyword-only", DeprecationWarning, stacklevel=2)
        return core.run_audit(*args[:1], **dict(zip(("trials", "alpha", "canary", "score", "max_rows", "progress"),
                                                    args[1:])), **kwargs)


sys.modules[__name__].__class__ = _CallableModule

__all__ = [
    "ALPHA_SHARES",
    "ASSUMPTIONS",
    "CANARIES",
    "MODULES",
    "NEIGHBOURING",
    "SCORES",
    "STRATEGIES",
    "THREATS",
    "VERDICTS",
    "WHITE_BOX_UNAVAILABLE",
    "AuditResult",
    "Canary",
    "Estimate",
    "MembershipTest",
    "OneRunResult",
    "audit",
    "run_audit",
    "choose_threshold",
    "confirmed",
    "clopper_pearson_upper",
    "epsilon_lower_bound",
    "make_canary",
    "membership_test",
    "one_run_audit",
    "privacy_region",
    "replace_record",
    "resolve_canary",
    "roc_points",
    "size_ceiling",
    "subsample",
    "basis_words",
    "summary",
    "verdict_line",
    "tradeoff_curve",
    "verdict",
]
