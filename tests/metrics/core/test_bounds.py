"""metrics.core.bounds: the range of NDCG against every filling of the unjudged hits."""

from itertools import product

import numpy as np
import pytest

from metrics.core.bounds import ndcg_range
from metrics.core.ndcg import ndcg

SCALES = [(0, 1, 2, 3), (-1, 0, 1, 2, 3), (0, 1)]


def every_filling(ranked, judged, *, k, grades, ideal, **options):
    """NDCG of every filling, computed here with the plain ndcg of the filled list."""
    unjudged = [i for i, g in enumerate(ranked) if g is None]
    values = []
    for fill in product(grades, repeat=len(unjudged)):
        filled = list(ranked)
        for i, g in zip(unjudged, fill, strict=True):
            filled[i] = g
        source = [*judged, *fill] if ideal == "judged" else filled
        values.append(ndcg(filled, source, k=k, **options).ndcg)
    return min(values), max(values)


@pytest.mark.parametrize("seed", range(60))
def test_the_range_is_the_lowest_and_highest_ndcg_of_every_filling(seed):
    rng = np.random.default_rng(seed)
    grades = SCALES[seed % len(SCALES)]
    length = int(rng.integers(1, 8))
    ranked = [None if rng.random() < 0.45 else int(rng.choice(grades)) for _ in range(length)]
    judged = [g for g in ranked if g is not None] + [int(g) for g in rng.choice(grades, 2)]
    k = [None, 1, 3, 5][seed % 4]
    options = {
        "gain": ["linear", "exponential"][seed % 2],
        "discount": ["log2", "rank"][(seed // 2) % 2],
        "ideal": ["judged", "returned"][(seed // 3) % 2],
        "ideal_depth": ["cut", "full"][(seed // 5) % 2],
    }

    found = ndcg_range(ranked, judged, k=k, grades=grades, **options)
    low, high = every_filling(ranked, judged, k=k, grades=grades, **options)

    assert found.low == pytest.approx(low, abs=1e-12)
    assert found.high == pytest.approx(high, abs=1e-12)
    assert found.low <= found.high


def test_filling_all_lowest_then_all_highest_is_not_the_range():
    ranked, judged = [3, None, 1, None], [3, 1, 0]

    found = ndcg_range(ranked, judged, k=3, grades=[0, 1, 2, 3], gain="linear")

    all_low = ndcg([3, 0, 1, 0], [*judged, 0, 0], k=3, gain="linear").ndcg
    all_high = ndcg([3, 3, 1, 3], [*judged, 3, 3], k=3, gain="linear").ndcg
    assert (round(all_low, 4), round(all_high, 4)) == (0.9639, 0.8436)
    assert found.low < all_high < all_low < found.high
    assert (round(found.low, 4), found.high) == (0.649, 1.0)


def test_a_fully_judged_list_has_one_value():
    found = ndcg_range([3, 0, 2], [3, 2, 0, 1], k=3, grades=[0, 1, 2, 3])

    exact = ndcg([3, 0, 2], [3, 2, 0, 1], k=3).ndcg
    assert found.low == found.high == exact
    assert found.low_fill == found.high_fill == ()


def _batch(rankings):
    flat = [np.nan if g is None else g for ranking in rankings for g in ranking]
    offsets = np.cumsum([0, *map(len, rankings)])
    return np.array(flat, dtype=float), offsets


@pytest.mark.parametrize("seed", range(20))
def test_the_bounds_of_the_mean_difference_hold_every_joint_filling(seed):
    """Two lists over the same queries sharing documents: a shared unjudged document
    gets one grade in both, and every such filling's mean B - A lies in the bounds."""
    from metrics.core.bounds import difference_bounds, ndcg_ranges

    rng = np.random.default_rng(1000 + seed)
    grades = (0, 1, 2)
    k = [None, 2, 3][seed % 3]
    queries = int(rng.integers(1, 3))
    docs = {}  # (query, doc) -> grade or None
    lists = {"a": [], "b": []}
    for q in range(queries):
        pool = list(range(5))
        for d in pool:
            docs[q, d] = None if rng.random() < 0.4 else int(rng.choice(grades))
        for side in lists:
            lists[side].append([int(d) for d in rng.permutation(pool)[: int(rng.integers(1, 4))]])
    returned = {(q, d) for side in lists.values() for q in range(queries) for d in side[q]}
    # Unjudged documents neither list returned stay out of the fillings (and the ideal).
    docs = {key: g for key, g in docs.items() if g is not None or key in returned}
    judged = [
        [g for (q2, _), g in docs.items() if q2 == q and g is not None] for q in range(queries)
    ]
    open_pairs = [key for key, g in docs.items() if g is None]

    def ranges(side):
        other = lists["b" if side == "a" else "a"]
        others = [
            len({d for d in other[q] if docs[q, d] is None} - set(lists[side][q]))
            for q in range(queries)
        ]
        ranked, offsets = _batch([[docs[q, d] for d in lists[side][q]] for q in range(queries)])
        j, jo = _batch(judged)
        return ndcg_ranges(
            ranked, offsets, j, jo, k=k, grades=grades, gain="linear", others=np.array(others)
        )

    ra, rb = ranges("a"), ranges("b")
    low, high = difference_bounds(ra.low, ra.high, rb.low, rb.high)
    for fill in product(grades, repeat=len(open_pairs)):
        filled = dict(docs) | dict(zip(open_pairs, fill, strict=True))
        diffs = []
        for q in range(queries):
            ideal = [g for (q2, _), g in filled.items() if q2 == q]
            a = ndcg([filled[q, d] for d in lists["a"][q]], ideal, k=k, gain="linear").ndcg
            b = ndcg([filled[q, d] for d in lists["b"][q]], ideal, k=k, gain="linear").ndcg
            diffs.append(b - a)
        assert low - 1e-12 <= np.mean(diffs) <= high + 1e-12


@pytest.mark.parametrize("seed", range(10))
def test_the_batch_ranges_are_those_of_each_query(seed):
    from metrics.core.bounds import ndcg_ranges

    rng = np.random.default_rng(seed)
    grades = (0, 1, 2, 3)
    rankings = [
        [
            None if rng.random() < 0.3 else int(rng.choice(grades))
            for _ in range(int(rng.integers(0, 6)))
        ]
        for _ in range(6)
    ]
    judged = [[g for g in r if g is not None] + [int(rng.choice(grades))] for r in rankings]
    ranked, offsets = _batch(rankings)
    j, jo = _batch(judged)
    found = ndcg_ranges(ranked, offsets, j, jo, k=3, grades=grades)
    for q, (r, jq) in enumerate(zip(rankings, judged, strict=True)):
        if not r:
            continue
        one = ndcg_range(r, jq, k=3, grades=grades)
        assert found.low[q] == pytest.approx(one.low) and found.high[q] == pytest.approx(one.high)
        assert found.open[q] == (None in r)


@pytest.mark.parametrize("seed", range(40))
def test_the_batch_ranges_of_many_queries_at_once_are_those_of_each_query(seed):
    """ndcg_ranges' all-queries-at-once path (judged ideal cut at k) against ndcg_range
    one query at a time: lists longer and shorter than k, judged pools larger than k,
    other lists' unjudged documents, negative grades, both gains and discounts."""
    from metrics.core.bounds import ndcg_ranges

    rng = np.random.default_rng(seed)
    grades = SCALES[seed % len(SCALES)]
    k = int(rng.integers(1, 8))
    options = {
        "gain": ("linear", "exponential")[seed % 2],
        "discount": ("log2", "rank")[(seed // 2) % 2],
    }
    share = rng.uniform(0.1, 0.9)
    rankings = [
        [
            None if rng.random() < share else int(rng.choice(grades))
            for _ in range(int(rng.integers(0, 2 * k + 3)))
        ]
        for _ in range(40)
    ]
    judged = [
        [g for g in r if g is not None]
        + [int(rng.choice(grades)) for _ in range(int(rng.integers(0, k + 3)))]
        for r in rankings
    ]
    others = rng.integers(0, 3, len(rankings)) * (rng.random(len(rankings)) < 0.3)
    ranked, offsets = _batch(rankings)
    j, jo = _batch(judged)
    found = ndcg_ranges(ranked, offsets, j, jo, k=k, grades=grades, others=others, **options)
    opened = 0
    for q, (r, jq) in enumerate(zip(rankings, judged, strict=True)):
        if not r:
            continue
        one = ndcg_range(r, jq, k=k, grades=grades, others=int(others[q]), **options)
        assert found.low[q] == pytest.approx(one.low, abs=1e-12), (q, r, jq)
        assert found.high[q] == pytest.approx(one.high, abs=1e-12), (q, r, jq)
        opened += bool(found.open[q])
    assert opened  # the batch path ran for some queries
