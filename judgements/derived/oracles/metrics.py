"""The metrics app's derived tables (latest points, revision counts, query activity,
stale marks, overall sums, unreturned queries), recomputed and read back."""

from collections.abc import Iterator

from django.db import connection
from django.db.models import Max, Q

from judgements.derived.oracles.answers import bits
from judgements.models import (
    Judgement,
    QueryActivity,
)

# metrics_latestmetricpoint, metrics_revisioncount

LATEST_FIELDS = (
    "as_of", "value", "dcg", "idcg", "judged", "retrieved", "judgements", "zero_idcg",
)  # fmt: skip


def expected_latest_points(project) -> dict:
    """The newest stored per-query point of each (result list, metric, query)."""
    from metrics.models import MetricPoint

    points = (
        MetricPoint.objects.filter(result_list__project=project, query__isnull=False)
        .order_by("result_list_id", "metric", "query_id", "-as_of", "-id")
        .distinct("result_list_id", "metric", "query_id")
        .values_list("result_list_id", "metric", "query_id", *LATEST_FIELDS)
    )
    return {tuple(key): _floats_as_bits(row) for *key, row in _keyed(points, 3)}


def stored_latest_points(project) -> dict:
    from metrics.models import LatestMetricPoint

    points = LatestMetricPoint.objects.filter(result_list__project=project).values_list(
        "result_list_id", "metric", "query_id", *LATEST_FIELDS
    )
    return {tuple(key): _floats_as_bits(row) for *key, row in _keyed(points, 3)}


def _keyed(rows, width: int) -> Iterator[tuple]:
    for row in rows.iterator(chunk_size=20_000):
        yield (*row[:width], row[width:])


def _floats_as_bits(row: tuple) -> tuple:
    return tuple(bits(value) if isinstance(value, float) else value for value in row)


def expected_query_activity(project) -> dict:
    """Each (query, project)'s created_at of the query's newest human event, from the log."""
    events = Judgement.objects.filter(query__project=project).exclude(
        source=Judgement.Source.MACHINE
    )
    newest = events.values("query_id").annotate(newest=Max("created_at"))
    return {(row["query_id"], project.pk): row["newest"] for row in newest}


def stored_query_activity(project) -> dict:
    """The largest ``newest`` of the rows of each (query, project) of
    judgements_queryactivity that name the project or one of its queries."""
    rows = (
        QueryActivity.objects.filter(
            Q(project=project) | Q(query_id__in=project.queries.values("pk"))
        )
        .values("query_id", "project_id")
        .annotate(newest=Max("newest"))
    )
    return {(row["query_id"], row["project_id"]): row["newest"] for row in rows}


def expected_revision_counts(project) -> dict:
    """Revisions per query and UTC hour from the whole log, for the queries not marked
    stale (a stale query's counts wait for the next refresh, and readers take its
    revisions from the log meanwhile)."""
    from metrics.revisions import PROJECT_HOURLY_SQL

    with connection.cursor() as cursor:
        cursor.execute(PROJECT_HOURLY_SQL, {"project": project.pk, "as_of": "infinity"})
        counts = {(query, hour): count for query, hour, count in cursor.fetchall()}
    stale = _stale_queries(project)
    return {key: count for key, count in counts.items() if key[0] not in stale}


def stored_revision_counts(project) -> dict:
    from metrics.models import RevisionCount

    stale = _stale_queries(project)
    rows = RevisionCount.objects.filter(query__project=project).values_list(
        "query_id", "hour", "revisions"
    )
    return {(query, hour): count for query, hour, count in rows if query not in stale}


def stored_mark_projects(project) -> dict:
    """The project each stale mark of the project's queries names, and each mark that
    names the project: {query: (project,)}."""
    from metrics.models import StaleQuery

    marks = StaleQuery.objects.filter(Q(query__project=project) | Q(project=project))
    return {query: (named,) for query, named in marks.values_list("pk", "project_id")}


def expected_mark_projects(project) -> dict:
    """Each stale mark of the project's queries names the project."""
    return dict.fromkeys(_stale_queries(project), (project.pk,))


def _stale_queries(project) -> set[int]:
    from metrics.models import StaleQuery

    return set(StaleQuery.objects.filter(query__project=project).values_list("pk", flat=True))
