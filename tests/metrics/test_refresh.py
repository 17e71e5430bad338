import datetime as dt
from importlib import import_module
from io import StringIO

import pytest
import time_machine
from django.core.management import call_command
from django.db import connection

from judgements.models import Hit, Judgement, Project, Query
from judgements.services import judgement_record
from metrics import evaluate, history, refresh
from metrics.buckets import bucket_end
from metrics.core import ndcg
from metrics.core.stats import bootstrap_mean_ci
from metrics.models import LatestMetricPoint, MetricPoint, StaleQuery
from metrics.registry import MetricSpec, project_spec
from tests.factories import JudgementFactory

AS_OF = dt.datetime(2026, 11, 21, tzinfo=dt.UTC)
LATEST_COLUMNS = [
    "as_of",
    "value",
    "dcg",
    "idcg",
    "judged",
    "retrieved",
    "judgements",
    "zero_idcg",
]


@pytest.fixture
def demo(demo_once, db):
    return Project.objects.get(slug="outdoor-gear")


def newest_moment(project) -> dt.datetime:
    return MetricPoint.objects.filter(result_list__project=project).latest("as_of").as_of


def latest_by_distinct_on(as_of=None) -> dict[tuple, tuple]:
    """Each (list, metric, query)'s newest stored point, found in the series itself."""
    points = MetricPoint.objects.filter(query__isnull=False)
    if as_of is not None:
        points = points.filter(as_of__lte=as_of)
    rows = (
        points.order_by("result_list_id", "metric", "query_id", "-as_of")
        .distinct("result_list_id", "metric", "query_id")
        .values_list("result_list_id", "metric", "query_id", *LATEST_COLUMNS)
    )
    return {row[:3]: row[3:] for row in rows}


def latest_table() -> dict[tuple, tuple]:
    rows = LatestMetricPoint.objects.values_list(
        "result_list_id", "metric", "query_id", *LATEST_COLUMNS
    )
    return {row[:3]: row[3:] for row in rows}


def mean_of_latest(result_list, spec, as_of) -> float:
    """The mean of the latest values of the queries with a grade (the default mean_over)."""
    assert spec.mean_over == "judged"
    values = [
        value
        for (list_id, metric, _), (_, value, *_, judgements, _) in latest_by_distinct_on(
            as_of
        ).items()
        if list_id == result_list.pk and metric == spec.name and judgements > 0
    ]
    return sum(values) / len(values)


def core_ndcg_by_query(result_list, spec: MetricSpec, as_of) -> dict[int, float]:
    """NDCG per query the long way: ORM consensus, then metrics.core.ndcg per query."""
    rows = Judgement.objects.for_project(result_list.project).as_of(as_of).consensus()
    grade_of = {(row["query_id"], row["document_id"]): row["consensus"] for row in rows}
    values = {}
    for query in result_list.project.queries.all():
        hits = Hit.objects.filter(result_list=result_list, query=query).order_by("rank")
        if not hits:
            continue
        ranked = [grade_of.get((query.pk, hit.document_id)) for hit in hits]
        judged = [grade for (q, _), grade in grade_of.items() if q == query.pk]
        ideal = judged if spec.ideal == "judged" else [g for g in ranked if g is not None]
        values[query.pk] = ndcg(
            ranked, ideal, k=spec.k, gain=spec.gain, discount=spec.discount
        ).ndcg
    return values


@pytest.mark.parametrize(
    "spec",
    [
        MetricSpec(),
        MetricSpec(k=5, gain="linear", discount="rank", ideal="returned"),
        MetricSpec(k=None, gain="linear"),
    ],
    ids=lambda spec: spec.name,
)
def test_stored_values_equal_the_core_computed_query_by_query(demo, spec):
    for result_list in demo.result_lists.all():
        points = evaluate.metric_points_build(result_list, spec, as_of=AS_OF)
        expected = core_ndcg_by_query(result_list, spec, AS_OF)
        assert {point.query_id: point.value for point in points} == pytest.approx(
            expected, abs=1e-12
        )


def test_values_as_of_a_past_moment_ignore_later_judgements(demo):
    result_list = demo.result_lists.get(name__startswith="bm25")
    spec = project_spec(demo)
    before = evaluate.metric_points_build(result_list, spec, as_of=AS_OF)
    target = next(point for point in before if 0 < point.value < 1)
    hit = Hit.objects.filter(result_list=result_list, query_id=target.query_id).first()
    rater = Judgement.objects.human().filter(query_id=target.query_id).first().rater
    with time_machine.travel(AS_OF + dt.timedelta(days=1), tick=False):
        for user in (
            Judgement.objects.human().order_by().values_list("rater", flat=True).distinct()
        ):
            JudgementFactory(
                query_id=target.query_id,
                document=hit.document,
                rater_id=user,
                grade=0 if hit.rank == 1 else 3,
            )
    again = evaluate.metric_points_build(result_list, spec, as_of=AS_OF)
    later = evaluate.metric_points_build(result_list, spec, as_of=AS_OF + dt.timedelta(days=2))
    value = {point.query_id: point.value for point in again}
    assert value == {point.query_id: point.value for point in before}
    assert {p.query_id: p.value for p in later}[target.query_id] != target.value
    assert rater is not None


def test_rebuilding_twice_leaves_the_same_rows(demo):
    def snapshot():
        return sorted(
            MetricPoint.objects.values_list(
                "result_list_id", "query_id", "metric", "as_of", "value", "judged", "ci_low"
            ),
            key=str,
        )

    call_command("rebuild_metrics", "--project", "outdoor-gear", stdout=StringIO())
    first = snapshot()
    call_command("rebuild_metrics", "--project", "outdoor-gear", stdout=StringIO())
    assert snapshot() == first
    assert len({row[3] for row in first}) > 5, "one point per day of the judging fortnight"


def test_the_mean_over_queries_rises_as_judgements_accumulate(demo):
    call_command("rebuild_metrics", "--project", "outdoor-gear", stdout=StringIO())
    series = MetricPoint.objects.filter(
        query__isnull=True, result_list__name__startswith="bm25"
    ).order_by("as_of")
    judgements = [point.judgements for point in series]
    assert judgements == sorted(judgements) and judgements[0] < judgements[-1]
    overall = series.last()
    per_query = MetricPoint.objects.filter(
        result_list=overall.result_list, as_of=overall.as_of, query__isnull=False
    )
    assert overall.value == pytest.approx(sum(p.value for p in per_query) / per_query.count())
    assert overall.queries == per_query.count()


def test_every_stored_value_names_its_consensus_policy(demo):
    MetricPoint.objects.all().delete()  # load_demo stored the default (mean) series.
    demo.consensus = "median"
    demo.save()
    call_command("rebuild_metrics", "--project", "outdoor-gear", stdout=StringIO())
    metrics = set(MetricPoint.objects.values_list("metric", flat=True))
    assert metrics == {"ndcg@10 exponential log2 judged cut zero median zero judged"}


def test_a_grade_marks_its_query_stale_and_the_refresh_recomputes_only_it(
    demo, django_capture_on_commit_callbacks
):
    # load_demo's rebuild ends on the next midnight; grade a day after that.
    later = newest_moment(demo) + dt.timedelta(days=1, minutes=10)
    before = MetricPoint.objects.count()
    query = demo.queries.first()
    hit = Hit.objects.filter(query=query).first()
    rater = Judgement.objects.human().filter(query=query).first().rater
    with (
        time_machine.travel(later, tick=False),
        django_capture_on_commit_callbacks(execute=False) as callbacks,
    ):
        judgement_record(rater=rater, query=query, document=hit.document, grade=3)
    assert list(StaleQuery.objects.values_list("query_id", flat=True)) == [query.pk]
    assert len(callbacks) == 1
    with time_machine.travel(later, tick=False):
        callbacks[0]()
    new = MetricPoint.objects.filter(as_of=later.replace(minute=0) + dt.timedelta(hours=1))
    lists_with_query = demo.result_lists.filter(hits__query=query).distinct().count()
    assert new.filter(query__isnull=False).count() == lists_with_query
    assert set(new.filter(query__isnull=False).values_list("query_id", flat=True)) == {query.pk}
    assert new.filter(query__isnull=True).count() == demo.result_lists.count()
    assert MetricPoint.objects.count() == before + lists_with_query + demo.result_lists.count()
    assert not StaleQuery.objects.exists()


def test_a_refresh_before_the_last_buckets_end_rewrites_that_bucket(demo):
    # The rebuild's last daily bucket ends on the next midnight, after the grade.
    end = newest_moment(demo)
    result_list = demo.result_lists.first()
    old = (
        MetricPoint.objects.filter(result_list=result_list, as_of=end, query__isnull=False)
        .order_by("-value", "query_id")
        .first()
    )
    hit = Hit.objects.get(result_list=result_list, query=old.query, rank=1)
    with time_machine.travel(end - dt.timedelta(hours=5), tick=False):
        for judgement in (
            Judgement.objects.human().filter(query=old.query).order_by("rater").distinct("rater")
        ):
            judgement_record(
                rater=judgement.rater, query=old.query, document=hit.document, grade=0
            )
        refresh.metrics_refresh(project=demo)

    new = MetricPoint.objects.get(result_list=result_list, query=old.query, as_of=end)
    assert new.value < old.value
    assert not MetricPoint.objects.filter(as_of__gt=end).exists()
    overall = MetricPoint.objects.get(result_list=result_list, query=None, as_of=end)
    assert overall.value == pytest.approx(
        mean_of_latest(result_list, project_spec(demo), end), abs=1e-12
    )


def test_a_refresh_with_nothing_stale_writes_nothing(demo):
    refresh.metrics_refresh(project=demo, now=AS_OF)
    assert refresh.metrics_refresh(project=demo, now=AS_OF + dt.timedelta(hours=1)) == 0


def test_the_latest_table_is_the_newest_point_of_every_series(demo):
    # load_demo rebuilt the series day by day, each bucket newer than the last.
    assert latest_table() == latest_by_distinct_on()
    assert len(latest_table()) == Hit.objects.values("result_list", "query").distinct().count()


def test_the_latest_table_follows_rebuilds_of_the_past_and_of_everything(demo):
    before = latest_table()
    first = Judgement.objects.human().order_by("created_at").first().created_at
    # Past buckets only: every latest point is newer, so none may be replaced.
    history.metrics_rebuild(project=demo, since=first, until=first + dt.timedelta(days=2))
    assert latest_table() == before == latest_by_distinct_on()
    call_command("rebuild_metrics", "--project", "outdoor-gear", stdout=StringIO())
    call_command("rebuild_metrics", "--project", "outdoor-gear", stdout=StringIO())
    assert latest_table() == before == latest_by_distinct_on()


def test_the_latest_table_follows_new_judgements_and_refreshes(demo):
    later = newest_moment(demo) + dt.timedelta(days=1)
    query = demo.queries.order_by("id").first()
    hit = Hit.objects.filter(query=query).order_by("rank").first()
    with time_machine.travel(later, tick=False):
        for judgement in (
            Judgement.objects.human().filter(query=query).order_by("rater").distinct("rater")
        ):
            judgement_record(rater=judgement.rater, query=query, document=hit.document, grade=0)
        refresh.metrics_refresh(project=demo)

    latest = latest_table()
    assert latest == latest_by_distinct_on()
    moved = {key for key, row in latest.items() if row[0] >= later}
    assert {key[2] for key in moved} == {query.pk}
    assert len(moved) == demo.result_lists.filter(hits__query=query).distinct().count()


def test_the_migration_backfills_the_latest_table_in_one_statement(demo):
    backfill = import_module("metrics.migrations.0002_latest_points_and_stored_intervals")
    expected = latest_by_distinct_on()
    LatestMetricPoint.objects.all().delete()
    with connection.cursor() as cursor:
        cursor.execute(backfill.BACKFILL_LATEST)

    assert latest_table() == expected and expected


def test_the_migration_drops_points_left_behind_by_deleted_queries_before_backfilling(demo):
    migration = import_module("metrics.migrations.0002_latest_points_and_stored_intervals")
    expected = latest_by_distinct_on()
    point = MetricPoint.objects.exclude(query=None).first()
    missing = Query.objects.order_by("-pk").first().pk + 1000
    LatestMetricPoint.objects.all().delete()
    with connection.cursor() as cursor:
        # As the old raw-SQL project delete did: rows whose query is gone.
        cursor.execute("SET session_replication_role = replica")
        cursor.execute(
            "INSERT INTO metrics_metricpoint (result_list_id, query_id, metric, as_of, value,"
            " judged, retrieved, judgements, queries, zero_idcg, computed_at)"
            " SELECT result_list_id, %s, metric, as_of, value, judged, retrieved, judgements,"
            " queries, zero_idcg, computed_at FROM metrics_metricpoint WHERE id = %s",
            [missing, point.pk],
        )
        cursor.execute(
            "INSERT INTO metrics_stalequery (query_id, project_id, marked_at)"
            " VALUES (%s, %s, now())",
            [missing, demo.pk],
        )
        cursor.execute("SET session_replication_role = DEFAULT")

        cursor.execute(migration.DELETE_ORPHANS)
        cursor.execute(migration.BACKFILL_LATEST)

    assert not MetricPoint.objects.filter(query_id=missing).exists()
    assert not StaleQuery.objects.filter(query_id=missing).exists()
    assert latest_table() == expected and expected


def test_every_overall_point_stores_the_interval_of_its_mean(demo):
    spec = project_spec(demo)
    for result_list in demo.result_lists.all():
        overall = MetricPoint.objects.filter(result_list=result_list, query=None).latest("as_of")
        latest = latest_by_distinct_on(overall.as_of)
        keys = sorted(key for key in latest if key[:2] == (result_list.pk, spec.name))
        values = [latest[key][1] for key in keys]
        interval = bootstrap_mean_ci(values, n_resamples=1000, seed=0, confidence=0.95)

        assert (overall.ci_resamples, overall.ci_seed, overall.ci_confidence) == (1000, 0, 0.95)
        assert (overall.ci_low, overall.ci_high) == (interval.low, interval.high)
        assert overall.ci_low < overall.value < overall.ci_high


def test_the_overall_point_of_a_past_bucket_is_the_same_read_either_way(demo):
    # Rebuilding a past bucket finds the latest points in the series, not the table.
    first = Judgement.objects.human().order_by("created_at").first().created_at
    as_of = first + dt.timedelta(days=3)
    spec = project_spec(demo)
    result_list = demo.result_lists.first()
    stored = MetricPoint.objects.get(
        result_list=result_list, query=None, as_of=bucket_end(as_of, "day")
    )

    again = evaluate.overall_point(result_list, spec, as_of=stored.as_of)

    fields = ["value", "judged", "retrieved", "judgements", "queries", "zero_idcg", "ci_low"]
    assert [getattr(again, f) for f in fields] == [getattr(stored, f) for f in fields]
    assert again.value == pytest.approx(mean_of_latest(result_list, spec, stored.as_of), 1e-12)


@pytest.mark.django_db
def test_one_refresh_waits_in_the_database_queue_per_project(
    settings, django_capture_on_commit_callbacks
):
    from django_tasks_db.models import DBTaskResult

    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    first, second = (JudgementFactory().query for _ in range(2))

    def schedule(query) -> None:
        with django_capture_on_commit_callbacks(execute=True):
            refresh.metrics_schedule_refresh(project_id=query.project_id, query_ids=[query.pk])

    def waiting(query) -> int:
        return DBTaskResult.objects.ready().filter(args_kwargs__args=[query.project_id]).count()

    for _ in range(3):
        schedule(first)
    schedule(second)
    assert (waiting(first), waiting(second)) == (1, 1)
    # Once a worker has claimed the task, the next mark may come after its reads:
    # another task is queued.
    DBTaskResult.objects.ready().filter(args_kwargs__args=[first.project_id]).update(
        status="RUNNING"
    )
    schedule(first)
    assert waiting(first) == 1
    assert DBTaskResult.objects.filter(args_kwargs__args=[first.project_id]).count() == 2
