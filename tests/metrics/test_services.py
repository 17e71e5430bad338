import datetime as dt
from io import StringIO

import pytest
import time_machine
from django.core.management import call_command

from judgements.models import Hit, Judgement, Project
from judgements.services import judgement_record
from metrics import services
from metrics.core import ndcg
from metrics.models import MetricPoint, StaleQuery
from metrics.registry import MetricSpec, project_spec
from tests.factories import JudgementFactory

AS_OF = dt.datetime(2026, 11, 21, tzinfo=dt.UTC)


@pytest.fixture
def demo(db):
    call_command("load_demo", stdout=StringIO())
    return Project.objects.get(slug="outdoor-gear")


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
        points = services.metric_points_build(result_list, spec, as_of=AS_OF)
        expected = core_ndcg_by_query(result_list, spec, AS_OF)
        assert {point.query_id: point.value for point in points} == pytest.approx(
            expected, abs=1e-12
        )


def test_values_as_of_a_past_moment_ignore_later_judgements(demo):
    result_list = demo.result_lists.get(name__startswith="bm25")
    spec = project_spec(demo)
    before = services.metric_points_build(result_list, spec, as_of=AS_OF)
    target = next(point for point in before if 0 < point.value < 1)
    hit = Hit.objects.filter(result_list=result_list, query_id=target.query_id).first()
    rater = Judgement.objects.filter(query_id=target.query_id).first().rater
    with time_machine.travel(AS_OF + dt.timedelta(days=1), tick=False):
        for user in Judgement.objects.values_list("rater", flat=True).distinct():
            JudgementFactory(
                query_id=target.query_id,
                document=hit.document,
                rater_id=user,
                grade=0 if hit.rank == 1 else 3,
            )
    again = services.metric_points_build(result_list, spec, as_of=AS_OF)
    later = services.metric_points_build(result_list, spec, as_of=AS_OF + dt.timedelta(days=2))
    value = {point.query_id: point.value for point in again}
    assert value == {point.query_id: point.value for point in before}
    assert {p.query_id: p.value for p in later}[target.query_id] != target.value
    assert rater is not None


def test_rebuilding_twice_leaves_the_same_rows(demo):
    def snapshot():
        return sorted(
            MetricPoint.objects.values_list(
                "result_list_id", "query_id", "metric", "as_of", "value", "judged"
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
    assert metrics == {"ndcg@10 exponential log2 judged cut zero median"}


def test_a_grade_marks_its_query_stale_and_the_refresh_recomputes_only_it(
    demo, django_capture_on_commit_callbacks
):
    services.metrics_refresh(project=demo, now=AS_OF)
    before = MetricPoint.objects.count()
    query = demo.queries.first()
    hit = Hit.objects.filter(query=query).first()
    rater = Judgement.objects.filter(query=query).first().rater
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        judgement_record(rater=rater, query=query, document=hit.document, grade=3)
    assert list(StaleQuery.objects.values_list("query_id", flat=True)) == [query.pk]
    assert len(callbacks) == 1
    with time_machine.travel(AS_OF + dt.timedelta(hours=3), tick=False):
        callbacks[0]()
    new = MetricPoint.objects.filter(as_of=AS_OF + dt.timedelta(hours=3))
    lists_with_query = demo.result_lists.filter(hits__query=query).distinct().count()
    assert new.filter(query__isnull=False).count() == lists_with_query
    assert set(new.filter(query__isnull=False).values_list("query_id", flat=True)) == {query.pk}
    assert new.filter(query__isnull=True).count() == demo.result_lists.count()
    assert MetricPoint.objects.count() == before + lists_with_query + demo.result_lists.count()
    assert not StaleQuery.objects.exists()


def test_a_refresh_with_nothing_stale_writes_nothing(demo):
    services.metrics_refresh(project=demo, now=AS_OF)
    assert services.metrics_refresh(project=demo, now=AS_OF + dt.timedelta(hours=1)) == 0
