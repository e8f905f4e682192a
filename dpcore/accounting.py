"""The path ``dpcore.accounting`` as before the package had folders: the accountants live in
:mod:`dpcore.privacy.accounting`, and every public name of theirs is importable from here."""

from .exceptions import names_of
from .privacy import accounting
from .privacy.accounting import *  # noqa: F401,F403 — the old path's face

__all__ = [*accounting.__all__]
#: any other name of accounting, as this path had it before the package grew folders
__getattr__ = names_of(__name__, accounting)
