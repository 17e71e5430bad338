import itertools

import numpy as np
import pytest

from metrics.core import batch, grade_counts, ndcg, ndcg_batch, offsets_from_lengths
from metrics.core.batch import idcg_from_counts, idcg_from_grades, ranked_dcg
from metrics.core.batch_dcg import _sorted_highest_first

from .worked_examples import EXAMPLES

TOLERANCE = 1e-9


def flatten(lists):
    """Flat float array (None as NaN) and offsets of a list of per-query lists."""
    values = [np.nan if g is None else g for grades in lists for g in grades]
    return np.array(values, dtype=float), offsets_from_lengths([len(g) for g in lists])


DEFINITIONS = sorted({(e.gain, e.discount) for e in EXAMPLES})


@pytest.mark.parametrize(("gain", "discount"), DEFINITIONS)
def test_batch_reproduces_every_worked_example_in_one_call(gain, discount):
    chosen = [e for e in EXAMPLES if e.gain == gain and e.discount == discount]
    ranked, offsets = flatten([e.ranked for e in chosen])
    ideal, ideal_offsets = flatten([e.ideal for e in chosen])

    result = ndcg_batch(
        ranked, offsets, k=None, ideal_grades=ideal, ideal_offsets=ideal_offsets,
        gain=gain, discount=discount,
    )  # fmt: skip

    for i, example in enumerate(chosen):
        assert result.dcg[i] == pytest.approx(example.dcg, abs=TOLERANCE)
        if example.idcg is not None:
            assert result.idcg[i] == pytest.approx(example.idcg, abs=TOLERANCE)
            assert result.ndcg[i] == pytest.approx(example.ndcg, abs=TOLERANCE)


def test_batch_reproduces_worked_examples_from_per_grade_counts():
    chosen = [e for e in EXAMPLES if e.gain == "exponential"]
    ranked, offsets = flatten([e.ranked for e in chosen])
    ideal, ideal_offsets = flatten([e.ideal for e in chosen])
    counts = grade_counts(ideal, ideal_offsets)

    result = ndcg_batch(ranked, offsets, k=None, ideal_counts=counts)

    assert result.ndcg.tolist() == pytest.approx([e.ndcg for e in chosen], abs=TOLERANCE)


def test_batch_agrees_with_the_per_query_function_at_a_cut_off():
    lists = [[3, None, 0, 2, 1], [], [0, 0], [1, 2, 3, 3, 2, 1, 0]]
    judged = [[3, 2, 2, 1, 0], [3], [0], [3, 3, 2, 2, 1, 1, 0]]
    ranked, offsets = flatten(lists)
    ideal, ideal_offsets = flatten(judged)

    result = ndcg_batch(ranked, offsets, k=3, ideal_grades=ideal, ideal_offsets=ideal_offsets)

    expected = [ndcg(r, j, k=3).ndcg for r, j in zip(lists, judged, strict=True)]
    assert result.ndcg.tolist() == pytest.approx(expected, abs=1e-12)


def test_batch_reports_judged_coverage_within_k():
    ranked, offsets = flatten([[1, None, None, 2], [None]])
    ideal, ideal_offsets = flatten([[2, 1], [1]])

    result = ndcg_batch(ranked, offsets, k=3, ideal_grades=ideal, ideal_offsets=ideal_offsets)

    assert result.judged.tolist() == [1, 0]
    assert result.retrieved.tolist() == [3, 1]
    assert result.coverage.tolist() == pytest.approx([1 / 3, 0.0])


def test_batch_counts_queries_whose_idcg_is_zero_and_scores_them_zero():
    ranked, offsets = flatten([[0, 1], [0], [2]])
    ideal, ideal_offsets = flatten([[0], [0, -1], [2]])

    result = ndcg_batch(ranked, offsets, k=10, ideal_grades=ideal, ideal_offsets=ideal_offsets)

    assert result.zero_idcg_count == 2
    assert result.all_irrelevant.tolist() == [True, True, False]
    assert result.ndcg.tolist() == [0.0, 0.0, 1.0]
    assert result.mean == pytest.approx(1 / 3)


def test_batch_handles_queries_with_no_hit():
    ranked, offsets = flatten([[], [3], []])
    ideal, ideal_offsets = flatten([[3], [3], []])

    result = ndcg_batch(ranked, offsets, k=5, ideal_grades=ideal, ideal_offsets=ideal_offsets)

    assert result.ndcg.tolist() == [0.0, 1.0, 0.0]
    assert result.retrieved.tolist() == [0, 1, 0]


def test_batch_of_no_query_has_mean_zero():
    result = ndcg_batch(np.zeros(0), [0], k=5, ideal_grades=np.zeros(0), ideal_offsets=[0])

    assert len(result.ndcg) == 0
    assert result.mean == 0.0
    assert result.zero_idcg_count == 0


def test_batch_removing_unjudged_matches_the_per_query_function():
    lists = [[None, 3, None, 2, 1], [None, None]]
    judged = [[3, 2, 1], [1]]
    ranked, offsets = flatten(lists)
    ideal, ideal_offsets = flatten(judged)

    result = ndcg_batch(
        ranked, offsets, k=2, ideal_grades=ideal, ideal_offsets=ideal_offsets, unjudged="remove"
    )

    expected = [ndcg(r, j, k=2, unjudged="remove") for r, j in zip(lists, judged, strict=True)]
    assert result.ndcg.tolist() == pytest.approx([e.ndcg for e in expected], abs=1e-12)
    assert result.judged.tolist() == [e.judged for e in expected]


def test_batch_full_ideal_depth_matches_the_per_query_function():
    ranked, offsets = flatten([[3, 1], [2]])
    ideal, ideal_offsets = flatten([[3, 3, 1], [2, 2]])

    result = ndcg_batch(
        ranked, offsets, k=1, ideal_grades=ideal, ideal_offsets=ideal_offsets, ideal_depth="full"
    )

    expected = [ndcg([3, 1], [3, 3, 1], k=1, ideal_depth="full").ndcg,
                ndcg([2], [2, 2], k=1, ideal_depth="full").ndcg]  # fmt: skip
    assert result.ndcg.tolist() == pytest.approx(expected, abs=1e-12)


def test_fractional_grades_take_the_sorting_path_and_agree():
    lists = [[2.5, 0.5, None, 1.25], [0.1]]
    judged = [[0.5, 2.5, 1.25, 3.75], [0.1, 0.2]]
    ranked, offsets = flatten(lists)
    ideal, ideal_offsets = flatten(judged)

    assert grade_counts(ideal, ideal_offsets) is None
    result = ndcg_batch(ranked, offsets, k=3, ideal_grades=ideal, ideal_offsets=ideal_offsets)

    expected = [ndcg(r, j, k=3).ndcg for r, j in zip(lists, judged, strict=True)]
    assert result.ndcg.tolist() == pytest.approx(expected, abs=1e-12)


def test_ideal_from_counts_equals_ideal_from_sorted_grades():
    grades, offsets = flatten([[3, 0, 2, 2, 1, 3], [1], [], [0, 0]])
    counts = grade_counts(grades, offsets)

    for depth in (None, 1, 3, 10):
        from_counts = idcg_from_counts(counts, depth, "exponential", "log2")
        from_grades = idcg_from_grades(grades + 0.0, offsets, depth, "exponential", "log2")
        assert from_counts.tolist() == pytest.approx(from_grades.tolist(), abs=1e-12)


def test_dense_and_flat_dcg_paths_agree():
    rng = np.random.default_rng(7)
    lengths = np.r_[rng.integers(0, 5, size=50), 400]  # One long list forces the flat path.
    offsets = offsets_from_lengths(lengths)
    ranked = rng.integers(0, 4, size=offsets[-1]).astype(float)

    flat = ranked_dcg(ranked, offsets, 3, "exponential", "log2")
    dense = ranked_dcg(ranked[:-400], offsets[:-1], 3, "exponential", "log2")

    assert flat[:-1].tolist() == pytest.approx(dense.tolist(), abs=1e-12)


def test_batch_needs_exactly_one_ideal_form():
    ranked, offsets = flatten([[1]])
    with pytest.raises(ValueError, match="exactly one"):
        ndcg_batch(ranked, offsets, k=1)
    with pytest.raises(ValueError, match="exactly one"):
        ndcg_batch(
            ranked, offsets, k=1, ideal_grades=ranked, ideal_offsets=offsets,
            ideal_counts=[[0, 1]],
        )  # fmt: skip


@pytest.mark.parametrize("bad_offsets", [[1, 2], [0, 3], [0, 2, 1, 2], []])
def test_batch_refuses_offsets_that_do_not_describe_the_grades(bad_offsets):
    with pytest.raises(ValueError, match="offsets"):
        ndcg_batch([1.0, 2.0], bad_offsets, k=1, ideal_counts=[[0, 1]])


def test_batch_refuses_ideal_counts_of_the_wrong_shape():
    with pytest.raises(ValueError, match="ideal_counts"):
        ndcg_batch([1.0], [0, 1], k=1, ideal_counts=[[0, 1], [1, 0]])


@pytest.mark.parametrize("unjudged", ["zero", "remove"])
def test_results_do_not_depend_on_how_queries_are_split_into_blocks(monkeypatch, unjudged):
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 12, size=25)
    ranked = rng.choice([np.nan, 0, 1, 2, 3], size=lengths.sum())
    offsets = offsets_from_lengths(lengths)
    judged_lengths = rng.integers(0, 8, size=25)
    judged = rng.integers(0, 4, size=judged_lengths.sum()).astype(float)
    ideal = {"ideal_grades": judged, "ideal_offsets": offsets_from_lengths(judged_lengths)}
    whole = ndcg_batch(ranked, offsets, k=5, unjudged=unjudged, **ideal)

    monkeypatch.setattr(batch, "BLOCK_QUERIES", 4)
    blocked = ndcg_batch(ranked, offsets, k=5, unjudged=unjudged, **ideal)
    counted = ndcg_batch(
        ranked,
        offsets,
        k=5,
        unjudged=unjudged,
        ideal_counts=grade_counts(judged, ideal["ideal_offsets"]),
    )

    for result in (blocked, counted):
        assert result.ndcg.tolist() == pytest.approx(whole.ndcg.tolist(), abs=1e-12)
        assert result.judged.tolist() == whole.judged.tolist()


def test_fractional_grades_already_highest_first_give_the_sorted_ideal_bit_for_bit():
    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 40, size=500)
    grades = rng.integers(0, 7, size=lengths.sum()) / 2  # halves: the sort path
    offsets = offsets_from_lengths(lengths)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    highest_first = grades[np.lexsort((-grades, owner))]

    for depth in (None, 1, 10):
        shuffled = idcg_from_grades(grades, offsets, depth, "exponential", "log2")
        presorted = idcg_from_grades(highest_first, offsets, depth, "exponential", "log2")
        assert presorted.tolist() == shuffled.tolist()


@pytest.mark.parametrize("k", [None, 1, 3, 20])
def test_removing_unjudged_counts_and_scores_as_the_per_query_function(k):
    rng = np.random.default_rng(12)
    lists = [
        [None if rng.random() < 0.5 else int(rng.integers(0, 4)) for _ in range(length)]
        for length in rng.integers(0, 15, size=40)
    ]
    judged = [[grade for grade in grades if grade is not None] + [2] for grades in lists]
    ranked, offsets = flatten(lists)
    ideal, ideal_offsets = flatten(judged)

    result = ndcg_batch(
        ranked, offsets, k=k, ideal_grades=ideal, ideal_offsets=ideal_offsets, unjudged="remove"
    )

    expected = [ndcg(r, j, k=k, unjudged="remove") for r, j in zip(lists, judged, strict=True)]
    assert result.judged.tolist() == [e.judged for e in expected]
    assert result.retrieved.tolist() == [e.retrieved for e in expected]
    assert result.ndcg.tolist() == pytest.approx([e.ndcg for e in expected], abs=1e-12)


# Similar lengths sort as the rows of a matrix; one list far longer than the rest sorts
# all grades at once instead.
@pytest.mark.parametrize("longest", [12, 5000])
def test_fractional_grades_come_highest_first_by_either_sort(longest):
    rng = np.random.default_rng(11)
    lengths = np.r_[rng.integers(0, 12, size=60), longest]
    grades = rng.choice([np.nan, -1.0, 0.0, 0.5, 1.0, 1.25, 2.5, 3.0], size=lengths.sum())
    offsets = offsets_from_lengths(lengths)

    values, sorted_offsets = _sorted_highest_first(grades, offsets, grades >= 0)

    expected = [
        sorted((grade for grade in grades[start:end] if grade >= 0), reverse=True)
        for start, end in itertools.pairwise(offsets)
    ]
    bounds = itertools.pairwise(sorted_offsets)
    assert [values[start:end].tolist() for start, end in bounds] == expected


@pytest.mark.parametrize("k", [5, 10, None])
@pytest.mark.parametrize("unjudged", ["zero", "remove"])
def test_a_querys_values_do_not_depend_on_the_queries_beside_it_bit_for_bit(k, unjudged):
    # A refresh recomputes one query, a split recompute a chunk of the list: each must
    # store exactly what the whole list's computation stores. Mean-consensus grades mix
    # halves (the sorting path) with whole grades (the counts path), and one long list
    # makes the whole batch take the flat DCG path where a chunk takes the dense one.
    rng = np.random.default_rng(11)
    lengths = np.r_[rng.integers(0, 15, size=60), 300]
    ranked = rng.choice([np.nan, 0, 1, 2, 3, 0.5, 1.5], size=lengths.sum())
    judged_lengths = rng.integers(0, 20, size=61)
    judged = rng.integers(0, 4, size=judged_lengths.sum()).astype(float)
    judged[: judged_lengths[:30].sum()] /= 2  # The first 30 queries' grades are halves.
    queries = [
        (ranked[a:b], judged[c:d])
        for a, b, c, d in zip(
            *(offsets_from_lengths(lengths)[:-1], offsets_from_lengths(lengths)[1:]),
            *(offsets_from_lengths(judged_lengths)[:-1], offsets_from_lengths(judged_lengths)[1:]),
            strict=True,
        )
    ]

    def computed(chosen):
        hits, hit_offsets = flatten([list(queries[i][0]) for i in chosen])
        ideal, ideal_offsets = flatten([list(queries[i][1]) for i in chosen])
        result = ndcg_batch(
            hits, hit_offsets, k=k, unjudged=unjudged,
            ideal_grades=ideal, ideal_offsets=ideal_offsets,
        )  # fmt: skip
        return np.c_[result.ndcg, result.dcg, result.idcg]

    whole = computed(range(61))
    assert np.array_equal(np.vstack([computed([i]) for i in range(61)]), whole)
    for start in range(0, 61, 7):
        chunk = range(start, min(start + 7, 61))
        assert np.array_equal(computed(chunk), whole[start : start + 7])
