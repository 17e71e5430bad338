"""Keeping the stored series: store points and refresh stale queries (rebuilt from the
log, or replayed for a moment, in ``metrics.history``)."""

import datetime as dt

from django.db import connection, transaction
from django.utils import timezone

from judgements.models import Project
from metrics import buckets, overall, revisions, selectors, sources
from metrics.evaluate import (
    metric_points_build,
)
from metrics.models import POINT_FIELDS, MetricPoint
from metrics.registry import MetricSpec, stored_specs

LATEST_FIELDS = ["as_of", "value", "dcg", "idcg", "judged", "retrieved", "judgements", "zero_idcg"]

# Copies per-query points into LatestMetricPoint unless a newer point is there already.
# Django's bulk_create cannot put a condition on ON CONFLICT DO UPDATE, hence SQL.
LATEST_UPSERT_SQL = """
INSERT INTO metrics_latestmetricpoint AS latest (result_list_id, query_id, metric, {fields})
SELECT * FROM unnest(
    %s::bigint[], %s::bigint[], %s::varchar[], %s::timestamptz[], %s::float8[], %s::float8[],
    %s::float8[], %s::int[], %s::int[], %s::int[], %s::int[]
)
ON CONFLICT (result_list_id, metric, query_id) DO UPDATE
SET {updates}
WHERE latest.as_of <= EXCLUDED.as_of
""".format(
    fields=", ".join(LATEST_FIELDS),
    updates=", ".join(f"{field} = EXCLUDED.{field}" for field in LATEST_FIELDS),
)


def metric_points_store(points: list[MetricPoint]) -> None:
    """Insert or replace points on (result list, query, metric, as_of): re-runs are idempotent.

    Per-query points also replace LatestMetricPoint's copy unless it is newer.
    """
    MetricPoint.objects.bulk_create(
        points,
        update_conflicts=True,
        unique_fields=["result_list", "query", "metric", "as_of"],
        update_fields=POINT_FIELDS,
        batch_size=5000,
    )
    _latest_store([point for point in points if point.query_id is not None])


def _latest_store(points: list[MetricPoint]) -> None:
    # One row per key, the newest: ON CONFLICT cannot touch a row twice in a statement.
    newest: dict[tuple, MetricPoint] = {}
    for point in points:
        key = (point.result_list_id, point.metric, point.query_id)
        if key not in newest or newest[key].as_of < point.as_of:
            newest[key] = point
    rows = list(newest.values())
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 10_000):
            batch = rows[start : start + 10_000]
            columns = ["result_list_id", "query_id", "metric", *LATEST_FIELDS]
            cursor.execute(
                LATEST_UPSERT_SQL,
                [[getattr(point, column) for point in batch] for column in columns],
            )


# One class of advisory-lock keys, hashed with the result list's id (result_list_lock).
RECOMPUTE_LOCK = "metrics.recompute"


def result_list_lock(result_list_id: int) -> None:
    """Take the result list's lock until the transaction ends: a refresh and the
    interval task write the list's overall point one after the other."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, %s))",
            [RECOMPUTE_LOCK, result_list_id],
        )


# Each mark carries its query's project, read from the query itself.
MARK_SQL = """
INSERT INTO metrics_stalequery (query_id, project_id, marked_at)
SELECT id, project_id, now() FROM judgements_query WHERE id = ANY(%s::bigint[])
ORDER BY id
ON CONFLICT (query_id) DO NOTHING
"""


def queries_mark_stale(*, query_ids) -> None:
    """Mark queries whose judgements changed; one row per query however many grades arrive."""
    with connection.cursor() as cursor:
        cursor.execute(MARK_SQL, [sorted(set(query_ids))])


# A project's stale marks, taken: one range of the index on the marks' project (a join
# with the project's queries was hashed over all of them: 106 ms of a refresh at 1M
# queries), locked and deleted in one statement. Marks another refresh holds are skipped.
MARKS_SQL = """
DELETE FROM metrics_stalequery WHERE query_id IN (
    SELECT mark.query_id FROM metrics_stalequery mark WHERE mark.project_id = %s
    FOR UPDATE OF mark SKIP LOCKED
)
RETURNING query_id
"""


@transaction.atomic
def metrics_refresh(*, project: Project, now: dt.datetime | None = None) -> int:
    """Recompute the stored series for stale queries, at the current hour's bucket (or
    the series' newest moment, if a rebuild left one ahead of the clock).

    Result lists with no point yet are computed whole. Stale marks are taken with
    SKIP LOCKED so concurrent workers split the work instead of repeating it. Each
    list's overall point is computed again from its latest points (``metrics.overall``),
    its interval left pending for a task. Returns the number of per-query points
    written.
    """
    hour = buckets.bucket_end(now or timezone.now(), "hour")
    # Only the marks are locked (of mark): locking their queries' rows too would make
    # the FK checks of another refresh's points, and of grades, wait on this one.
    with connection.cursor() as cursor:
        cursor.execute(MARKS_SQL, [project.pk])
        stale = {query_id for (query_id,) in cursor.fetchall()}
    revisions.revisions_recount(query_ids=stale)
    written = 0
    pending = []
    for spec in stored_specs(project):
        as_of = refresh_moment(project, spec, hour)
        fresh = sources.freshness(project, as_of=as_of)
        judged_queries = None
        # Every refresh writes the shared rows (overall points, lists computed whole) in
        # one order, list by list, so that concurrent refreshes queue instead of deadlocking.
        for result_list in project.result_lists.order_by("pk"):
            only = stale if _computed(result_list, spec) else None
            if only is not None and not only:
                continue
            # Waits for the interval task writing the list's overall point.
            result_list_lock(result_list.pk)
            points = metric_points_build(result_list, spec, as_of=as_of, only=only, fresh=fresh)
            written += len(points)
            if judged_queries is None and spec.mean_over == "all":
                judged_queries = selectors.judged_query_ids(project.pk, fresh=fresh)
            metric_points_store(points)
            # A list computed whole draws its interval; a grade's refresh leaves it to
            # the interval task (metrics.overall).
            later = only is not None and bool(points)
            overall.overall_store(
                result_list, spec, as_of=as_of, judged_queries=judged_queries, pending=later
            )
            if later:
                pending.append((result_list.pk, spec.name))
    for result_list_id, metric in pending:
        interval_enqueue(result_list_id, metric)
    return written


# The newest overall point of the project's lists for a metric. This and the other SQL
# of a grade's refresh are written out: the ORM spent about 1 ms building each of these
# statements (1.3-1.5 ms against 0.2 ms for the same statement written out), and a
# grade's refresh ran about a dozen of them.
NEWEST_OVERALL_SQL = """
SELECT max(point.as_of) FROM metrics_metricpoint point
JOIN judgements_resultlist run ON run.id = point.result_list_id
WHERE run.project_id = %s AND point.metric = %s AND point.query_id IS NULL
"""

# Whether a list has latest points of a metric (else the refresh computes it whole).
COMPUTED_SQL = """
SELECT EXISTS (
    SELECT FROM metrics_latestmetricpoint latest
    WHERE latest.result_list_id = %s AND latest.metric = %s
)
"""


def refresh_moment(project: Project, spec: MetricSpec, hour: dt.datetime) -> dt.datetime:
    """The current hour's end, or the series' newest moment if that is later.

    A rebuild's last bucket ends on the next boundary (tomorrow's midnight for
    daily buckets), ahead of the clock. A refresh written at an earlier moment
    would sit behind that point and never be read as the latest; rewriting the
    future point instead keeps it what it claims: the value as of its moment,
    with every judgement recorded so far.
    """
    with connection.cursor() as cursor:
        cursor.execute(NEWEST_OVERALL_SQL, [project.pk, spec.name])
        (newest,) = cursor.fetchone()
    return max(hour, newest) if newest else hour


def _computed(result_list, spec: MetricSpec) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(COMPUTED_SQL, [result_list.pk, spec.name])
        return cursor.fetchone()[0]


def metrics_schedule_refresh(*, project_id: int, query_ids) -> None:
    """Mark queries stale and, once the transaction commits, queue a refresh.

    Called by every write that changes grades or rankings. The refresh runs as a
    task (django.tasks) so that grading does not wait for it where a worker queue
    is configured; many marks before the task runs cost one recomputation, and one
    task waits in the queue per project (``refresh_enqueue``).
    """
    queries_mark_stale(query_ids=query_ids)
    transaction.on_commit(lambda: refresh_enqueue(project_id))


def refresh_enqueue(project_id: int) -> None:
    """Queue a refresh of the project, unless one is already waiting to start.

    A refresh reads the stale marks when it runs, and the database queue's worker
    commits its claim on a task before running it: a task still waiting when this
    mark has committed starts after it, and recomputes it too. So one waiting task
    per project is enough, however many grades arrive before a worker takes it; 50
    raters grading through the API queued 50 refreshes a second before, most of
    which found nothing left to do. The immediate backend (development, tests) runs
    the task here and now.
    """
    from django_tasks_db import DatabaseBackend
    from django_tasks_db.models import DBTaskResult

    from metrics.tasks import project_metrics_refresh

    backend = project_metrics_refresh.get_backend()
    if isinstance(backend, DatabaseBackend):
        waiting = DBTaskResult.objects.ready().filter(
            backend_name=backend.alias,
            task_path=project_metrics_refresh.module_path,
            args_kwargs={"args": [project_id], "kwargs": {}},
        )
        if waiting.exists():
            return
    project_metrics_refresh.enqueue(project_id)


def interval_enqueue(result_list_id: int, metric: str) -> None:
    """Queue the task that draws a list's pending interval again (``ci_pending``),
    unless one is already waiting to start: called in the refresh's transaction, which
    holds the list's recompute lock, so that a waiting task (and one that started and
    waits for the lock) reads the points this refresh commits. The immediate backend
    (development, tests) runs it here and now."""
    from django_tasks_db import DatabaseBackend
    from django_tasks_db.models import DBTaskResult

    from metrics.tasks import result_list_interval

    backend = result_list_interval.get_backend()
    if isinstance(backend, DatabaseBackend):
        waiting = DBTaskResult.objects.ready().filter(
            backend_name=backend.alias,
            task_path=result_list_interval.module_path,
            args_kwargs={"args": [result_list_id, metric], "kwargs": {}},
        )
        if waiting.exists():
            return
    result_list_interval.enqueue(result_list_id, metric)
