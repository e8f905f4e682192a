import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The app keeps exact solutions on disk; the tests keep theirs in a folder of their own.
# Made here, removed when the run ends (a folder given by the caller is left alone).
if "DPCORE_CACHE_DIR" not in os.environ:
    _CACHE = tempfile.mkdtemp(prefix="dpcore-test-cache-")
    os.environ["DPCORE_CACHE_DIR"] = _CACHE
    atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)

# Syntax trees one thread's at a time, as in the app's server (pages/boot.py): a test's threads may
# format tracebacks (which parse on Python 3.11) while another builds a tree.
from pages.boot import serialize_syntax_trees  # noqa: E402

serialize_syntax_trees()
