"""Errors and warnings raised by dpcore.

Every error a user can cause derives from :class:`DPCoreError` (a ``ValueError``),
so the command line and the app can turn it into one clear line without a
traceback.
"""

from __future__ import annotations


class DPCoreError(ValueError):
    """Bad input that the user can fix; the message says what to change."""


class ParameterError(DPCoreError):
    """A parameter outside its declared constraint (see :mod:`dpcore.params`)."""


class BudgetError(ParameterError):
    """A run refused up front because its memory or work estimate exceeds this machine's
    budget (``DPCORE_MEMORY_BUDGET`` / ``DPCORE_WORK_BUDGET``): a fact about the machine,
    not the setting, so a sweep never caches it as the setting's result."""


class DatasetError(DPCoreError):
    """A bundled data file missing or altered, or a user CSV that cannot be used."""


class ModelError(DPCoreError):
    """A model / mechanism / data combination that cannot work."""


class PrivacyWarning(UserWarning):
    """A setting that weakens or voids the stated privacy guarantee.

    Raised, for example, when ``delta >= 1/n`` (a mechanism may then release a
    whole record and still satisfy the definition) or when the data break an
    assumption of the proof (a row norm above 1).
    """
