"""Reads that feed the numbers: PostgreSQL rows in, plain numpy arrays out.

Nothing here returns a QuerySet, so the numeric core stays free of Django.
"""

from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.db import connection

from metrics.core.consensus import consensus
from metrics.core.segments import offsets_from_lengths

CURRENT_GRADES_SQL = """
WITH latest AS (
    SELECT DISTINCT ON (j.query_id, j.document_id, j.rater_id)
           j.query_id, j.document_id, j.kind, j.grade
    FROM judgements_judgement j
    JOIN judgements_query q ON q.id = j.query_id
    WHERE q.project_id = %(project)s
      AND j.created_at <= %(as_of)s
      AND (%(queries)s::bigint[] IS NULL OR j.query_id = ANY(%(queries)s))
    ORDER BY j.query_id, j.document_id, j.rater_id, j.created_at DESC, j.id DESC
)
SELECT query_id, document_id, grade FROM latest
WHERE kind = 'grade'
ORDER BY query_id, document_id
"""

HITS_SQL = """
SELECT query_id, document_id, rank FROM judgements_hit
WHERE result_list_id = %(result_list)s
  AND (%(queries)s::bigint[] IS NULL OR query_id = ANY(%(queries)s))
  AND (%(depth)s::int IS NULL OR rank <= %(depth)s)
ORDER BY query_id, rank
"""


@dataclass(frozen=True)
class PairGrades:
    """Consensus grade of every judged (query, document) pair, sorted by pair."""

    query_ids: np.ndarray
    document_ids: np.ndarray
    grades: np.ndarray
    raters: np.ndarray

    @property
    def keys(self) -> np.ndarray:
        return pair_keys(self.query_ids, self.document_ids)


@dataclass(frozen=True)
class ResultListGrades:
    """A result list laid out for ``metrics.core.ndcg_batch``."""

    query_ids: np.ndarray
    ranked_grades: np.ndarray
    offsets: np.ndarray
    judged_grades: np.ndarray
    judged_offsets: np.ndarray
    judgements: np.ndarray


def pair_keys(query_ids: np.ndarray, document_ids: np.ndarray) -> np.ndarray:
    """One sortable int64 per pair (ids stay far below 2**31)."""
    return (query_ids.astype(np.int64) << 32) | document_ids.astype(np.int64)


def pair_grades(
    project_id: int, *, as_of: datetime, policy: str, query_ids: list[int] | None = None
) -> PairGrades:
    """Consensus of each pair from the raters' current grades as of ``as_of``."""
    params = {"project": project_id, "as_of": as_of, "queries": query_ids}
    rows = _fetch(CURRENT_GRADES_SQL, params, columns=3)
    queries, documents, grades = rows[:, 0], rows[:, 1], rows[:, 2].astype(np.float64)
    starts = np.flatnonzero(
        np.r_[True, (queries[1:] != queries[:-1]) | (documents[1:] != documents[:-1])]
    )
    offsets = np.r_[starts, len(grades)]
    return PairGrades(
        query_ids=queries[starts],
        document_ids=documents[starts],
        grades=consensus(grades, offsets, policy),
        raters=np.diff(offsets),
    )


def result_list_grades(
    result_list_id: int,
    pairs: PairGrades,
    *,
    depth: int | None,
    query_ids: list[int] | None = None,
) -> ResultListGrades:
    """Grades of a result list's hits (NaN if unjudged) and each query's judged grades.

    Queries are those with at least one hit in the result list, in id order, as
    trec_eval evaluates the queries of the run. ``depth`` limits the hits read and
    ``query_ids`` the queries.
    """
    params = {"result_list": result_list_id, "queries": query_ids, "depth": depth}
    hits = _fetch(HITS_SQL, params, columns=3)
    query_ids, hit_starts = np.unique(hits[:, 0], return_index=True)
    offsets = np.r_[hit_starts, len(hits)].astype(np.int64)
    ranked = _lookup(pairs, pair_keys(hits[:, 0], hits[:, 1]))
    # Each query's judged pairs are one contiguous run of the sorted pairs.
    lo = np.searchsorted(pairs.query_ids, query_ids, side="left")
    hi = np.searchsorted(pairs.query_ids, query_ids, side="right")
    judged_offsets = offsets_from_lengths(hi - lo)
    take = np.repeat(lo - judged_offsets[:-1], hi - lo) + np.arange(judged_offsets[-1])
    raters_so_far = np.r_[0, np.cumsum(pairs.raters)]
    return ResultListGrades(
        query_ids=query_ids,
        ranked_grades=ranked,
        offsets=offsets,
        judged_grades=pairs.grades[take],
        judged_offsets=judged_offsets,
        judgements=raters_so_far[hi] - raters_so_far[lo],
    )


def _lookup(pairs: PairGrades, keys: np.ndarray) -> np.ndarray:
    """Consensus grade for each key, NaN where the pair is unjudged."""
    pair_keys_sorted = pairs.keys
    position = np.searchsorted(pair_keys_sorted, keys)
    safe = np.minimum(position, max(len(pair_keys_sorted) - 1, 0))
    found = (position < len(pair_keys_sorted)) & (pair_keys_sorted[safe] == keys)
    grades = pairs.grades[safe] if len(pairs.grades) else np.zeros(len(keys))
    return np.where(found, grades, np.nan)


def _fetch(sql: str, params: dict, *, columns: int) -> np.ndarray:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if not rows:
        return np.empty((0, columns), dtype=np.int64)
    return np.array(rows, dtype=np.int64)
