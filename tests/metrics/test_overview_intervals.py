"""The overview's intervals are cached by the values they are drawn from: the same
values give the interval again without resampling, and any other value another one."""

import dataclasses
import datetime as dt

import numpy as np
import pytest
from django.core.cache import cache

from metrics.core.stats import bootstrap_mean_cis
from metrics.dashboards import overview
from metrics.dashboards.evaluations import Evaluation
from metrics.evaluate import INTERVAL_CONFIDENCE, INTERVAL_RESAMPLES, INTERVAL_SEED
from metrics.sources import Source


def evaluation(ndcg) -> Evaluation:
    ndcg = np.asarray(ndcg, dtype=np.float64)
    ones = np.ones(len(ndcg), dtype=np.int64)
    return Evaluation(
        result_list=None,
        query_ids=np.arange(len(ndcg), dtype=np.int64),
        ndcg=ndcg,
        dcg=ndcg,
        idcg=ndcg,
        judged=ones,
        retrieved=ones,
        judgements=ones,
        all_irrelevant=ndcg == 0,
        as_of=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
        source=Source.PACKED,
    )


def drawn(*series):
    return bootstrap_mean_cis(
        np.array(series),
        confidence=INTERVAL_CONFIDENCE,
        n_resamples=INTERVAL_RESAMPLES,
        seed=INTERVAL_SEED,
    )


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


def test_an_interval_is_drawn_once_for_the_same_values_and_again_for_other_values():
    rng = np.random.default_rng(3)
    first, second = rng.random(50), rng.random(50)

    assert overview._intervals([evaluation(first), evaluation(second)]) == drawn(first, second)
    key = overview._interval_key(first)
    kept = cache.get(key)
    assert kept == drawn(first)[0]
    # What is kept is what is given again: a planted interval shows it is not redrawn.
    planted = dataclasses.replace(kept, low=-1.0)
    cache.set(key, planted)
    assert overview._intervals([evaluation(first)]) == [planted]

    changed = first.copy()
    changed[7] += 1e-9
    assert overview._intervals([evaluation(changed), evaluation(second)]) == drawn(changed, second)


def test_lists_of_other_lengths_get_their_own_intervals():
    rng = np.random.default_rng(4)
    short, long = rng.random(20), rng.random(40)

    assert overview._intervals([evaluation(short), evaluation(long)]) == [
        drawn(short)[0],
        drawn(long)[0],
    ]
