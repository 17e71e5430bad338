import math

import pytest

from metrics.core import cumulative_gain, dcg, ideal_grades, mean_ndcg, ndcg

from .worked_examples import EXAMPLES, TABLE_D

TOLERANCE = 1e-9


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_ndcg_reproduces_the_worked_example(example):
    result = ndcg(
        example.ranked, example.ideal, k=None, gain=example.gain, discount=example.discount
    )

    assert result.dcg == pytest.approx(example.dcg, abs=TOLERANCE)
    if example.idcg is not None:
        assert result.idcg == pytest.approx(example.idcg, abs=TOLERANCE)
        assert result.ndcg == pytest.approx(example.ndcg, abs=TOLERANCE)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_dcg_reproduces_the_worked_example(example):
    value = dcg(example.ranked, k=None, gain=example.gain, discount=example.discount)

    assert value == pytest.approx(example.dcg, abs=TOLERANCE)


def test_working_rows_reproduce_table_d_row_by_row():
    result = ndcg([2, 0, 3, 2], [3, 2, 2, 0], k=4, gain="linear", discount="rank")

    assert len(result.rows) == len(TABLE_D)
    for row, expected in zip(result.rows, TABLE_D, strict=True):
        rank, grade, cg, discounted_gain, dcg_at, ideal_gain, idcg_at, ndcg_at = expected
        assert row.rank == rank
        assert row.returned
        assert row.grade == grade
        assert row.cg == pytest.approx(cg, abs=TOLERANCE)
        assert row.discounted_gain == pytest.approx(discounted_gain, abs=TOLERANCE)
        assert row.discount == pytest.approx(1 / rank, abs=TOLERANCE)
        assert row.dcg == pytest.approx(dcg_at, abs=TOLERANCE)
        assert row.ideal_gain == pytest.approx(ideal_gain, abs=TOLERANCE)
        assert row.idcg == pytest.approx(idcg_at, abs=TOLERANCE)
        assert row.ndcg_at == pytest.approx(ndcg_at, abs=TOLERANCE)


def test_table_d_ends_at_exactly_three_quarters():
    result = ndcg([2, 0, 3, 2], [3, 2, 2, 0], k=4, gain="linear", discount="rank")

    assert result.ndcg == 0.75
    assert result.rows[-1].ndcg_at == result.ndcg


def test_worked_example_b_cumulative_gain_is_eleven():
    assert cumulative_gain([3, 1, 2, 3, 2, 0], k=None) == 11.0


def test_worked_example_c_cumulative_gain_is_eight():
    assert cumulative_gain([3, 2, 3, 0], k=None) == 8.0


def test_ndcg_is_zero_when_no_judged_document_is_relevant():
    result = ndcg([0, 0, None], [0, 0], k=10)

    assert result.idcg == 0.0
    assert result.ndcg == 0.0
    assert result.all_irrelevant


def test_ndcg_is_zero_for_an_empty_result_list_with_relevant_judgements():
    result = ndcg([], [3, 1], k=10)

    assert result.dcg == 0.0
    assert result.ndcg == 0.0
    assert result.retrieved == 0
    assert result.coverage == 0.0
    assert not result.all_irrelevant


def test_judged_ideal_penalises_relevant_documents_the_engine_missed():
    ranked = [2, 1]
    judged = [2, 1, 3]

    from_judged = ndcg(
        ranked, ideal_grades("judged", ranked_grades=ranked, judged_grades=judged), k=2
    )
    from_returned = ndcg(ranked, ideal_grades("returned", ranked_grades=ranked), k=2)

    assert from_returned.ndcg == pytest.approx(1.0)
    assert from_judged.ndcg < 1.0


def test_judged_ideal_needs_the_judged_grades():
    with pytest.raises(ValueError, match="judged_grades"):
        ideal_grades("judged", ranked_grades=[1, 2])


def test_ideal_leaves_out_unjudged_and_negative_grades():
    assert ideal_grades("returned", ranked_grades=[None, -2, 1, 3]).tolist() == [3.0, 1.0]


def test_cut_ideal_only_sums_the_first_k_ideal_positions():
    result = ndcg([3], [3, 3, 3], k=1, gain="linear")

    assert result.idcg == 3.0
    assert result.ndcg == 1.0


def test_full_ideal_divides_by_the_ideal_of_every_judged_document():
    result = ndcg([3], [3, 3], k=1, gain="linear", ideal_depth="full")

    assert result.idcg == pytest.approx(3 + 3 / math.log2(3))
    assert result.ndcg == pytest.approx(3 / (3 + 3 / math.log2(3)))
    assert result.rows[-1].ndcg_at == pytest.approx(result.ndcg)


def test_unjudged_hits_have_zero_gain_by_default():
    result = ndcg([None, 3], [3], k=2, gain="linear")

    assert result.dcg == pytest.approx(3 / math.log2(3))
    assert result.judged == 1
    assert result.retrieved == 2
    assert result.coverage == 0.5


def test_removing_unjudged_hits_moves_the_hits_below_them_up():
    result = ndcg([None, 3, float("nan"), 2], [3, 2], k=2, gain="linear", unjudged="remove")

    assert result.dcg == pytest.approx(3 + 2 / math.log2(3))
    assert result.ndcg == pytest.approx(1.0)
    assert result.judged == 1
    assert result.retrieved == 2


def test_negative_grades_count_as_judged_with_zero_gain():
    result = ndcg([-1, 2], [2, -1], k=2, gain="linear")

    assert result.rows[0].gain == 0.0
    assert result.judged == 2
    assert result.idcg == 2.0
    assert 0.0 <= result.ndcg <= 1.0


def test_fractional_grades_use_the_same_gain_formulas():
    result = ndcg([1.5, 2.5], [2.5, 1.5], k=2, gain="exponential")

    assert result.rows[0].gain == pytest.approx(2**1.5 - 1)
    assert result.idcg == pytest.approx((2**2.5 - 1) + (2**1.5 - 1) / math.log2(3))


def test_rows_run_past_the_returned_list_to_the_end_of_the_ideal():
    result = ndcg([1], [3, 2, 1], k=3, gain="linear")

    assert [row.returned for row in result.rows] == [True, False, False]
    assert result.rows[1].grade is None
    assert result.rows[2].ideal_grade == 1.0
    assert result.rows[-1].idcg == pytest.approx(result.idcg)


def test_k_cuts_the_returned_list():
    result = ndcg([1, 3, 3], [3, 3, 1], k=1, gain="linear")

    assert result.dcg == 1.0
    assert len(result.rows) == 1


@pytest.mark.parametrize("bad_k", [0, -1, 2.5, True])
def test_k_must_be_a_positive_integer_or_none(bad_k):
    with pytest.raises(ValueError, match="k must be"):
        ndcg([1], [1], k=bad_k)


@pytest.mark.parametrize(
    "option", [{"gain": "square"}, {"discount": "ln"}, {"ideal_depth": "x"}, {"unjudged": "x"}]
)
def test_unknown_definitions_are_refused(option):
    with pytest.raises(ValueError):
        ndcg([1], [1], k=1, **option)


def test_mean_ndcg_counts_queries_whose_idcg_is_zero():
    results = [ndcg([2, 3, 1, 2], [3, 2, 2, 1], k=4), ndcg([0], [0], k=4)]

    summary = mean_ndcg(results)

    assert summary.queries == 2
    assert summary.zero_idcg_queries == 1
    assert summary.mean == pytest.approx(0.8507938310514055 / 2, abs=TOLERANCE)
