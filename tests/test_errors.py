"""The checks every layer shares: a positive finite number, a positive integer."""

import math

import numpy as np
import pytest

from roofline.errors import BadInput, positive, positive_int


@pytest.mark.parametrize("value", [0, -1, 0.0, math.nan, math.inf, -math.inf, True, "3", None])
def test_positive_refuses_naming_what(value):
    with pytest.raises(BadInput, match="^bandwidth must be"):
        positive("bandwidth", value)


@pytest.mark.parametrize("value", [1, 2.5, 1e-300, np.float32(3.0)])
def test_positive_passes_the_value_through(value):
    assert positive("x", value) == value


@pytest.mark.parametrize("value", [0, -2, 1.5, 2.0, True, "4", None])
def test_positive_int_refuses(value):
    with pytest.raises(BadInput, match="^batch must be a positive integer"):
        positive_int("batch", value)


def test_positive_int_takes_numpy_integers():
    assert positive_int("n", np.int64(4096)) == 4096
