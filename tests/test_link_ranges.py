"""A link's value outside a slider's range, or of the wrong type, gives a note and a value in range,
never ``StreamlitAPIException`` (issue 55: ``tune?tu_acc=0.3`` and ``local_central?lc_T=5`` raised).
Generated from each raw slider's declaration: its page, key, range and default."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent

#: the views' sliders that are not a declared parameter's (those go through param_widget's clamp)
SLIDERS = {("tune.py", "tu_acc"): (0.5, 1.0, 0.82), ("local_central.py", "lc_T"): (10, 500, 100)}


def _values(lo, hi, default):
    """Below, above, far outside, at each end, and not a number; each with the value the page must hold."""
    kind = type(default)
    return [(str(lo - (hi - lo)), lo), (str(kind(hi * 2)), hi), ("-1", lo), ("1e20", hi), (str(lo), lo),
            (str(hi), hi), ("abc", default), ("nan", default)]


CASES = [pytest.param(page, key, raw, held, id=f"{key}={raw}")
         for (page, key), (lo, hi, default) in SLIDERS.items() for raw, held in _values(lo, hi, default)]


@pytest.mark.parametrize("page, key, raw, held", CASES)
def test_a_links_value_outside_a_sliders_range_is_said_and_brought_within(page, key, raw, held):
    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=120)
    at.query_params[key] = raw
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state[key] == held
    inside = raw not in ("abc", "nan") and float(raw) == held
    said = [w.value for w in at.warning if raw[:10] in w.value]
    assert bool(said) != inside, (raw, [w.value for w in at.warning])
