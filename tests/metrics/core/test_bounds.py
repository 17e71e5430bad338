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
