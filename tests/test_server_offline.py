"""The server started as the README starts it asks nothing of another machine (issue 57): with
``server.headless`` on, Streamlit looks up the machine's external IP at every start (an HTTP request
to a public checking service) unless ``browser.serverAddress`` is set, which .streamlit/config.toml does."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_readmes_server_start_looks_up_no_external_address():
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
    with tempfile.TemporaryFile("w+b") as log:
        # the README's command, on a free port; nothing else overridden
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)],
                                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + 90
            while time.time() < deadline:
                try:
                    if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read() == b"ok":
                        break
                except OSError:
                    time.sleep(0.5)
            else:
                raise AssertionError("the server did not start within 90 s")
            time.sleep(2.0)  # the banner (and any lookup) follows the server's start
        finally:
            proc.terminate()
            proc.wait(timeout=20)
        log.seek(0)
        text = log.read().decode(errors="replace")
    assert "localhost" in text and "URL" in text, text[-2000:]
    assert "External URL" not in text and "external IP" not in text, text[-2000:]
