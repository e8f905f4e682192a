"""A confidence interval for a mean stays where the mean can be (``dpcore.metrics.METRIC_RANGE``).

With three runs the Student-t interval of an accuracy reaches past 1 (Compare's CSV once read
[0.5046, 1.2326]).  The true mean of a share lies in [0, 1], so cutting the interval to [0, 1]
leaves the event "the interval covers the true mean" unchanged, run by run: the tests below
show that (the coverage is the same, trial by trial), that the cut happens, and that the shipped
classroom file's check refuses an interval outside the range.
"""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from dpcore.experiments import studies
from dpcore.metrics import METRIC_RANGE, summarize, within

ROOT = Path(__file__).resolve().parents[1]

# per-run accuracies of a mechanism that collapses now and then: 0.97, or 0.55 one run in five
COLLAPSE = (0.97, 0.55, 0.2)


def _trials(rng, trials: int, runs: int) -> np.ndarray:
    good, bad, p = COLLAPSE
    return np.where(rng.random((trials, runs)) < p, bad, good) + rng.normal(0, 0.005, (trials, runs))


@pytest.mark.parametrize("runs", [2, 3, 5])
def test_the_cut_interval_covers_the_true_mean_whenever_the_whole_one_does(runs):
    good, bad, p = COLLAPSE
    truth = (1 - p) * good + p * bad
    rng = np.random.default_rng(20261130)
    whole_covers, cut_covers, past_one = [], [], 0
    for values in _trials(rng, 2000, runs):
        whole, cut = summarize(values), summarize(values, metric="accuracy")
        assert cut["mean"] == whole["mean"] and cut["std"] == whole["std"]
        assert 0.0 <= cut["ci_low"] <= cut["mean"] <= cut["ci_high"] <= 1.0
        past_one += whole["ci_high"] > 1.0
        whole_covers.append(whole["ci_low"] <= truth <= whole["ci_high"])
        cut_covers.append(cut["ci_low"] <= truth <= cut["ci_high"])
    assert whole_covers == cut_covers  # trial by trial: the same verdict on the truth
    assert past_one > 100, "the case the cut is for never arose: the test would pass without it"


@pytest.mark.parametrize("metric", sorted(METRIC_RANGE))
def test_every_declared_metric_is_cut_to_its_range(metric):
    low, high = METRIC_RANGE[metric]
    edge = high if math.isfinite(high) else low
    values = [edge, edge, edge - 0.4 if edge == high else edge + 0.4]
    whole, cut = summarize(values), summarize(values, metric=metric)
    assert not within(metric, (whole["ci_low"], whole["ci_high"]))  # the planted case: past the range
    assert within(metric, (cut["ci_low"], cut["ci_high"]))
    assert summarize(values, metric="gap") == whole  # an undeclared metric is not cut


def test_the_classroom_check_refuses_an_accuracy_interval_past_one():
    rows = json.loads((ROOT / "data" / "results" / "compare-classroom.json").read_text())["rows"]
    studies.check_classroom_rows(rows)  # the truth passes
    row = next(r for r in rows if r.get("accuracy_ci95"))
    row["accuracy_ci95"] = [row["accuracy_ci95"][0], 1.2326]
    with pytest.raises(ValueError, match="within the metric's range"):
        studies.check_classroom_rows(rows)
