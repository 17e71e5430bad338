import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.core import ideal_grades, ndcg, ndcg_batch, offsets_from_lengths

GAINS = st.sampled_from(["exponential", "linear"])
DISCOUNTS = st.sampled_from(["log2", "rank"])
CUTOFFS = st.one_of(st.none(), st.integers(min_value=1, max_value=12))
INTEGER_GRADE = st.integers(min_value=0, max_value=3).map(float)
FRACTIONAL_GRADE = st.floats(min_value=0, max_value=4, allow_nan=False)
GRADE = st.one_of(INTEGER_GRADE, FRACTIONAL_GRADE)
HIT = st.one_of(st.none(), GRADE)


@st.composite
def query(draw, hit=HIT):
    """Ranked grades and the judged grades of one query (the ranked ones plus unreturned)."""
    ranked = draw(st.lists(hit, max_size=15))
    unreturned = draw(st.lists(GRADE, max_size=8))
    return ranked, [g for g in ranked if g is not None] + unreturned


@given(query(), CUTOFFS, GAINS, DISCOUNTS, st.sampled_from(["cut", "full"]))
def test_ndcg_stays_between_zero_and_one_for_non_negative_grades(q, k, gain, discount, depth):
    ranked, judged = q

    result = ndcg(ranked, judged, k=k, gain=gain, discount=discount, ideal_depth=depth)

    assert 0.0 <= result.ndcg <= 1.0 + 1e-12


@given(st.lists(GRADE, min_size=1, max_size=15), CUTOFFS, GAINS, DISCOUNTS)
def test_the_ideal_ordering_scores_one(grades, k, gain, discount):
    best_first = sorted(grades, reverse=True)

    result = ndcg(best_first, grades, k=k, gain=gain, discount=discount)

    assert result.all_irrelevant or abs(result.ndcg - 1.0) < 1e-12


@given(query(), CUTOFFS, GAINS, DISCOUNTS, st.randoms(use_true_random=False))
def test_permuting_hits_with_equal_grades_changes_nothing(q, k, gain, discount, random):
    ranked, judged = q
    shuffled = list(ranked)
    # Swap hits that carry the same grade; the list of grades is unchanged by
    # construction, so this also checks nothing depends on hit identity.
    by_grade: dict = {}
    for i, g in enumerate(ranked):
        by_grade.setdefault(g, []).append(i)
    for positions in by_grade.values():
        targets = positions[:]
        random.shuffle(targets)
        for source, target in zip(positions, targets, strict=True):
            shuffled[target] = ranked[source]

    before = ndcg(ranked, judged, k=k, gain=gain, discount=discount)
    after = ndcg(shuffled, judged, k=k, gain=gain, discount=discount)

    assert after.ndcg == before.ndcg


@given(query(), CUTOFFS, GAINS)
def test_returned_ideal_never_scores_below_the_judged_ideal(q, k, gain):
    ranked, judged = q
    from_judged = ndcg(ranked, ideal_grades("judged", ranked_grades=ranked, judged_grades=judged),
                       k=k, gain=gain)  # fmt: skip
    from_returned = ndcg(ranked, ideal_grades("returned", ranked_grades=ranked), k=k, gain=gain)

    assert from_returned.ndcg >= from_judged.ndcg - 1e-12


@settings(max_examples=150)
@given(
    st.lists(query(), max_size=12),
    CUTOFFS,
    GAINS,
    DISCOUNTS,
    st.sampled_from(["cut", "full"]),
    st.sampled_from(["zero", "remove"]),
)
def test_batch_and_per_query_functions_agree(queries, k, gain, discount, depth, unjudged):
    ranked = np.array([np.nan if g is None else g for r, _ in queries for g in r], dtype=float)
    offsets = offsets_from_lengths([len(r) for r, _ in queries])
    ideal = np.array([g for _, j in queries for g in j], dtype=float)
    ideal_offsets = offsets_from_lengths([len(j) for _, j in queries])
    options = {"gain": gain, "discount": discount, "ideal_depth": depth, "unjudged": unjudged}

    batch = ndcg_batch(
        ranked, offsets, k=k, ideal_grades=ideal, ideal_offsets=ideal_offsets, **options
    )

    for i, (r, j) in enumerate(queries):
        single = ndcg(r, j, k=k, **options)
        assert abs(batch.ndcg[i] - single.ndcg) < 1e-12
        assert abs(batch.dcg[i] - single.dcg) < 1e-9
        assert abs(batch.idcg[i] - single.idcg) < 1e-9
        assert batch.judged[i] == single.judged
        assert batch.retrieved[i] == single.retrieved
