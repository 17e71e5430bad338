"""metrics_rebuild writes the rows the per-bucket path writes: the log replayed in SQL
for each bucket (selectors.logged_pair_grades), the points built by
metric_points_build and stored with their overall point, bucket after bucket."""

import datetime as dt
import random

import pytest
import time_machine
from django.db import transaction

from judgements.models import Document, Hit, Judgement, Project, Query
from metrics import buckets, evaluate, history, overall, refresh, selectors
from metrics.models import LatestMetricPoint, MetricPoint
from metrics.registry import project_spec
from tests.factories import ProjectFactory, ResultListFactory, UserFactory

START = dt.datetime(2026, 10, 1, tzinfo=dt.UTC)
DAYS = 6
ENDS = buckets.bucket_ends(START, START + dt.timedelta(days=DAYS - 1), "day")
SETTINGS = [
    {"consensus": "mean"},
    {"consensus": "median", "metric_k": 5, "metric_gain": "linear", "metric_ideal": "returned"},
    {"consensus": "majority", "metric_discount": "rank"},
    {"consensus": "quepid", "metric_k": 3},
]


class Rollback(Exception):
    pass


def random_project(seed: int, **settings) -> Project:
    """Queries, documents and three result lists captured at different times, and a
    log of grades, revisions, can't-tell answers and retractions by four raters,
    some dated exactly on bucket boundaries and some sharing a moment."""
    rng = random.Random(seed)
    project = ProjectFactory(**settings)
    raters = [UserFactory(roles=["rater"]) for _ in range(4)]
    queries = [Query.objects.create(project=project, text=f"query {i}") for i in range(8)]
    documents = {
        query: [
            Document.objects.create(project=project, external_id=f"{query.pk}-{d}")
            for d in range(10)
        ]
        for query in queries
    }
    captures = [START - dt.timedelta(days=1), START + dt.timedelta(days=2), ENDS[3]]
    for n, captured_at in enumerate(captures):
        result_list = ResultListFactory(project=project, name=f"run {n}", captured_at=captured_at)
        for query in rng.sample(queries, 6):
            ranked = rng.sample(documents[query], rng.randint(1, 8))
            Hit.objects.bulk_create(
                Hit(result_list=result_list, query=query, document=document, rank=rank)
                for rank, document in enumerate(ranked, start=1)
            )
    Judgement.objects.bulk_create(random_events(rng, documents, raters))
    return project


def random_events(rng, documents, raters) -> list[Judgement]:
    moments = [START + dt.timedelta(days=DAYS) * rng.random() for _ in range(40)]
    moments += [end + dt.timedelta(microseconds=shift) for end in ENDS for shift in (-1, 0, 1)]
    events = []
    for _ in range(700):
        query = rng.choice(list(documents))
        kind = rng.choices(["grade", "cant_tell", "retract"], weights=[7, 2, 2])[0]
        events.append(
            Judgement(
                query=query,
                document=rng.choice(documents[query][:6]),
                rater=rng.choice(raters),
                kind=kind,
                grade=rng.randint(0, 3) if kind == "grade" else None,
                created_at=rng.choice(moments),
            )
        )
    return events


def reference_rebuild(project: Project, ends) -> None:
    """The per-bucket path metrics_rebuild took before it read the log once."""
    spec = project_spec(project)
    for as_of in ends:
        pairs = selectors.logged_pair_grades(project.pk, as_of=as_of, policy=spec.consensus)
        for result_list in project.result_lists.filter(captured_at__lte=as_of):
            points = evaluate.metric_points_build(result_list, spec, as_of=as_of, pairs=pairs)
            refresh.metric_points_store(points)
            overall.overall_store(result_list, spec, as_of=as_of)


def stored_rows(*, ids: bool = False) -> tuple[list, list]:
    """Every stored point and latest point, floats as hex (bit for bit), without
    computed_at (the clock); with the row ids if ``ids``."""
    skip = {"computed_at"} if ids else {"computed_at", "id"}
    series = [f.attname for f in MetricPoint._meta.concrete_fields if f.attname not in skip]
    latest = [f.attname for f in LatestMetricPoint._meta.concrete_fields if f.attname not in skip]

    def rows(model, fields):
        ordered = model.objects.order_by("result_list", "metric", "query", "as_of")
        return [
            tuple(value.hex() if isinstance(value, float) else value for value in row)
            for row in ordered.values_list(*fields)
        ]

    return rows(MetricPoint, series), rows(LatestMetricPoint, latest)


def rows_after(write) -> tuple[list, list]:
    """The rows ``write`` leaves, then undone."""
    try:
        with transaction.atomic():
            write()
            rows = stored_rows()
            raise Rollback
    except Rollback:
        return rows


@pytest.mark.django_db
@pytest.mark.parametrize("metric_settings", SETTINGS, ids=[s["consensus"] for s in SETTINGS])
def test_rebuild_writes_the_rows_of_the_per_bucket_replay(metric_settings):
    project = random_project(seed=len(str(metric_settings)), **metric_settings)
    expected = rows_after(lambda: reference_rebuild(project, ENDS))
    history.metrics_rebuild(project=project, since=ENDS[0], until=ENDS[-1])
    assert stored_rows() == expected
    # Judgements, lists captured later, overall points and a future list: all there.
    assert len(expected[0]) > 3 * DAYS


@pytest.mark.django_db
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rebuild_over_a_stored_series_writes_the_rows_of_the_per_bucket_replay(seed):
    project = random_project(seed=seed)
    reference_rebuild(project, ENDS[:2] + ENDS[-1:])
    expected = rows_after(lambda: reference_rebuild(project, ENDS))
    history.metrics_rebuild(project=project, since=ENDS[0], until=ENDS[-1])
    assert stored_rows() == expected


@pytest.mark.django_db
def test_rebuilding_twice_changes_no_row_not_even_its_id():
    project = random_project(seed=4)
    history.metrics_rebuild(project=project, since=ENDS[0], until=ENDS[-1])
    first = stored_rows(ids=True)
    history.metrics_rebuild(project=project, since=ENDS[0], until=ENDS[-1])
    assert stored_rows(ids=True) == first


@pytest.mark.django_db
def test_rebuilding_the_past_leaves_the_newer_latest_points_alone():
    project = random_project(seed=5)
    history.metrics_rebuild(project=project, since=ENDS[0], until=ENDS[-1])
    expected = rows_after(lambda: reference_rebuild(project, ENDS[1:3]))
    history.metrics_rebuild(project=project, since=ENDS[1], until=ENDS[2])
    assert stored_rows() == expected


@pytest.mark.django_db
def test_a_query_that_lost_its_hits_counts_in_the_overall_point_as_before():
    project = random_project(seed=6)
    reference_rebuild(project, ENDS[:2])
    result_list = project.result_lists.get(name="run 0")
    gone = Hit.objects.filter(result_list=result_list).values("query").first()["query"]
    Hit.objects.filter(result_list=result_list, query=gone).delete()
    expected = rows_after(lambda: reference_rebuild(project, ENDS))
    history.metrics_rebuild(project=project, since=ENDS[0], until=ENDS[-1])
    assert stored_rows() == expected
    overall = MetricPoint.objects.get(result_list=result_list, query=None, as_of=ENDS[-1])
    assert overall.queries == 6  # The query without hits keeps its last point.


@pytest.mark.django_db
def test_buckets_ending_after_the_rebuild_starts_read_the_log_in_their_own_transaction():
    project = random_project(seed=7)
    with time_machine.travel(ENDS[2] + dt.timedelta(hours=5), tick=False):
        expected = rows_after(lambda: reference_rebuild(project, ENDS))
        history.metrics_rebuild(project=project, since=ENDS[0], until=ENDS[-1])
    assert stored_rows() == expected


@pytest.mark.django_db
def test_rebuild_reports_progress_once_per_bucket_and_counts_per_query_points():
    project = random_project(seed=8)
    seen = []
    written = history.metrics_rebuild(
        project=project,
        since=ENDS[0],
        until=ENDS[-1],
        progress=lambda done, total, as_of: seen.append((done, total, as_of)),
    )
    assert seen == [(n, len(ENDS), end) for n, end in enumerate(ENDS, start=1)]
    assert written == MetricPoint.objects.filter(query__isnull=False).count()
