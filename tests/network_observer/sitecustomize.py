"""Loaded at the start of a Python process whose PYTHONPATH holds this folder (the test app server,
and the worker processes it starts, which inherit it): every connection and name lookup to a host
other than this machine is written to the file ``DPCORE_NETWORK_LOG`` names and refused (an
``OSError``), so that nothing leaves and the tests see what would have (tests/test_browser.py)."""

import os
import socket

_LOG = os.environ.get("DPCORE_NETWORK_LOG")
_LOCAL = ("localhost", "127.0.0.1", "::1", "0.0.0.0", "", None)


def _local(host) -> bool:
    text = host.decode() if isinstance(host, bytes) else host
    return text in _LOCAL or (isinstance(text, str) and (text.startswith("127.") or text == "ip6-localhost"))


def _refuse(what: str):
    with open(_LOG, "a", encoding="utf-8") as f:
        f.write(f"{os.getpid()} {what}\n")
    raise OSError(f"blocked by the test's network observer: {what}")


if _LOG:
    _connect, _connect_ex, _getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
            _refuse(f"connect {address[0]}:{address[1]}")
        return _connect(self, address)

    def connect_ex(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
            _refuse(f"connect {address[0]}:{address[1]}")
        return _connect_ex(self, address)

    def getaddrinfo(host, *args, **kwargs):
        if not _local(host):
            _refuse(f"lookup {host}")
        return _getaddrinfo(host, *args, **kwargs)

    socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo
