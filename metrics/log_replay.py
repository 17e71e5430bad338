"""Rebuilding many buckets from one read of the judgement log and of the hits.

``selectors.pair_grades`` replays the log in SQL for one moment, which a rebuild
over 30 buckets would pay 30 times. ``ProjectReplay`` reads the project's log once
(binary COPY), sorts it in numpy, and derives each bucket's grades from it with
:mod:`metrics.core.replay`; it also keeps each result list's hits, which do not
change with the moment. The points are written with binary COPY into a temporary
table and upserted from there, instead of through model instances.
"""

import datetime as dt
import io

import numpy as np
from django.db import connection
from django.utils import timezone

from config import pgcopy
from metrics import packed_reads, selectors, sources
from metrics.core import replay
from metrics.core.consensus import consensus
from metrics.models import POINT_FIELDS
from metrics.sources import HUMAN, Grades

# Binary COPY sends timestamptz as microseconds since this moment.
POSTGRES_EPOCH = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)

# The events of the chosen raters (metrics.sources.Grades): the human raters' when
# %(humans)s (machine judges' events are no rater's answer), and those of %(judges)s.
LOG_SQL = """
SELECT j.query_id, j.document_id, j.rater_id, j.created_at, j.id,
       (j.kind = 'grade')::int4, COALESCE(j.grade, 0)::int4
FROM judgements_judgement j
JOIN judgements_query q ON q.id = j.query_id
WHERE q.project_id = %(project)s AND j.created_at <= %(until)s
  AND ((%(humans)s AND j.source <> 'machine') OR j.rater_id = ANY(%(judges)s))
  AND (%(queries)s::bigint[] IS NULL OR j.query_id = ANY(%(queries)s))
"""
LOG_COLUMNS = [
    ("query_id", ">i8"),
    ("document_id", ">i8"),
    ("rater_id", ">i4"),
    ("created_at", ">i8"),
    ("id", ">i8"),
    ("is_grade", ">i4"),
    ("grade", ">i4"),
]


def postgres_time(moment: dt.datetime) -> int:
    """``moment`` in binary COPY's unit: microseconds since 2000-01-01 UTC."""
    return (moment - POSTGRES_EPOCH) // dt.timedelta(microseconds=1)


def sorted_log(
    project_id: int, *, until: dt.datetime, grades: Grades = HUMAN, query_ids=None
) -> replay.SortedLog:
    """The events of ``grades``' raters in the project (of ``query_ids`` only, when
    given) up to ``until``, read in one binary COPY and sorted for
    ``metrics.core.replay.current_grades``."""
    params = {
        "project": project_id,
        "until": until,
        "humans": grades.humans,
        "judges": list(grades.judges),
        "queries": query_ids,
    }
    rows = pgcopy.copy_rows(LOG_SQL, params, LOG_COLUMNS)
    return replay.log_sort(
        selectors.pair_keys(rows["query_id"], rows["document_id"]),
        rows["rater_id"],
        rows["created_at"],
        rows["id"],
        rows["grade"],
        rows["is_grade"] != 0,
    )


def replayed_pair_grades(log: replay.SortedLog, as_of: dt.datetime, policy: str):
    """``selectors.PairGrades`` as of ``as_of`` from a sorted log."""
    grades = replay.current_grades(log, postgres_time(as_of), policy)
    return selectors.PairGrades(
        query_ids=grades.pair_keys >> 32,
        document_ids=grades.pair_keys & 0xFFFFFFFF,
        grades=grades.consensus,
        raters=grades.raters,
    )


def spans_pair_grades(found, as_of: dt.datetime, policy: str) -> selectors.PairGrades:
    """``replayed_pair_grades`` from the packed log's spans (``judgements.query_log``):
    the grades current at ``as_of`` are those whose span holds it, already in pair order
    and each pair's lowest first."""
    moment = postgres_time(as_of)
    current = (found.starts <= moment) & (found.ends > moment)
    keys = found.keys[current]
    starts = np.flatnonzero(np.r_[len(keys) > 0, keys[1:] != keys[:-1]])
    offsets = np.r_[starts, len(keys)].astype(np.int64)
    return selectors.PairGrades(
        query_ids=keys[starts] >> 32,
        document_ids=keys[starts] & 0xFFFFFFFF,
        grades=consensus(found.grades[current].astype(np.float64), offsets, policy, ordered=True),
        raters=np.diff(offsets),
    )


class ProjectReplay:
    """A project's judgement log as read once, answering ``pair_grades`` for any moment.

    Moments from the replay's creation on (a bucket ending in the future) may still gain
    judgements while the rebuild runs; those are asked of ``selectors.pair_grades``
    in the caller's transaction, as before.
    """

    def __init__(self, project_id: int, *, until: dt.datetime, grades: Grades = HUMAN) -> None:
        self.project_id = project_id
        self.until = until
        self.grades = grades
        self.started_at = timezone.now()
        self._log: replay.SortedLog | None = None
        self._hits: dict[tuple[int, int | None], packed_reads.RankedDocuments] = {}

    @property
    def log(self) -> replay.SortedLog:
        """The log up to ``until``, read on first use (a rebuild of the current
        bucket alone never needs it)."""
        if self._log is None:
            self._log = sorted_log(self.project_id, until=self.until, grades=self.grades)
        return self._log

    def pair_grades(self, as_of: dt.datetime, policy: str) -> selectors.PairGrades:
        """``selectors.pair_grades(project, as_of=as_of, policy=policy)``, bit for bit."""
        if as_of >= self.started_at:
            fresh = sources.grades_freshness(self.project_id, as_of=as_of, grades=self.grades)
            return selectors.pair_grades(self.project_id, fresh=fresh, policy=policy)
        return replayed_pair_grades(self.log, as_of, policy)

    def result_list_grades(
        self, result_list_id: int, pairs: selectors.PairGrades, *, depth: int | None
    ) -> packed_reads.ResultListGrades:
        """``packed_reads.result_list_grades(result_list_id, pairs, depth=depth)``, with the
        hits read on the first call only."""
        key = (result_list_id, depth)
        if key not in self._hits:
            self._hits[key] = packed_reads.ranked_documents(result_list_id, depth=depth)
        return packed_reads.graded(self._hits[key], pairs)


# The per-query points of one result list go through this table: COPY fills it,
# then two upserts copy it into the series and into the latest table.
POINTS_TABLE_SQL = """
DROP TABLE IF EXISTS pg_temp.metrics_rebuilt_point;
CREATE TEMPORARY TABLE pg_temp.metrics_rebuilt_point (
    query_id bigint NOT NULL,
    value float8 NOT NULL,
    dcg float8 NOT NULL,
    idcg float8 NOT NULL,
    judged integer NOT NULL,
    retrieved integer NOT NULL,
    judgements integer NOT NULL,
    zero_idcg integer NOT NULL
) ON COMMIT DROP
"""
POINT_COLUMNS = [
    ("query_id", ">i8"),
    ("value", ">f8"),
    ("dcg", ">f8"),
    ("idcg", ">f8"),
    ("judged", ">i4"),
    ("retrieved", ">i4"),
    ("judgements", ">i4"),
    ("zero_idcg", ">i4"),
]
MEASURES = ["value", "dcg", "idcg", "judged", "retrieved", "judgements", "zero_idcg"]
# What metric_points_store's bulk_create writes for a per-query point: the interval
# fields are null and every field but the key is replaced on conflict.
SERIES_UPSERT_SQL = """
INSERT INTO metrics_metricpoint AS point (
    result_list_id, query_id, metric, as_of, {measures}, queries, computed_at,
    ci_low, ci_high, ci_confidence, ci_resamples, ci_seed
)
SELECT %(result_list)s, query_id, %(metric)s, %(as_of)s, {measures}, 1, %(computed_at)s,
       NULL, NULL, NULL, NULL, NULL
FROM pg_temp.metrics_rebuilt_point
ORDER BY query_id
ON CONFLICT (result_list_id, query_id, metric, as_of) DO UPDATE
SET {updates}
""".format(
    measures=", ".join(MEASURES),
    updates=", ".join(f"{field} = EXCLUDED.{field}" for field in POINT_FIELDS),
)
# As refresh.LATEST_UPSERT_SQL: a newer latest point is left alone. Such points are
# also left out before the insert, which would otherwise lock every row of the list
# when a past bucket is rebuilt.
LATEST_UPSERT_SQL = """
INSERT INTO metrics_latestmetricpoint AS latest (
    result_list_id, query_id, metric, as_of, {measures}
)
SELECT %(result_list)s, point.query_id, %(metric)s, %(as_of)s, {measures}
FROM pg_temp.metrics_rebuilt_point point
WHERE NOT EXISTS (
    SELECT FROM metrics_latestmetricpoint newer
    WHERE newer.result_list_id = %(result_list)s AND newer.metric = %(metric)s
      AND newer.query_id = point.query_id AND newer.as_of > %(as_of)s
)
ORDER BY point.query_id
ON CONFLICT (result_list_id, metric, query_id) DO UPDATE
SET as_of = EXCLUDED.as_of, {updates}
WHERE latest.as_of <= EXCLUDED.as_of
""".format(
    measures=", ".join(MEASURES),
    updates=", ".join(f"{field} = EXCLUDED.{field}" for field in MEASURES),
)


def points_upsert(
    *,
    result_list_id: int,
    metric: str,
    as_of: dt.datetime,
    columns: dict[str, np.ndarray],
    computed_at: dt.datetime | None = None,
) -> None:
    """Insert or replace one result list's per-query points at ``as_of``, and their
    copies in the latest table unless a newer point is there.

    ``columns`` maps each of ``POINT_COLUMNS`` to an array with one value per query;
    ``computed_at`` is now unless given.
    """
    params = {
        "result_list": result_list_id,
        "metric": metric,
        "as_of": as_of,
        "computed_at": computed_at or timezone.now(),
    }
    with connection.cursor() as cursor:
        cursor.execute(POINTS_TABLE_SQL)
        copy_in(cursor, "pg_temp.metrics_rebuilt_point", POINT_COLUMNS, columns)
        cursor.execute(SERIES_UPSERT_SQL, params)
        cursor.execute(LATEST_UPSERT_SQL, params)


def copy_in(cursor, table: str, types: list[tuple[str, str]], columns: dict) -> None:
    """COPY ``columns`` (name -> array) into ``table`` in PostgreSQL's binary format,
    the layout ``pgcopy.copy_rows`` reads; no value may be NULL."""
    fields = [("fields", ">i2")]
    for name, kind in types:
        fields += [(f"{name}_length", ">i4"), (name, kind)]
    rows = np.empty(len(columns[types[0][0]]), dtype=np.dtype(fields))
    rows["fields"] = len(types)
    for name, kind in types:
        rows[f"{name}_length"] = np.dtype(kind).itemsize
        rows[name] = columns[name]
    header = pgcopy.COPY_SIGNATURE + bytes(8)  # No flags, no header extension.
    data = io.BytesIO(header + rows.tobytes() + b"\xff\xff")
    names = ", ".join(name for name, _ in types)
    cursor.cursor.copy_expert(f"COPY {table} ({names}) FROM STDIN (FORMAT binary)", data)
