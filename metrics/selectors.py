"""Reads that feed the numbers: PostgreSQL rows in, plain numpy arrays out.

Nothing here returns a QuerySet, so the numeric core stays free of Django. Large reads
use COPY in PostgreSQL's binary format, parsed by numpy in one call, because turning a
million rows into Python tuples costs many times what PostgreSQL spends finding them.

Here: the pairs' grades (stored, or replayed from the log as of a moment), the judged
queries and the latest points; a result list's grades are read in ``metrics.packed_reads``.
"""

from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.db import connection

from config.pgcopy import copy_row, copy_rows, unpacked
from judgements import query_log
from metrics.core.consensus import consensus, policy_names
from metrics.core.segments import pair_keys
from metrics.models import MetricPoint
from metrics.sources import HUMAN, Freshness, Grades, Source

# The present state: judgements_pairgrade (judgements/sql/pair_grades.sql) holds each
# pair's current grades after every event in the log, one row per grade here: the
# state as of a moment when no event is dated later (metrics.sources decides). Rows
# come unordered: numpy sorts them in a fraction of what ORDER BY costs PostgreSQL.
STORED_GRADES_SQL = """
SELECT pair.query_id, pair.document_id, grade
FROM judgements_pairgrade pair, unnest(pair.grades) AS grade
WHERE pair.project_id = %(project)s
  AND pair.graded > 0
  AND (%(queries)s::bigint[] IS NULL OR pair.query_id = ANY(%(queries)s))
"""
STORED_GRADES_COLUMNS = [("query_id", ">i8"), ("document_id", ">i8"), ("grade", ">i2")]


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


def pair_grades(
    project_id: int, *, fresh: Freshness, policy: str, query_ids: list[int] | None = None
) -> PairGrades:
    """Consensus of each pair from the raters' current grades as of ``fresh.moment``.

    Read from the trigger-kept ``judgements_pairgrade`` where ``fresh`` (the answer of
    ``metrics.sources.freshness``) says it holds that moment, else (a past moment, or
    events dated in the future) replayed from the log up to it. Both give the same
    arrays, bit for bit.
    """
    if policy not in policy_names():
        raise ValueError(f"policy must be one of {policy_names()}, not {policy!r}")
    if fresh.pairs == Source.PAIRS:
        return stored_pair_grades(project_id, policy=policy, query_ids=query_ids)
    return logged_pair_grades(
        project_id, as_of=fresh.moment, policy=policy, query_ids=query_ids, grades=fresh.grades
    )


def stored_pair_grades(
    project_id: int, *, policy: str, query_ids: list[int] | None = None
) -> PairGrades:
    """``pair_grades`` from ``judgements_pairgrade``: the state after every event."""
    params = {"project": project_id, "queries": query_ids}
    rows = copy_rows(STORED_GRADES_SQL, params, STORED_GRADES_COLUMNS)
    return _consensus_of(
        rows["query_id"].astype(np.int64),
        rows["document_id"].astype(np.int64),
        rows["grade"].astype(np.float64),
        policy,
    )


def logged_pair_grades(
    project_id: int,
    *,
    as_of: datetime,
    policy: str,
    query_ids: list[int] | None = None,
    grades: Grades = HUMAN,
) -> PairGrades:
    """``pair_grades`` by replaying the judgement log up to ``as_of``, from the current
    grades of ``grades``' raters (the human raters' unless told otherwise): the events
    read in one binary COPY and each rater's current answer found in numpy
    (``metrics.core.replay``, the rule of ``Judgement.objects.current()``). The human
    raters' grades come from the packed log instead (``judgements.query_log``, the same
    rule over spans kept from the log), a tenth of the time for a whole project."""
    from metrics import log_replay

    if not grades.humans and not grades.judges:
        rows = np.empty((0, 3), dtype=np.int64)  # Nobody's grades: no judged pair.
        return _consensus_of(rows[:, 0], rows[:, 1], rows[:, 2].astype(np.float64), policy)
    if grades.human_only:
        found = query_log.spans(project_id, query_ids=query_ids)
        return log_replay.spans_pair_grades(found, as_of, policy)
    log = log_replay.sorted_log(project_id, until=as_of, grades=grades, query_ids=query_ids)
    return log_replay.replayed_pair_grades(log, as_of, policy)


def _consensus_of(queries, documents, grades, policy: str) -> PairGrades:
    """``PairGrades`` of one row per current grade, in any order."""
    order = np.lexsort((grades, pair_keys(queries, documents)))
    queries, documents, grades = queries[order], documents[order], grades[order]
    # A pair starts where the key changes; with no rows there is no first pair either.
    starts = np.flatnonzero(
        np.r_[len(grades) > 0, (queries[1:] != queries[:-1]) | (documents[1:] != documents[:-1])]
    )
    offsets = np.r_[starts, len(grades)]
    return PairGrades(
        query_ids=queries[starts],
        document_ids=documents[starts],
        grades=consensus(grades, offsets, policy),
        raters=np.diff(offsets),
    )


# The queries with a current grade, from the trigger-kept judgements_querygrades.
JUDGED_QUERIES_SQL = """
SELECT string_agg(int8send(grades.query_id), ''::bytea ORDER BY grades.query_id)
FROM judgements_querygrades grades
JOIN judgements_query query ON query.id = grades.query_id
WHERE query.project_id = %(project)s AND grades.judged > 0
"""


def judged_query_ids(project_id: int, *, fresh: Freshness) -> np.ndarray:
    """Sorted ids of the project's queries with at least one current grade as of
    ``fresh.moment``: the queries a mean over judged queries counts, and the queries
    of an exported qrels file. Read from ``judgements_querygrades`` where ``fresh``
    says the pair grades hold, else replayed from the log."""
    if fresh.pairs == Source.PAIRS:
        [column] = copy_row(JUDGED_QUERIES_SQL, {"project": project_id})
        return unpacked(column, ">i8").astype(np.int64)
    pairs = logged_pair_grades(project_id, as_of=fresh.moment, policy="mean", grades=fresh.grades)
    return np.unique(pairs.query_ids).astype(np.int64)


def int64_rows(sql: str, params: dict, *, columns: int) -> np.ndarray:
    """The rows of ``sql``, every column an integer, as an int64 array of ``columns``
    columns (empty, with that shape, when there are none)."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if not rows:
        return np.empty((0, columns), dtype=np.int64)
    return np.array(rows, dtype=np.int64)


# Each query's latest point of a list and metric, and whether it is newer than the
# moment asked for (one read: the rows are needed anyway, and a test of the newest
# as_of alone scans them too, 0.1 s at 100k queries).
LATEST_VALUES_SQL = """
SELECT query_id, value, judged, retrieved, judgements, zero_idcg,
       (as_of > %(as_of)s)::int4 AS newer
FROM metrics_latestmetricpoint
WHERE result_list_id = %(result_list)s AND metric = %(metric)s
"""
# The columns of latest_values, as they are returned.
LATEST_COLUMNS = {
    "query_id": np.int64,
    "value": np.float64,
    "judged": np.int64,
    "retrieved": np.int64,
    "judgements": np.int64,
    "zero_idcg": np.int64,
}
LATEST_VALUES = [
    ("query_id", ">i8"),
    ("value", ">f8"),
    ("judged", ">i4"),
    ("retrieved", ">i4"),
    ("judgements", ">i4"),
    ("zero_idcg", ">i4"),
    ("newer", ">i4"),
]


def latest_values(result_list, spec, *, as_of) -> tuple[dict[str, np.ndarray], bool]:
    """Each query's latest point as of ``as_of``: LATEST_COLUMNS (arrays in query
    order), and whether they are LatestMetricPoint's rows.

    When no point of the list is newer than ``as_of`` (a refresh, or a rebuild
    moving forward), the latest points are LatestMetricPoint's rows; otherwise
    (rebuilding a past bucket) they are found in the series itself.
    """
    params = {"result_list": result_list.pk, "metric": spec.name, "as_of": as_of}
    rows = copy_rows(LATEST_VALUES_SQL, params, LATEST_VALUES)
    latest = not rows["newer"].any()
    if latest:
        rows = rows[np.argsort(rows["query_id"], kind="stable")]
        found = [rows[name] for name in LATEST_COLUMNS]
    else:
        points = MetricPoint.objects.filter(
            result_list=result_list, metric=spec.name, query__isnull=False, as_of__lte=as_of
        )
        points = points.order_by("query_id", "-as_of").distinct("query_id")
        found = list(zip(*points.values_list(*LATEST_COLUMNS), strict=True))
    found = found or [()] * len(LATEST_COLUMNS)
    columns = zip(LATEST_COLUMNS.items(), found, strict=True)
    return {name: np.asarray(values, dtype=kind) for (name, kind), values in columns}, latest
