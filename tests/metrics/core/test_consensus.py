from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from metrics.core.consensus import consensus
from metrics.core.segments import offsets_from_lengths

panels = st.lists(st.lists(st.integers(0, 3), min_size=0, max_size=7), min_size=1, max_size=12)


def flat(pairs):
    grades = [grade for pair in pairs for grade in pair]
    return grades, offsets_from_lengths([len(pair) for pair in pairs])


def test_a_pair_without_grades_has_no_consensus():
    assert np.isnan(consensus([2.0], [0, 0, 1], "mean")[0])


def test_a_trailing_pair_without_grades_is_handled():
    result = consensus([1, 3], [0, 2, 2, 2], "mean")
    assert result[0] == 2.0 and np.isnan(result[1:]).all()


def test_majority_breaks_a_tie_towards_the_lower_grade():
    assert consensus([3, 1, 3, 1], [0, 4], "majority").tolist() == [1.0]


def test_median_of_an_even_panel_is_the_mean_of_the_middle_two():
    assert consensus([0, 3, 1, 2], [0, 4], "median").tolist() == [1.5]


def test_quepid_rule_takes_the_mean_below_three_grades():
    assert consensus([0, 3], [0, 2], "quepid").tolist() == [1.5]


def test_quepid_rule_takes_the_minimum_of_the_top_three_when_they_differ():
    assert consensus([3, 3, 2, 0, 0], [0, 5], "quepid").tolist() == [2.0]


def test_quepid_rule_takes_the_shared_grade_when_the_top_three_agree():
    assert consensus([1, 3, 3, 3], [0, 4], "quepid").tolist() == [3.0]


def test_an_unknown_policy_is_refused_with_the_choices_named():
    with pytest.raises(ValueError, match="mean"):
        consensus([1], [0, 1], "mode")


@given(panels)
def test_mean_and_median_agree_with_numpy_per_pair(pairs):
    grades, offsets = flat(pairs)
    for policy, reference in (("mean", np.mean), ("median", np.median)):
        result = consensus(grades, offsets, policy)
        for pair, value in zip(pairs, result, strict=True):
            assert np.isnan(value) if not pair else value == pytest.approx(reference(pair))


@given(panels)
def test_majority_is_the_lowest_most_frequent_grade(pairs):
    grades, offsets = flat(pairs)
    for pair, value in zip(pairs, consensus(grades, offsets, "majority"), strict=True):
        if pair:
            counts = Counter(pair)
            top = max(counts.values())
            assert value == min(grade for grade, count in counts.items() if count == top)


@given(panels)
def test_quepid_rule_matches_its_definition(pairs):
    grades, offsets = flat(pairs)
    for pair, value in zip(pairs, consensus(grades, offsets, "quepid"), strict=True):
        if len(pair) >= 3:
            top3 = sorted(pair, reverse=True)[:3]
            assert value == (top3[0] if len(set(top3)) == 1 else min(top3))
        elif pair:
            assert value == pytest.approx(np.mean(pair))
