import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The app keeps exact solutions on disk; the tests keep theirs in a folder of their own.
os.environ.setdefault("DPCORE_CACHE_DIR", tempfile.mkdtemp(prefix="dpcore-test-cache-"))
