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

from config import pgcopy
from judgements.models import Project, ResultList
from metrics import evaluate, packed_reads
from metrics.core.segments import pair_keys, positions, segment_maxima
from metrics.registry import MetricSpec
from metrics.sources import Source, grades_freshness, one_snapshot

# The pool's pairs, as the progress bar counts them now: their keys (metrics.selectors.
# pair_keys) in any order, in one field (a field per row took half as long again).
POOL_PAIRS_SQL = """
SELECT string_agg(int8send((query_id << 32) | document_id), ''::bytea)
FROM judgements_queuepair WHERE project_id = %(project)s
"""


def pool_keys(project_id: int) -> np.ndarray:
    """The keys (``pair_keys``) of the project's pool pairs, now, in any order."""
    [column] = pgcopy.copy_row(POOL_PAIRS_SQL, {"project": project_id})
    return pgcopy.unpacked(column, ">i8")


def pooled_count(project_id: int, query_ids: np.ndarray, document_ids: np.ndarray) -> int:
    """How many of the (query, document) pairs are in the project's pool: its keys read
    once in binary and looked up here (sending tens of thousands of pairs as statement
    parameters cost about 0.3 s a list)."""
    if not len(query_ids):
        return 0
    wanted = pair_keys(query_ids, document_ids)
    return int(np.count_nonzero(np.isin(wanted, pool_keys(project_id))))


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
    source: Source
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


@one_snapshot
def unjudged_work(
    project: Project, result_list: ResultList, *, k: int | None, as_of: dt.datetime | None
) -> UnjudgedWork:
    """The list's first ``k`` hits per query without a grade as of ``as_of`` (a grade by
    any rater counts; "can't tell" does not), and how many of them are in the pool.

    The same reading of the grades as the list's metrics (``result_list_evaluate``), so
    the count equals their ``retrieved - judged``.
    """
    fresh = grades_freshness(project.pk, as_of=as_of)
    spec = MetricSpec(k=k, consensus=project.consensus)
    # The hits are read twice when some lie below the pool depth; should they change in
    # between (another statement's snapshot), both reads are made again.
    for _ in range(3):
        grades, result = evaluate.result_list_evaluate(result_list, spec, fresh=fresh)
        rank = positions(grades.offsets) + 1
        missing = np.isnan(grades.ranked_grades) & (rank <= (k or np.inf))
        # Unjudged hits within the pool depth are pooled; deeper ones only if another
        # list ranks them higher.
        deep = missing & (rank > project.pool_depth)
        pooled_deep = _pooled(result_list, grades, deep, k)
        if pooled_deep is not None:
            break
    counts = result.retrieved - result.judged
    return UnjudgedWork(
        k=k,
        as_of=fresh.moment,
        source=fresh.lists,
        queries=len(grades.query_ids),
        hits=int(result.retrieved.sum()),
        unjudged=int(counts.sum()),
        in_pool=int(counts.sum()) - int(deep.sum()) + (pooled_deep or 0),
        pool_depth=project.pool_depth,
        rows=_rows(grades, missing, counts, result.retrieved),
    )


def _pooled(result_list, grades, deep: np.ndarray, k: int | None) -> int | None:
    """How many of the ``deep`` hits are in the pool all the same (None if the list's
    hits are not those ``grades`` were read from)."""
    if not deep.any():
        return 0
    hits = packed_reads.ranked_documents(result_list.pk, depth=k)
    same = np.array_equal(hits.query_ids, grades.query_ids)
    if not (same and np.array_equal(hits.offsets, grades.offsets)):
        return None
    queries = np.repeat(hits.query_ids, np.diff(hits.offsets))[deep]
    return pooled_count(result_list.project_id, queries, hits.document_ids[deep])


def _rows(grades, missing, counts, retrieved) -> list[UnjudgedQuery]:
    rank = positions(grades.offsets) + 1
    # The highest unjudged hit of each query: the largest of -rank over its unjudged hits.
    first = -segment_maxima(np.where(missing, -rank, -np.inf), grades.offsets, empty=-np.inf)
    order = np.lexsort((grades.query_ids, -counts))
    return [
        UnjudgedQuery(int(grades.query_ids[i]), int(retrieved[i]), int(counts[i]), int(first[i]))
        for i in order.tolist()
        if counts[i] > 0
    ]
