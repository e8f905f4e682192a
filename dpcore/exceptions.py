"""Errors and warnings raised by dpcore.

Every error a user can cause derives from :class:`DPCoreError` (a ``ValueError``),
so the command line and the app can turn it into one clear line without a
traceback.
"""

from __future__ import annotations

import difflib


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


def unknown_choice(what: str, value, choices) -> str:
    """The message for a value not among ``choices``, short enough for one error line (≤ 300
    characters with its prefix): the close matches first, then every choice — grouped by the
    part before the first hyphen (``gradient-{dpgd, dpsgd}``) when the plain list is long.

    >>> unknown_choice("model", "logrek", ["logreg", "linreg", "mlp"])
    "unknown model 'logrek'; did you mean logreg? (choose one of: logreg, linreg, mlp)"
    """
    names = [str(c) for c in choices]
    shown = str(value) if len(str(value)) <= 40 else f"{str(value)[:16]}… ({len(str(value))} characters)"
    text = f"unknown {what} {shown!r}"
    close = difflib.get_close_matches(str(value), names, n=3, cutoff=0.6)
    listed = ", ".join(names)
    if len(listed) > 150:
        groups: dict[str, list[str]] = {}
        for name in names:
            head, _, tail = name.partition("-")
            groups.setdefault(head if tail else name, []).append(tail)
        listed = ", ".join(h if tails == [""] else f"{h}-{tails[0]}" if len(tails) == 1
                           else f"{h}-{{{', '.join(tails)}}}" for h, tails in groups.items())
    if close:
        guess = f"{text}; did you mean {' or '.join(close)}?"
        whole = f"{guess} (choose one of: {listed})"
        return whole if len(whole) <= 240 else guess
    return f"{text}; choose one of: {listed}"
