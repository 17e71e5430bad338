"""A result list's recompute split into chunks of queries, run as tasks (metrics.recompute).

The stored numbers must be exactly those of the unsplit computation: the refresh
computes a list with no stored point whole, and its rows are the oracle.
"""

import datetime as dt
import threading
import time
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection, transaction

from judgements.models import Project
from metrics import buckets, recompute
from metrics.models import LatestMetricPoint, MetricPoint
from metrics.refresh import metrics_refresh, queries_mark_stale, result_list_lock
from tests.config.test_production import database_url, production_environment
from tests.holding import held_elsewhere
from tests.processes import start, stop, tail

NOW = dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC)
AS_OF = buckets.bucket_end(NOW, "hour")
POINT_COLUMNS = [
    "result_list_id", "query_id", "metric", "as_of", "value", "dcg", "idcg", "judged",
    "retrieved", "judgements", "queries", "zero_idcg", "ci_low", "ci_high", "ci_confidence",
    "ci_resamples", "ci_seed", "queries_judged",
]  # fmt: skip


def generated(slug: str = "split") -> Project:
    # Two lists of 120 queries, 8 hits each; some queries have no judgement.
    options = {"queries": 120, "hits_per_query": 8, "judgements": 900, "result_lists": 2}
    call_command("generate_load", slug=slug, stdout=StringIO(), **options)
    return Project.objects.get(slug=slug)


def stored_points(project: Project) -> list[tuple]:
    """Every stored point of the project and the latest table, computed_at aside."""
    points = MetricPoint.objects.filter(result_list__project=project)
    latest = LatestMetricPoint.objects.filter(result_list__project=project)
    return sorted(points.values_list(*POINT_COLUMNS), key=repr) + sorted(
        latest.values_list("result_list_id", "query_id", "as_of", "value", "dcg", "judgements")
    )


def points_delete(project: Project) -> None:
    MetricPoint.objects.filter(result_list__project=project).delete()
    LatestMetricPoint.objects.filter(result_list__project=project).delete()


def unsplit(project: Project) -> list[tuple]:
    """What the refresh stores computing every list whole at AS_OF."""
    points_delete(project)
    metrics_refresh(project=project, now=NOW)
    return stored_points(project)


@pytest.mark.django_db
def test_a_split_recompute_stores_exactly_what_an_unsplit_one_does(monkeypatch):
    # Chunks of 17 or 18 queries, each read and written in parts of up to 11.
    monkeypatch.setattr(recompute, "PART_QUERIES", 11)
    project = generated()
    whole = unsplit(project)
    # Per-query points of both lists and an overall point of each, with an interval.
    assert len([row for row in whole if row[1] is None and row[13] is not None]) == 2
    points_delete(project)
    for result_list in project.result_lists.all():
        results = recompute.result_list_recompute(result_list=result_list, chunks=7, as_of=AS_OF)
        assert len(results) == 7
        assert sum(result.return_value for result in results) == 120
    assert stored_points(project) == whole


@pytest.mark.django_db
def test_the_overall_point_waits_for_the_last_chunk():
    project = generated()
    result_list = project.result_lists.order_by("pk").first()
    recompute.result_list_recompute(result_list=result_list, chunks=1, as_of=AS_OF)
    overall = MetricPoint.objects.filter(result_list=result_list, query=None)
    before = overall.get()
    # A second recompute in two chunks: the points of the first are all there, but the
    # overall point is stored again only once both chunks of this one have run.
    firsts = recompute.chunk_firsts(result_list, 2)
    stamp = "2026-11-20T09:45:00+00:00"
    run = recompute.result_list_chunk_recompute.call
    assert run(result_list.pk, AS_OF.isoformat(), stamp, firsts, 1) == 60
    assert overall.get().computed_at == before.computed_at
    assert run(result_list.pk, AS_OF.isoformat(), stamp, firsts, 0) == 60
    assert overall.get().computed_at > before.computed_at


@pytest.mark.django_db
def test_it_refuses_fewer_than_one_chunk():
    project = generated()
    with pytest.raises(ValueError):
        recompute.result_list_recompute(result_list=project.result_lists.first(), chunks=0)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_worker_processes_running_the_chunks_store_the_unsplit_values(settings, tmp_path):
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    project = generated("split-workers")
    whole = unsplit(project)
    points_delete(project)
    environment = production_environment(DATABASE_URL=database_url(), TASKS_BACKEND="database")
    command = ["manage.py", "db_worker", "--interval", "0.1", "--no-reload", "--no-startup-delay"]
    workers = [start(command, environment, tmp_path / f"worker{n}.log") for n in range(2)]
    from django_tasks_db.models import DBTaskResult

    try:
        deadline = time.monotonic() + 120
        # Both polling before the chunks are queued, so that each takes some.
        while not all("Starting worker" in tail(worker) for worker in workers):
            assert time.monotonic() < deadline, tail(workers[0])
            time.sleep(0.1)
        # Each worker runs one task at a time: with the lists' recompute locks held
        # until two chunks are running, each worker holds one, so both take part
        # (unheld, one worker could run all ten before the other polls again).
        lists = list(project.result_lists.all())
        with held_elsewhere(lambda: [result_list_lock(each.pk) for each in lists]):
            for result_list in project.result_lists.all():
                recompute.result_list_recompute(result_list=result_list, chunks=5, as_of=AS_OF)
            while DBTaskResult.objects.filter(status="RUNNING").count() < 2:
                assert time.monotonic() < deadline, tail(workers[0])
                time.sleep(0.1)
            assert not DBTaskResult.objects.filter(status="SUCCESSFUL").exists()
        while DBTaskResult.objects.exclude(status="SUCCESSFUL").exists():
            assert time.monotonic() < deadline, tail(workers[0])
            assert all(worker.poll() is None for worker in workers), tail(workers[0])
            time.sleep(0.2)
    finally:
        for worker in workers:
            stop(worker)
    ran_by = DBTaskResult.objects.values_list("worker_ids", flat=True)
    assert DBTaskResult.objects.count() == 10
    assert len({worker for ids in ran_by for worker in ids}) == 2
    assert stored_points(project) == whole


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_refresh_writing_the_list_waits_for_a_chunk_reading_it():
    project = generated("split-lock")
    metrics_refresh(project=project, now=NOW)
    result_list = project.result_lists.order_by("pk").first()
    queries_mark_stale(query_ids=[project.queries.first().pk])
    chunk_reading, release = threading.Event(), threading.Event()

    def chunk() -> None:
        try:
            with transaction.atomic():
                result_list_lock(result_list.pk, shared=True)
                chunk_reading.set()
                release.wait(timeout=30)
        finally:
            connection.close()

    def refresh() -> None:
        try:
            metrics_refresh(project=project, now=NOW)
        finally:
            connection.close()

    holder = threading.Thread(target=chunk)
    holder.start()
    assert chunk_reading.wait(timeout=30)
    refresher = threading.Thread(target=refresh)
    refresher.start()
    refresher.join(timeout=1.0)
    waited = refresher.is_alive()
    release.set()
    holder.join(timeout=30)
    refresher.join(timeout=60)
    assert waited
    assert not refresher.is_alive()
