"""Parameter constraints: one declaration, uniform messages."""

import math

import pytest

from dpcore.exceptions import ParameterError
from dpcore.params import PARAMS, validate


@pytest.mark.parametrize("name, bad", [("epsilon", 0.0), ("epsilon", -1), ("epsilon", math.inf),
                                       ("epsilon", math.nan), ("delta", 0.0), ("delta", 1.0),
                                       ("iterations", 0), ("iterations", 2.5), ("repeats", True),
                                       ("calibration", "exact"), ("skew", 0.5)])
def test_out_of_range_values_are_refused(name, bad):
    with pytest.raises(ParameterError, match=f"The '{name}' parameter of x must be"):
        validate(name, bad, "x")


def test_message_form_matches_scikit_learn():
    with pytest.raises(ParameterError) as exc:
        validate("epsilon", -1, "run")
    assert str(exc.value) == "The 'epsilon' parameter of run must be a float in [0.0001, 1000]. Got -1 instead."


def test_good_values_are_normalised():
    assert validate("iterations", 5.0, "x") == 5 and isinstance(validate("iterations", 5.0, "x"), int)
    assert validate("epsilon", 2, "x") == 2.0 and isinstance(validate("epsilon", 2, "x"), float)


def test_widget_ranges_lie_inside_the_constraints():
    for p in PARAMS.values():
        if p.ui_min is not None:
            validate(p.name, p.ui_min, "ui")
            validate(p.name, p.ui_max, "ui")
        if p.default is not None:  # None: the value follows from others (label_epsilon: ε/2)
            validate(p.name, p.default, "default")
