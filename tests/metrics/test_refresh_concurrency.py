"""Refreshes of one project's stored metrics running at once, on real PostgreSQL.

Several task workers (or, with the immediate task backend, several grading requests)
may refresh one project at the same moment. They split the stale marks between them,
and every one of them writes the same overall point of each result list: none may fail
on a deadlock, and the stored series must end as one refresh alone leaves it.
"""

import threading
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from judgements.models import Project
from metrics.models import LatestMetricPoint, MetricPoint, StaleQuery
from metrics.refresh import metrics_refresh, queries_mark_stale


def at_once(count: int, work) -> list[str]:
    """Run ``work(n)`` in ``count`` threads, each with its own connection, released
    together; return the errors they raised."""
    barrier = threading.Barrier(count)
    errors = []

    def run(n):
        try:
            barrier.wait(timeout=30)
            work(n)
        except Exception as error:  # Collected so the main thread can report it.
            errors.append(repr(error))
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads)
    return errors


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_concurrent_refreshes_of_one_project_never_deadlock():
    # Lists with no stored point yet are computed whole by every refresh, so the
    # refreshes write the same rows, each having locked its own share of the marks.
    call_command(
        "generate_load",
        queries=300,
        hits_per_query=20,
        judgements=6000,
        slug="refreshed",
        stdout=StringIO(),
    )
    project = Project.objects.get(slug="refreshed")
    query_ids = list(project.queries.values_list("pk", flat=True))
    for _ in range(4):
        MetricPoint.objects.all().delete()
        LatestMetricPoint.objects.all().delete()
        queries_mark_stale(query_ids=query_ids)
        assert at_once(3, lambda n: metrics_refresh(project=project)) == []
    assert not StaleQuery.objects.exists()
    lists = project.result_lists.count()
    overall = MetricPoint.objects.filter(result_list__project=project, query__isnull=True)
    assert overall.count() == lists
    assert LatestMetricPoint.objects.count() == 300 * lists
    together = latest_values()
    MetricPoint.objects.all().delete()
    LatestMetricPoint.objects.all().delete()
    metrics_refresh(project=project)
    assert latest_values() == together


def latest_values() -> dict:
    rows = LatestMetricPoint.objects.values_list("result_list_id", "query_id", "value", "judged")
    return {row[:2]: row[2:] for row in rows}
