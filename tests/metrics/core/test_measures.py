import numpy as np
import pytest

from metrics.core import (
    average_precision,
    average_precision_batch,
    expected_reciprocal_rank,
    expected_reciprocal_rank_batch,
    offsets_from_lengths,
    precision,
    precision_batch,
    reciprocal_rank,
    reciprocal_rank_batch,
)

LISTS = [[2, 0, 3, None, 1], [], [0, 0, 1], [None, None]]
JUDGED = [[2, 3, 1, 1, 0], [1], [1, 0], []]


def flat(lists):
    values = [np.nan if g is None else g for grades in lists for g in grades]
    return np.array(values, dtype=float), offsets_from_lengths([len(g) for g in lists])


def test_precision_divides_by_k_even_when_fewer_hits_were_returned():
    assert precision([2, 0, 3], k=10) == 0.2


def test_precision_without_k_divides_by_the_hits_returned():
    assert precision([2, 0, 3], k=None) == pytest.approx(2 / 3)


def test_precision_threshold_decides_what_is_relevant():
    assert precision([1, 2, 3, 0], k=4, threshold=2) == 0.5


def test_average_precision_divides_by_all_relevant_judged_documents():
    # Relevant at ranks 1 and 3 out of 4 relevant judged documents.
    assert average_precision([1, 0, 1], [1, 1, 1, 1, 0]) == pytest.approx((1 + 2 / 3) / 4)


def test_average_precision_is_zero_without_relevant_judgements():
    assert average_precision([0, None], [0, 0]) == 0.0


def test_average_precision_at_k_ignores_hits_below_k():
    assert average_precision([0, 1, 1], [1, 1], k=2) == pytest.approx(0.25)


def test_reciprocal_rank_skips_unjudged_hits():
    assert reciprocal_rank([None, 0, 2]) == pytest.approx(1 / 3)


def test_reciprocal_rank_is_zero_without_a_relevant_hit_in_the_top_k():
    assert reciprocal_rank([0, 0, 3], k=2) == 0.0


def test_err_of_a_single_perfect_hit_is_its_stopping_probability():
    assert expected_reciprocal_rank([3], k=1, max_grade=3) == pytest.approx(7 / 8)


def test_err_discounts_later_hits_by_the_chance_of_stopping_before():
    expected = 3 / 8 + (1 - 3 / 8) * (7 / 8) / 2
    assert expected_reciprocal_rank([2, 3], k=None, max_grade=3) == pytest.approx(expected)


def test_err_ignores_unjudged_and_negative_grades_and_clips_above_the_scale():
    assert expected_reciprocal_rank([None, -1, 9], k=3, max_grade=3) == pytest.approx(7 / 8 / 3)


def test_err_needs_a_positive_maximum_grade():
    with pytest.raises(ValueError, match="max_grade"):
        expected_reciprocal_rank([1], k=1, max_grade=0)


@pytest.mark.parametrize("k", [1, 2, 10])
def test_batch_precision_matches_the_per_query_function(k):
    ranked, offsets = flat(LISTS)

    expected = [precision(r, k=k) for r in LISTS]
    assert precision_batch(ranked, offsets, k=k).tolist() == pytest.approx(expected)


@pytest.mark.parametrize("k", [None, 1, 3])
def test_batch_average_precision_matches_the_per_query_function(k):
    ranked, offsets = flat(LISTS)
    n_relevant = [sum(g >= 1 for g in judged) for judged in JUDGED]

    values = average_precision_batch(ranked, offsets, n_relevant, k=k)

    expected = [average_precision(r, j, k=k) for r, j in zip(LISTS, JUDGED, strict=True)]
    assert values.tolist() == pytest.approx(expected)


@pytest.mark.parametrize("k", [None, 1, 3])
def test_batch_reciprocal_rank_matches_the_per_query_function(k):
    ranked, offsets = flat(LISTS)

    expected = [reciprocal_rank(r, k=k) for r in LISTS]
    assert reciprocal_rank_batch(ranked, offsets, k=k).tolist() == pytest.approx(expected)


@pytest.mark.parametrize("k", [None, 1, 3])
def test_batch_err_matches_the_per_query_function(k):
    ranked, offsets = flat(LISTS)

    expected = [expected_reciprocal_rank(r, k=k, max_grade=3) for r in LISTS]
    values = expected_reciprocal_rank_batch(ranked, offsets, k=k, max_grade=3)
    assert values.tolist() == pytest.approx(expected, abs=1e-15)


def test_batch_err_of_many_long_lists_does_not_underflow():
    rng = np.random.default_rng(4)
    lists = [rng.integers(-1, 4, size=200).astype(float).tolist() for _ in range(300)]
    ranked, offsets = flat(lists)

    expected = [expected_reciprocal_rank(r, k=None, max_grade=3) for r in lists]
    values = expected_reciprocal_rank_batch(ranked, offsets, k=None, max_grade=3)
    assert values.tolist() == pytest.approx(expected, rel=1e-12)
