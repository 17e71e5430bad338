"""Negative grades that penalise: signed gains and min-max NDCG (Gienapp et al., CIKM 2020).

The expected values are worked by hand from the definition in metrics/core/ndcg.py;
each test spells the sums out. Discounts (log2): rank 1 → 1, rank 2 → 1/log2(3) =
0.6309297535714575, rank 3 → 1/2, rank 4 → 1/log2(5) = 0.43067655807339306.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.core import ideal_grades, ndcg, ndcg_batch, offsets_from_lengths, signed_gain_values

from .trec_files import run_command

TOLERANCE = 1e-12
D2, D4 = 0.6309297535714575, 0.43067655807339306

# One query's judged documents: A = 3, B = 2, C = -2 (harmful), D = 0.
JUDGED = [3, 2, -2, 0]
HARM_FIRST = [-2, 3, 2, 0]  # C, A, B, D
HARM_LAST = [3, 2, 0, -2]  # A, B, D, C: the harmful result moved from rank 1 to rank 4


def test_signed_gains_keep_the_sign_of_negative_grades():
    assert signed_gain_values([3, -1, -2, 0, np.nan], "exponential").tolist() == [
        7.0,
        -1.0,
        -3.0,
        0.0,
        0.0,
    ]
    assert signed_gain_values([3, -1.5, np.nan], "linear").tolist() == [3.0, -1.5, 0.0]


def test_moving_the_harmful_result_from_rank_1_to_rank_4_linear_gain():
    # maxDCG@4 = 3·1 + 2·D2 = 4.2618595071429155 (A, B; D adds 0, C is left out)
    # minDCG@4 = -2·1 = -2 (C first, then gain 0)
    # DCG(harm first) = -2·1 + 3·D2 + 2·(1/2) + 0 = 0.8927892607143726
    # DCG(harm last)  = 3·1 + 2·D2 + 0 - 2·D4 = 3.4005063909961293
    first = ndcg(HARM_FIRST, JUDGED, k=4, gain="linear", negative="penalise")
    last = ndcg(HARM_LAST, JUDGED, k=4, gain="linear", negative="penalise")

    assert first.idcg == pytest.approx(3 + 2 * D2, abs=TOLERANCE)
    assert first.min_dcg == -2.0
    assert first.dcg == pytest.approx(-2 + 3 * D2 + 1, abs=TOLERANCE)
    assert last.dcg == pytest.approx(3 + 2 * D2 - 2 * D4, abs=TOLERANCE)
    # (0.8927892607143726 + 2) / (4.2618595071429155 + 2)
    assert first.ndcg == pytest.approx(0.4619696844706532, abs=TOLERANCE)
    # (3.4005063909961293 + 2) / (4.2618595071429155 + 2)
    assert last.ndcg == pytest.approx(0.8624445158559948, abs=TOLERANCE)


def test_moving_the_harmful_result_from_rank_1_to_rank_4_exponential_gain():
    # Gains: 3 → 7, 2 → 3, 0 → 0, -2 → -(2^2 - 1) = -3.
    # maxDCG@4 = 7 + 3·D2 = 8.892789260714373; minDCG@4 = -3
    # DCG(harm first) = -3 + 7·D2 + 3/2 = 2.9165082750002025
    # DCG(harm last)  = 7 + 3·D2 - 3·D4 = 7.600759586494194
    first = ndcg(HARM_FIRST, JUDGED, k=4, negative="penalise")
    last = ndcg(HARM_LAST, JUDGED, k=4, negative="penalise")

    assert first.min_dcg == -3.0
    assert first.ndcg == pytest.approx((2.9165082750002025 + 3) / 11.892789260714373, abs=1e-15)
    assert last.ndcg == pytest.approx((7.600759586494194 + 3) / 11.892789260714373, abs=1e-15)
    assert first.ndcg == pytest.approx(0.4974870188395831, abs=TOLERANCE)
    assert last.ndcg == pytest.approx(0.8913602481389156, abs=TOLERANCE)


def test_the_zero_rule_does_not_see_the_harmful_result_at_rank_4():
    # Under trec_eval's rule C has gain 0: A, B, D, C is the ideal ordering.
    # Harm first: (3·D2 + 2/2) / (3 + 2·D2) = 0.6787622294601761.
    first = ndcg(HARM_FIRST, JUDGED, k=4, gain="linear")
    last = ndcg(HARM_LAST, JUDGED, k=4, gain="linear")

    assert first.ndcg == pytest.approx(0.6787622294601761, abs=TOLERANCE)
    assert last.ndcg == 1.0
    assert ndcg(HARM_LAST, JUDGED, k=4, gain="linear", negative="penalise").ndcg < 1.0


def test_the_worst_ordering_fills_with_zero_gain_not_with_the_relevant_documents():
    # Judged: 3, 2, 2 and -1; the list shows the harmful one, then two unjudged hits.
    # Worst ordering at k = 3: -1, then gain 0, 0 (not the reversed ideal -1, 2, 2, which
    # this list would score below). So the list is the worst possible: NDCG 0, not < 0.
    result = ndcg([-1, None, None], [3, 2, 2, -1], k=3, gain="linear", negative="penalise")

    assert result.min_dcg == -1.0
    assert result.dcg == -1.0
    assert result.ndcg == 0.0


def test_a_query_with_only_harmful_and_irrelevant_documents_scores_how_well_it_avoids_harm():
    judged = [0, -1]
    # maxDCG = 0, minDCG@2 = -1: avoiding the harmful document scores 1, showing it first 0,
    # and at rank 2: (-D2 + 1) / (0 + 1) = 0.36907024642854247.
    assert ndcg([0, None], judged, k=2, gain="linear", negative="penalise").ndcg == 1.0
    assert ndcg([-1, 0], judged, k=2, gain="linear", negative="penalise").ndcg == 0.0
    at_two = ndcg([0, -1], judged, k=2, gain="linear", negative="penalise")
    assert at_two.ndcg == pytest.approx(1 - D2, abs=TOLERANCE)
    assert not at_two.all_irrelevant


def test_ndcg_is_zero_when_every_judged_grade_is_zero():
    result = ndcg([0, None], [0, 0], k=2, negative="penalise")

    assert result.all_irrelevant
    assert result.ndcg == 0.0


def test_without_negative_grades_both_rules_give_the_same_numbers_exactly():
    for ranked, judged in [([2, 3, 1, 2], [3, 2, 2, 1]), ([3, None, 0, 1], [3, 1, 0, 2])]:
        for depth in ("cut", "full"):
            zero = ndcg(ranked, judged, k=3, ideal_depth=depth)
            penalise = ndcg(ranked, judged, k=3, ideal_depth=depth, negative="penalise")
            assert penalise.ndcg == zero.ndcg
            assert [r.ndcg_at for r in penalise.rows] == [r.ndcg_at for r in zero.rows]


def test_the_working_rows_show_the_worst_ordering_and_end_at_the_querys_ndcg():
    result = ndcg(HARM_FIRST, JUDGED, k=4, gain="linear", negative="penalise")

    assert [row.worst_grade for row in result.rows] == [-2.0, None, None, None]
    assert [row.min_dcg for row in result.rows] == [-2.0, -2.0, -2.0, -2.0]
    assert result.rows[0].ndcg_at == 0.0  # rank 1 is the worst possible first hit
    assert result.rows[-1].ndcg_at == result.ndcg


def test_full_ideal_depth_sums_every_harmful_document_in_the_worst_ordering():
    # k = 1, judged 3, -1, -2 (linear): minDCG(full) = -2 - 1·D2, maxDCG(full) = 3.
    result = ndcg([-1], [3, -1, -2], k=1, gain="linear", ideal_depth="full", negative="penalise")

    assert result.min_dcg == pytest.approx(-2 - D2, abs=TOLERANCE)
    assert result.ndcg == pytest.approx((-1 + 2 + D2) / (3 + 2 + D2), abs=TOLERANCE)


def test_the_batch_needs_grades_not_counts_to_penalise():
    with pytest.raises(ValueError, match="needs ideal_grades"):
        ndcg_batch([1.0], [0, 1], k=1, ideal_counts=[[0, 1]], negative="penalise")
    with pytest.raises(ValueError, match="negative must be one of"):
        ndcg([1], [1], k=1, negative="subtract")


SIGNED_GRADE = st.one_of(
    st.integers(min_value=-3, max_value=3).map(float),
    st.floats(min_value=-3, max_value=3, allow_nan=False),
)


@st.composite
def query(draw):
    ranked = draw(st.lists(st.one_of(st.none(), SIGNED_GRADE), max_size=12))
    unreturned = draw(st.lists(SIGNED_GRADE, max_size=6))
    return ranked, [g for g in ranked if g is not None] + unreturned


@settings(max_examples=100)
@given(
    st.lists(query(), max_size=10),
    st.one_of(st.none(), st.integers(min_value=1, max_value=10)),
    st.sampled_from(["exponential", "linear"]),
    st.sampled_from(["log2", "rank"]),
    st.sampled_from(["cut", "full"]),
    st.sampled_from(["zero", "remove"]),
)
def test_penalised_ndcg_stays_in_0_1_and_the_batch_agrees(queries, k, gain, discount, depth, unj):
    ranked = np.array([np.nan if g is None else g for r, _ in queries for g in r], dtype=float)
    offsets = offsets_from_lengths([len(r) for r, _ in queries])
    ideal = np.array([g for _, j in queries for g in j], dtype=float)
    ideal_offsets = offsets_from_lengths([len(j) for _, j in queries])
    options = {"gain": gain, "discount": discount, "ideal_depth": depth, "unjudged": unj}

    batch = ndcg_batch(
        ranked, offsets, k=k, ideal_grades=ideal, ideal_offsets=ideal_offsets,
        negative="penalise", **options,
    )  # fmt: skip

    for i, (r, j) in enumerate(queries):
        single = ndcg(r, j, k=k, negative="penalise", **options)
        assert -1e-12 <= single.ndcg <= 1.0 + 1e-12
        assert abs(batch.ndcg[i] - single.ndcg) < 1e-9
        assert abs(batch.min_dcg[i] - single.min_dcg) < 1e-9
        assert batch.all_irrelevant[i] == single.all_irrelevant


QRELS = "q1 0 A 3\nq1 0 B 2\nq1 0 C -2\nq1 0 D 0\n"
RUN_HARM_FIRST = "q1 Q0 C 1 4 t\nq1 Q0 A 2 3 t\nq1 Q0 B 3 2 t\nq1 Q0 D 4 1 t\n"


def test_the_command_penalises_with_negative_penalise(tmp_path):
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text(QRELS)
    run.write_text(RUN_HARM_FIRST)

    _, zero, _ = run_command(qrels, run, "-m", "ndcg_cut.4", "--precision", "6")
    _, penalise, _ = run_command(
        qrels, run, "-m", "ndcg_cut.4", "--precision", "6", "--negative", "penalise"
    )

    assert zero == "ndcg_cut_4            \tall\t0.678762\n"
    assert penalise == "ndcg_cut_4            \tall\t0.461970\n"


def test_the_ideal_built_for_penalising_keeps_the_harmful_grades_for_the_worst_ordering():
    ideal = ideal_grades("judged", ranked_grades=HARM_FIRST, judged_grades=JUDGED)
    kept = ideal_grades("judged", ranked_grades=HARM_FIRST, judged_grades=JUDGED,
                        negative="penalise")  # fmt: skip

    assert ideal.tolist() == [3.0, 2.0, 0.0]
    assert kept.tolist() == [3.0, 2.0, 0.0, -2.0]
    penalised = ndcg(HARM_FIRST, kept, k=4, gain="linear", negative="penalise")
    assert penalised.ndcg == pytest.approx(0.4619696844706532, abs=TOLERANCE)
