"""A grade's refresh updates each list's overall point from the points it replaces
(``metrics.overall``), and what it stores is what a full computation gives, bit for bit.

The refresh stores the mean and the counts at once and leaves the interval pending; the
task it queues (``metrics.tasks.result_list_interval``) draws it again. Tests run with
the database task queue, so that the refresh's own point can be compared before the
task replaces it. Every write of the latest points other than the refresh's, and every
deletion of a query, throws the sums away, and the next refresh computes in full.
"""

import csv
import datetime as dt
import math
import struct
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from judgements.bulk import result_list_delete_fast
from judgements.derived import rebuild as derived_rebuild
from judgements.models import Document, Hit, Project, Query
from judgements.services import judgement_record
from metrics import evaluate, history, recompute, refresh, tasks
from metrics.models import LatestMetricPoint, MetricPoint, OverallSum, UnreturnedQuery
from metrics.registry import project_spec
from tests.factories import HitFactory, QueryFactory, ResultListFactory, UserFactory
from tests.rows import rows_read

COUNTS = (
    "judged", "retrieved", "judgements", "queries", "zero_idcg", "queries_judged",
    "queries_returned",
)  # fmt: skip
INTERVAL = ("ci_low", "ci_high", "ci_confidence", "ci_resamples", "ci_seed")


def bits(value: float | None):
    return None if value is None else struct.pack(">d", value)


def newest_overall(result_list) -> MetricPoint:
    points = MetricPoint.objects.filter(result_list=result_list, query=None)
    return points.order_by("-as_of").first()


def assert_overall_as_computed_in_full(project, *, interval: bool) -> None:
    """Each list's newest overall point equals ``evaluate.overall_point`` of its latest
    points: the mean to the bit and every count (and the interval, when ``interval``)."""
    spec = project_spec(project)
    for result_list in project.result_lists.all():
        stored = newest_overall(result_list)
        full = evaluate.overall_point(result_list, spec, as_of=stored.as_of)
        assert bits(stored.value) == bits(full.value), result_list.name
        assert [getattr(stored, name) for name in COUNTS] == [
            getattr(full, name) for name in COUNTS
        ]
        if interval:
            assert not stored.ci_pending
            assert [bits(getattr(stored, name)) for name in INTERVAL[:3]] == [
                bits(getattr(full, name)) for name in INTERVAL[:3]
            ]
            assert stored.ci_resamples == full.ci_resamples


def run_interval_tasks() -> int:
    """Run the interval tasks the refreshes queued, as a worker would; how many ran."""
    from django_tasks_db.models import DBTaskResult

    waiting = DBTaskResult.objects.ready().filter(task_path=tasks.result_list_interval.module_path)
    ran = 0
    for result in list(waiting):
        tasks.result_list_interval.call(*result.args_kwargs["args"])
        result.delete()
        ran += 1
    return ran


def grade(project, rater, query_ids, seed: int) -> None:
    """A grade from ``rater`` on one hit of each query (changing their earlier one)."""
    rng = np.random.default_rng(seed)
    for query_id in query_ids:
        hit = Hit.objects.filter(query_id=query_id).order_by("rank").first()
        judgement_record(
            rater=rater,
            query=Query.objects.get(pk=query_id),
            document=hit.document,
            grade=int(rng.integers(0, 4)),
        )


@pytest.fixture
def queued(settings):
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}


def load(slug: str, queries: int, *, mean_over: str = "judged", lists: int = 2) -> Project:
    call_command(
        "generate_load", slug=slug, queries=queries, hits_per_query=8, judgements=queries * 6,
        result_lists=lists, raters=4, stdout=StringIO(),
    )  # fmt: skip
    project = Project.objects.get(slug=slug)
    project.metric_mean_over = mean_over
    project.save()
    return project


def with_unreturned_queries(project, count: int) -> list[int]:
    """``count`` new queries that only the first list returns (one hit each)."""
    first = project.result_lists.order_by("pk").first()
    document = Document.objects.filter(project=project).first()
    created = []
    for n in range(count):
        query = QueryFactory(project=project, text=f"only in the first list {n}")
        HitFactory(result_list=first, query=query, document=document, rank=1)
        created.append(query.pk)
    return created


@pytest.mark.django_db
@pytest.mark.parametrize("mean_over", ["judged", "all"])
def test_a_refresh_updates_the_mean_and_counts_as_a_full_computation_gives(queued, mean_over):
    project = load("sums", 150, mean_over=mean_over)
    new_queries = with_unreturned_queries(project, 3)
    refresh.metrics_refresh(project=project)
    assert OverallSum.objects.filter(result_list__project=project).count() == 2
    assert_overall_as_computed_in_full(project, interval=True)
    rater = UserFactory(username="sam", roles=["rater"])
    query_ids = list(project.queries.order_by("pk").values_list("pk", flat=True))
    # Grades on old queries, then the first grades of queries only one list returns
    # (judged now: a mean over all counts them at 0 in the other list).
    for round_, picked in enumerate([query_ids[:5], query_ids[40:41], new_queries[:2]]):
        grade(project, rater, picked, seed=round_)
        refresh.metrics_refresh(project=project)
        assert_overall_as_computed_in_full(project, interval=False)
        assert all(newest_overall(rl).ci_pending for rl in project.result_lists.all())
    if mean_over == "all":
        second = project.result_lists.order_by("pk").last()
        unreturned = UnreturnedQuery.objects.filter(result_list=second)
        assert set(unreturned.values_list("query_id", flat=True)) >= set(new_queries[:2])
    assert run_interval_tasks() == 2
    assert_overall_as_computed_in_full(project, interval=True)
    # One waiting task per list and metric, however many refreshes before it runs.
    for round_ in range(3):
        grade(project, rater, query_ids[60 + round_ : 61 + round_], seed=10 + round_)
        refresh.metrics_refresh(project=project)
    assert run_interval_tasks() == 2
    assert_overall_as_computed_in_full(project, interval=True)


@pytest.mark.django_db
def test_the_mean_is_the_fsum_of_the_latest_values_to_the_bit(queued):
    project = load("fsum", 120)
    refresh.metrics_refresh(project=project)
    rater = UserFactory(username="sam", roles=["rater"])
    query_ids = list(project.queries.order_by("pk").values_list("pk", flat=True))
    grade(project, rater, query_ids[::7], seed=3)
    refresh.metrics_refresh(project=project)
    for result_list in project.result_lists.all():
        latest = LatestMetricPoint.objects.filter(result_list=result_list, judgements__gt=0)
        values = list(latest.order_by("query_id").values_list("value", flat=True))
        assert bits(newest_overall(result_list).value) == bits(math.fsum(values) / len(values))


@pytest.mark.django_db
def test_a_grade_that_changes_nothing_keeps_the_interval_current(queued):
    project = load("same", 100)
    refresh.metrics_refresh(project=project)
    rater = UserFactory(username="sam", roles=["rater"])
    query = project.queries.order_by("pk").first()
    hit = Hit.objects.filter(query=query).order_by("rank").first()
    judgement_record(rater=rater, query=query, document=hit.document, grade=2)
    refresh.metrics_refresh(project=project)
    run_interval_tasks()
    # The same answer again: the query's point is written again, equal.
    judgement_record(rater=rater, query=query, document=hit.document, grade=2)
    refresh.metrics_refresh(project=project)
    assert not any(newest_overall(rl).ci_pending for rl in project.result_lists.all())
    assert run_interval_tasks() == 0
    assert_overall_as_computed_in_full(project, interval=True)


def sums_of(project) -> set[int]:
    return set(
        OverallSum.objects.filter(result_list__project=project).values_list(
            "result_list_id", flat=True
        )
    )


@pytest.mark.django_db
@pytest.mark.parametrize("mean_over", ["judged", "all"])
def test_other_writes_of_the_latest_points_throw_the_sums_away(queued, mean_over):
    """A rebuild, a split recompute, derived_state's repair, a deleted query, a deleted
    or new result list: each leaves no sums that disagree with the points, and the next
    refresh stores what a full computation gives."""
    project = load("others", 120, mean_over=mean_over)
    extra = with_unreturned_queries(project, 2)
    rater = UserFactory(username="sam", roles=["rater"])
    query_ids = list(project.queries.order_by("pk").values_list("pk", flat=True))
    refresh.metrics_refresh(project=project)
    lists = set(project.result_lists.values_list("pk", flat=True))
    assert sums_of(project) == lists

    def check_after_grading(seed: int) -> None:
        grade(project, rater, query_ids[seed : seed + 3] + extra[seed % 2 :][:1], seed=seed)
        refresh.metrics_refresh(project=project)
        assert_overall_as_computed_in_full(project, interval=False)
        run_interval_tasks()
        assert_overall_as_computed_in_full(project, interval=True)

    # A rebuild of the stored series.
    history.metrics_rebuild(project=project, since=timezone.now() - dt.timedelta(days=1))
    assert sums_of(project) == set()
    check_after_grading(1)
    assert sums_of(project) == lists
    # A split recompute: its chunks throw the sums away, its last chunk writes them.
    first = project.result_lists.order_by("pk").first()
    recompute.result_list_recompute(result_list=first, chunks=3)
    assert first.pk in sums_of(project)
    check_after_grading(2)
    # derived_state's repair of the latest table.
    derived_rebuild.repair(project.pk)
    assert sums_of(project) == set()
    check_after_grading(3)
    # A deleted query (judged, and returned by every list).
    Query.objects.filter(pk=query_ids[50]).delete()
    assert sums_of(project) == set()
    check_after_grading(4)
    # A new result list (its hits mark their queries stale): computed whole, with its sums.
    new = ResultListFactory(project=project, name="new")
    for rank, hit in enumerate(Hit.objects.filter(result_list=first, query_id__in=query_ids[:9])):
        HitFactory(result_list=new, query_id=hit.query_id, document=hit.document, rank=rank + 1)
    refresh.queries_mark_stale(query_ids=query_ids[:9])
    refresh.metrics_refresh(project=project)
    assert sums_of(project) == lists | {new.pk}
    assert_overall_as_computed_in_full(project, interval=True)
    # A deleted result list takes its sums with it; the others keep theirs.
    result_list_delete_fast(new.pk)
    assert sums_of(project) == lists
    check_after_grading(5)


@pytest.mark.django_db
def test_a_judgement_import_is_counted_as_grades_are(queued):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from judgements.imports.events import judgement_import

    project = load("imported", 120, mean_over="all")
    refresh.metrics_refresh(project=project)
    queries = list(project.queries.order_by("pk")[:6])
    rows = ["query,docid,rating"]
    for n, query in enumerate(queries):
        hit = Hit.objects.filter(query=query).order_by("rank").first()
        rows.append(f"{query.text},{hit.document.external_id},{n % 4}")
    upload = SimpleUploadedFile("grades.csv", ("\n".join(rows) + "\n").encode())
    uploader = UserFactory(username="ivy", roles=["analyst"])
    result = judgement_import(
        project=project, upload=upload, file_format="quepid", uploaded_by=uploader
    )
    assert result.created == 6
    refresh.metrics_refresh(project=project)
    assert_overall_as_computed_in_full(project, interval=False)
    run_interval_tasks()
    assert_overall_as_computed_in_full(project, interval=True)


def refresh_after_one_grade(project, rater, query_id: int, grade_: int) -> list[str]:
    """The statements of the refresh after one grade of ``query_id`` (the sums are kept)."""
    hit = Hit.objects.filter(query_id=query_id).order_by("rank").first()
    judgement_record(
        rater=rater, query=Query.objects.get(pk=query_id), document=hit.document, grade=grade_
    )
    with CaptureQueriesContext(connection) as captured:
        refresh.metrics_refresh(project=project)
    return [query["sql"] for query in captured.captured_queries]


METRIC_TABLES = [
    "metrics_latestmetricpoint", "metrics_metricpoint", "metrics_overallsum",
    "metrics_unreturnedquery",
]  # fmt: skip
# Where the refresh finds its stale marks: a join of the marks with the project's
# queries read every query of the project (1,124 rows at 1,000 queries).
MARK_TABLES = ["metrics_stalequery", "judgements_query"]


@pytest.mark.django_db
@pytest.mark.parametrize("mean_over", ["judged", "all"])
def test_a_grades_refresh_reads_as_many_rows_whatever_the_lists_size(queued, mean_over):
    """The same statements, and the same rows of the stored series' tables, after one
    grade in a project of 100 queries and in one of 1,000 (the full computation reads
    every query's latest point: ten times as many)."""
    rater = UserFactory(username="sam", roles=["rater"])
    measured, marks_read = {}, {}
    for size in (100, 1000):
        project = load(f"size-{size}", size, mean_over=mean_over, lists=1)
        refresh.metrics_refresh(project=project)
        query_id = project.queries.order_by("pk").values_list("pk", flat=True)[size // 2]
        refresh_after_one_grade(project, rater, query_id, 1)  # Warm: plans, sums.
        before, marks_before = rows_read(METRIC_TABLES), rows_read(MARK_TABLES)
        statements = refresh_after_one_grade(project, rater, query_id, 2)
        measured[size] = (len(statements), rows_read(METRIC_TABLES) - before)
        marks_read[size] = rows_read(MARK_TABLES) - marks_before
        assert newest_overall(project.result_lists.get()).ci_pending
        assert_overall_as_computed_in_full(project, interval=False)
    assert measured[100][0] == measured[1000][0]
    assert measured[1000][1] <= measured[100][1] + 5
    assert measured[1000][1] < 100
    assert marks_read[1000] < 100, marks_read


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize("mean_over", ["judged", "all"])
def test_concurrent_refreshes_and_interval_tasks_leave_what_a_full_computation_gives(
    queued, mean_over
):
    """Real transactions on PostgreSQL: three refreshes at once split the stale marks
    (SKIP LOCKED) and update the same lists' sums one after the other (the list's
    recompute lock), while grades keep arriving and an interval task redraws a list's
    interval. However they interleave, the stored overall points end as a full
    computation of the latest points gives them."""
    from tests.metrics.test_refresh_concurrency import at_once

    project = load("racing", 200, mean_over=mean_over)
    extra = with_unreturned_queries(project, 6)
    refresh.metrics_refresh(project=project)
    rater = UserFactory(username="sam", roles=["rater"])
    query_ids = list(project.queries.order_by("pk").values_list("pk", flat=True))
    lists = list(project.result_lists.order_by("pk").values_list("pk", flat=True))
    spec = project_spec(project)
    for round_ in range(4):
        graded = query_ids[round_ * 11 : round_ * 11 + 8] + extra[round_:][:1]
        grade(project, rater, graded, seed=round_)
        during = query_ids[100 + round_ * 5 : 104 + round_ * 5]
        redrawn = lists[round_ % 2]

        def work(n: int, during=during, redrawn=redrawn) -> None:
            if n == 3:  # Grades arriving during the refreshes.
                grade(project, rater, during, seed=n)
            elif n == 4:
                tasks.result_list_interval.call(redrawn, spec.name)
            else:
                refresh.metrics_refresh(project=project)

        assert at_once(5, work) == []
    refresh.metrics_refresh(project=project)
    assert not project.queries.filter(stalequery__isnull=False).exists()
    assert sums_of(project) == set(lists)
    assert_overall_as_computed_in_full(project, interval=False)
    run_interval_tasks()
    assert_overall_as_computed_in_full(project, interval=True)


@pytest.mark.django_db
@pytest.mark.parametrize("mean_over", ["judged", "all"])
def test_derived_state_checks_the_sums_and_its_repair_throws_wrong_ones_away(queued, mean_over):
    from judgements.derived import oracles

    project = load("checked", 120, mean_over=mean_over)
    extra = with_unreturned_queries(project, 3)
    refresh.metrics_refresh(project=project)
    rater = UserFactory(username="sam", roles=["rater"])
    query_ids = list(project.queries.order_by("pk").values_list("pk", flat=True))
    grade(project, rater, query_ids[:4] + extra[:2], seed=1)
    refresh.metrics_refresh(project=project)
    assert list(oracles.differences(project)) == []
    first = project.result_lists.order_by("pk").first()
    OverallSum.objects.filter(result_list=first).update(counted=0)
    found = list(oracles.differences(project))
    assert [difference.table for difference in found] == ["metrics_overallsum"]
    if mean_over == "all":
        second = project.result_lists.order_by("pk").last()
        UnreturnedQuery.objects.filter(result_list=second).delete()
        found = list(oracles.differences(project))
        tables = {difference.table for difference in found}
        assert tables == {"metrics_overallsum", "metrics_unreturnedquery"}
    derived_rebuild.repair(project.pk)
    assert list(oracles.differences(project)) == []
    assert sums_of(project) == set()


@pytest.mark.django_db
def test_the_overview_and_the_series_api_say_when_an_interval_is_pending(queued, client):
    project = load("shown", 100, lists=1)
    refresh.metrics_refresh(project=project)
    result_list = project.result_lists.get()
    client.force_login(UserFactory(username="charlie", roles=["analyst"]))

    def shown() -> tuple[bool, bool]:
        page = client.get(f"/metrics/{project.slug}/").content.decode()
        series = client.get(f"/api/result-lists/{result_list.pk}/series/").json()
        newest = max(series["results"], key=lambda point: point["as_of"])
        exported = client.get(reverse("metrics:series_export", args=[project.slug]))
        rows = list(csv.DictReader(StringIO(b"".join(exported.streaming_content).decode())))
        in_csv = max(rows, key=lambda row: row["as_of"])["ci_pending"]
        assert in_csv == ("true" if newest["ci_pending"] else "false")
        return 'data-testid="interval-pending"' in page, newest["ci_pending"]

    assert shown() == (False, False)
    rater = UserFactory(username="sam", roles=["rater"])
    grade(project, rater, list(project.queries.values_list("pk", flat=True)[:3]), seed=2)
    refresh.metrics_refresh(project=project)
    assert shown() == (True, True)
    run_interval_tasks()
    assert shown() == (False, False)
