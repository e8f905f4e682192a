"""Verification marks: a check of a shipped file run once per content and code, its passing kept in
the cache folder so that the next process does not pay it again (a tuning's certificates: seconds; what
its searches spent: most of a minute).

A mark is the file's digest, the checking code's and what was checked, signed with a key of this user's
(HMAC-SHA256): a folder shared by several users (``DPCORE_CACHE_DIR`` on a class server) holds marks
anyone there can write, and a mark that were a hash of public inputs alone could be planted to wave a
forged file through unchecked (issue 67's campaign).  The key is a file of the verified folder that only
its owner can read and write (created with mode 0600); a key file of another user's, or readable or
writable by others, is never used: this process then signs with a key of its own that dies with it (its
marks are never found again, so every check runs: slower, never weaker).
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import logging
import os
import secrets
from pathlib import Path
from typing import Any, Callable

from .cache import DiskCache, cache_dir

__all__ = ["verified", "signed", "marks_folder"]

_LOG = logging.getLogger(__name__)
_KEY_NAME = "key"


def marks_folder() -> Path:
    """Where the marks are kept: :func:`~dpcore.cache.cache_dir`'s ``verified/``, looked up at each call."""
    return cache_dir() / "verified"


def _key(folder: Path) -> bytes:
    """This user's signing key in ``folder`` (made on first use), or a key of this process only when the
    file there is not this user's alone."""
    path = folder / _KEY_NAME
    try:
        folder.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_hex(32))
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd) as f:
            st = os.fstat(f.fileno())
            text = f.read(65)
        mine = not hasattr(os, "getuid") or (st.st_uid == os.getuid() and not st.st_mode & 0o077)
        if mine and len(text) == 64 and all(c in "0123456789abcdef" for c in text):
            return bytes.fromhex(text)
        _LOG.warning("%s is not this user's alone (or not a key): this process checks every shipped file afresh",
                     path)
    except OSError as exc:
        _LOG.info("no verification key in %s (%s): this process checks every shipped file afresh", folder, exc)
    return _process_key()


# process: this process's own random key for its memory marks
@functools.cache
def _process_key() -> bytes:
    return secrets.token_bytes(32)


def signed(mark: str, folder: Path | None = None) -> str:
    """``mark`` signed with this user's key (:func:`_key`)."""
    return hmac.new(_key(marks_folder() if folder is None else folder), mark.encode(), hashlib.sha256).hexdigest()


def verified(mark: str, check: Callable[[], Any], refused: Callable[[str], Exception]) -> None:
    """``check()`` once per ``mark`` (what is checked: a digest of the file, of the checking code and of
    what the check covers): a former process's passing is read from the cache folder, signed
    (:func:`signed`); ``check`` raising ``ValueError`` raises ``refused(message)``."""
    folder = marks_folder()
    signature = signed(mark, folder)

    def verify() -> dict[str, str]:
        check()
        return {"verified": signature}

    def same(doc: Any) -> dict:
        if not isinstance(doc, dict) or not hmac.compare_digest(str(doc.get("verified")), signature):
            raise ValueError("not this verification's mark")
        return doc

    try:
        DiskCache(folder, prefix="tuned-", folder_bytes=2**20, what="tuning's verification mark",
                  log=__name__).get_or_make(hashlib.sha256(mark.encode()).hexdigest()[:24], verify, same)
    except ValueError as exc:
        raise refused(str(exc)) from None

