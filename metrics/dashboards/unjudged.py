"""Unjudged work of a result list: hits within the cut-off that have no grade yet.

While any remain, the list's numbers are provisional: an unjudged hit counts as
irrelevant (or is removed), and a grade may still raise or lower it. Pairs in the
project's pool (the top ``pool_depth`` hits of any list) are already in the raters'
queue; pairs ranked deeper in every list are not, and stay unjudged unless the pool
is deepened or an analyst imports grades.
"""

import datetime as dt
from dataclasses import dataclass

import numpy as np
from django.utils import timezone

from judgements.models import Project, ResultList
from metrics import selectors
from metrics.core.segments import positions, segment_maxima, segment_sums
from metrics.dashboards.overview import POOL_PAIR_COLUMNS, POOL_PAIRS_SQL


@dataclass(frozen=True)
class UnjudgedQuery:
    query_id: int
    retrieved: int
    unjudged: int
    # Position in the ranking (1 is the top) of the highest unjudged hit.
    first_rank: int


@dataclass(frozen=True)
class UnjudgedWork:
    k: int | None
    as_of: dt.datetime
    queries: int
    hits: int
    unjudged: int
    in_pool: int
    pool_depth: int
    # Queries with an unjudged hit, the most unjudged first.
    rows: list[UnjudgedQuery]

    @property
    def judged(self) -> int:
        return self.hits - self.unjudged

    @property
    def outside_pool(self) -> int:
        return self.unjudged - self.in_pool

    @property
    def provisional(self) -> bool:
        return self.unjudged > 0


def unjudged_work(
    project: Project, result_list: ResultList, *, k: int | None, as_of: dt.datetime | None
) -> UnjudgedWork:
    """The list's first ``k`` hits per query without a grade as of ``as_of`` (a grade by
    any rater counts; "can't tell" does not), and how many of them are in the pool."""
    moment = as_of or timezone.now()
    hits = selectors.ranked_documents(result_list.pk, depth=k)
    pairs = selectors.pair_grades(project.pk, as_of=moment, policy="mean")
    missing = np.isnan(selectors.graded(hits, pairs).ranked_grades)
    hit_queries = np.repeat(hits.query_ids, np.diff(hits.offsets))
    keys = selectors.pair_keys(hit_queries[missing], hits.document_ids[missing])
    pool = selectors.copy_rows(POOL_PAIRS_SQL, {"project": project.pk}, POOL_PAIR_COLUMNS)
    pooled = np.isin(keys, selectors.pair_keys(pool["query_id"], pool["document_id"]))
    return UnjudgedWork(
        k=k,
        as_of=moment,
        queries=len(hits.query_ids),
        hits=len(hits.document_ids),
        unjudged=int(missing.sum()),
        in_pool=int(pooled.sum()),
        pool_depth=project.pool_depth,
        rows=_rows(hits, missing),
    )


def _rows(hits: selectors.RankedDocuments, missing: np.ndarray) -> list[UnjudgedQuery]:
    counts = segment_sums(missing.astype(np.float64), hits.offsets).astype(np.int64)
    rank = positions(hits.offsets) + 1
    # The highest unjudged hit of each query: the largest of -rank over its unjudged hits.
    first = -segment_maxima(np.where(missing, -rank, -np.inf), hits.offsets, empty=-np.inf)
    lengths = np.diff(hits.offsets)
    order = np.lexsort((hits.query_ids, -counts))
    return [
        UnjudgedQuery(int(hits.query_ids[i]), int(lengths[i]), int(counts[i]), int(first[i]))
        for i in order.tolist()
        if counts[i] > 0
    ]
