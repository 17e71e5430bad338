"""Exact sums kept as integers give ``math.fsum(values) / n`` to the bit, however the
values are added and taken away (``metrics.core.exact_sum``)."""

import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.core.exact_sum import exact_sum, fsum_of, mean_of, scaled

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


def bits(value: float) -> bytes:
    return struct.pack(">d", value)


@settings(max_examples=400, deadline=None)
@given(st.lists(finite, max_size=60))
def test_the_exact_sum_rounds_as_fsum_rounds(values):
    # Huge values of opposite signs overflow fsum's intermediate sums; that is fsum's
    # limit, not the exact sum's.
    try:
        expected = math.fsum(values)
    except OverflowError:
        return
    total = exact_sum(values)
    assert total == sum(scaled(value) for value in values)
    assert bits(fsum_of(total)) == bits(expected)
    if values:
        assert bits(mean_of(total, len(values))) == bits(expected / len(values))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(-1, 1, allow_nan=False, width=64), min_size=1, max_size=40),
    st.lists(st.tuples(st.integers(0, 39), st.floats(-1, 1, width=64)), max_size=20),
)
def test_a_mean_updated_value_by_value_equals_the_mean_computed_again(values, changes):
    """What a refresh does: take a query's old value away and add its new one."""
    total = exact_sum(values)
    for index, new in changes:
        index %= len(values)
        total += scaled(new) - scaled(values[index])
        values[index] = new
    assert bits(mean_of(total, len(values))) == bits(math.fsum(values) / len(values))


@pytest.mark.parametrize(
    "values",
    [
        [],
        [-0.0, -0.0],
        [5e-324, -5e-324, 5e-324],
        [2.2250738585072014e-308 / 3, 1e-310, 1.0],
        [1e308, -1e308, 1e-308],
        [0.1] * 100_000,
        np.random.default_rng(0).random(250_000).tolist(),
    ],
    ids=["none", "negative zeros", "subnormals", "subnormal and one", "huge", "tenths", "ndcg"],
)
def test_edge_cases_and_long_lists(values):
    total = exact_sum(np.array(values, dtype=np.float64))
    assert bits(fsum_of(total)) == bits(math.fsum(values))
    assert mean_of(total, 0) == 0.0


def test_it_refuses_values_that_are_not_finite():
    with pytest.raises(ValueError, match="finite"):
        exact_sum([1.0, math.nan])
