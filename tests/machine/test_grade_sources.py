"""Every number from human, machine or both grades (issue 17, point 4), through the one
freshness rule: the over-time series, the exports and the series API replay the log for
machine grades (the stored series keeps human grades); derived_state knows that machine
events are no rater's answer. Real PostgreSQL, a real model server on 127.0.0.1."""

import datetime as dt
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from judgements.derived.oracles import differences
from judgements.machine.gate import grades_of
from judgements.models import Hit, Judgement, MachineGate, PairGrade, QueuePair
from judgements.services import judgement_record
from metrics.dashboards.overview import project_overview
from metrics.dashboards.result_list import result_list_metrics
from metrics.history import metrics_rebuild, replayed_series
from metrics.models import MetricPoint
from metrics.registry import project_spec
from metrics.sources import HUMAN, freshness
from tests.factories import HitFactory, ResultListFactory
from tests.machine.conftest import make_judge, pool_project

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def judged(rater, model_server, analyst, *, human=(0, 1, 2, 3), judge_says=3):
    """Two queries of four hits: the rater grades the first query's, the judge all eight."""
    from judgements.machine.runs import machine_run_start

    project = pool_project(2, 4)
    query = project.queries.get(text="query 0")
    for document, grade in zip(
        project.documents.filter(title__startswith="q0").order_by("title"), human, strict=True
    ):
        judgement_record(rater=rater, query=query, document=document, grade=grade)
    model_server.default = judge_says
    judge = make_judge(project, model_server)
    machine_run_start(judge=judge, user=analyst)
    return project, judge


def test_derived_state_is_clean_after_a_judge_run(rater, model_server, analyst):
    project, judge = judged(rater, model_server, analyst)
    assert Judgement.objects.filter(rater=judge.rater).count() == 8

    out = StringIO()
    call_command("derived_state", "--check", "--project", project.slug, stdout=out)

    assert list(differences(project)) == []
    # The judge's eight answers made no pair-grade row and took no queue slot.
    assert PairGrade.objects.filter(project=project).count() == 4
    assert not QueuePair.objects.filter(answered__has_key=str(judge.rater_id)).exists()


def test_the_oracles_see_a_machine_event_counted_as_a_human_one(rater, model_server, analyst):
    project, judge = judged(rater, model_server, analyst)
    # A pair only the judge answered; a rule that counted machine events would give it a
    # pair-grade row.
    machine = Judgement.objects.filter(rater=judge.rater, query__text="query 1").first()
    pair = PairGrade.objects.create(
        project=project,
        query_id=machine.query_id,
        document_id=machine.document_id,
        graded=1,
        lowest=machine.grade,
        highest=machine.grade,
        grades=[machine.grade],
        raters=[judge.rater_id],
    )

    found = list(differences(project))

    # The row is reported (and the query's totals its trigger recounted from it).
    rows = [(row.key, row.expected) for row in found if row.table == "judgements_pairgrade"]
    assert rows == [((pair.query_id, pair.document_id), None)]


def test_human_grades_replayed_equal_the_rebuilt_stored_series(rater, model_server, analyst):
    project, _ = judged(rater, model_server, analyst)
    spec = project_spec(project)
    first = Judgement.objects.order_by("created_at").first().created_at
    metrics_rebuild(project=project, since=first, every="day")
    # The day's bucket (the grading's hourly refresh stored one point before it).
    stored = MetricPoint.objects.filter(query=None, metric=spec.name).latest("as_of")
    now = timezone.now()

    [replayed] = replayed_series(project, spec, grades=HUMAN, until=now)

    # The stored bucket ends at midnight, the replay now: nothing happened in between.
    assert stored.as_of >= replayed.as_of == now
    fields = ("value", "ci_low", "ci_high", "queries", "judged", "retrieved", "judgements")
    assert [getattr(replayed, name) for name in fields] == [
        getattr(stored, name) for name in fields
    ]


def test_a_machine_series_is_replayed_at_each_days_end_and_ends_on_the_page_mean(
    rater, model_server, analyst
):
    project = pool_project(2, 4)
    judge = make_judge(project, model_server)
    spec = project_spec(project)
    machine_grades = grades_of(project, "machine")
    assert machine_grades.judges == (judge.rater_id,)
    assert replayed_series(project, spec, grades=machine_grades, until=timezone.now()) == []
    # The judge's answers, recorded two days ago: the series starts then, a point a day.
    two_days_ago = timezone.now() - dt.timedelta(days=2)
    for query in project.queries.all():
        for hit in query.hits.all():
            Judgement.objects.create(
                query=query,
                document=hit.document,
                rater=judge.rater,
                kind="grade",
                # Query 0 ranked perfectly, query 1 worst first (grades rising with rank).
                grade=4 - hit.rank if query.text == "query 0" else hit.rank - 1,
                source="machine",
                created_at=two_days_ago,
            )

    overview = project_overview(project, spec, as_of=None, grades=machine_grades)

    series = overview.series
    assert len(series) == 3  # Two days' ends and now.
    assert series[0].as_of < series[1].as_of < series[2].as_of == overview.fresh.moment
    # Nothing changed after the answers: every point is the page's mean of NDCG 1 (query
    # 0) and query 1's, below 1.
    mean = overview.summaries[0].mean
    assert 0.5 < mean < 1
    assert [point.value for point in series] == [mean, mean, mean]
    assert overview.series_replayed and "grades: machine judges' grades" in overview.series_params
    human = project_overview(project, spec, as_of=None)
    assert not human.series_replayed and human.series == []  # No stored point yet.


def test_dashboards_and_api_read_machine_grades_from_the_log_and_say_so(
    charlie, rater, model_server, analyst
):
    project, judge = judged(rater, model_server, analyst)
    result_list = project.result_lists.get()
    spec = project_spec(project)
    machine_grades = grades_of(project, "machine")

    fresh = freshness(project, spec, as_of=None, grades=machine_grades)
    found = result_list_metrics(project, result_list, spec, as_of=None, grades=machine_grades)

    assert (fresh.stored, fresh.derived, fresh.lists, fresh.pairs) == (False, False, "log", "log")
    # The judge said 3 everywhere: NDCG 1 on both queries.
    assert found.summary.mean == 1.0
    series_url = reverse("api:result-list-series", args=[result_list.pk])
    body = charlie.get(series_url, {"grades": "machine"}).json()
    assert (body["source"], body["grades"]) == ("log", "machine")
    assert body["results"][-1]["value"] == 1.0
    human = charlie.get(series_url).json()
    stored = MetricPoint.objects.filter(result_list=result_list, query=None).latest("as_of")
    assert (human["source"], human["grades"]) == ("stored", "human")
    assert human["results"][-1]["value"] == stored.value < 1
    query = project.queries.get(text="query 1")
    query_url = reverse("api:query-series", args=[result_list.pk, query.pk])
    [point] = charlie.get(query_url, {"grades": "machine"}).json()["results"]
    assert (point["value"], point["judged"], point["judgements"]) == (1.0, 4, 4)
    detail = charlie.get(
        reverse("metrics:query", args=[project.slug, result_list.pk, query.pk]),
        {"grades": "machine"},
    )
    html = detail.content.decode()
    assert judge.rater.username in html  # The judge's column of grades.
    assert "Replayed from the judgement log" in html


def test_the_series_export_takes_the_grades_and_names_them_on_every_row(
    charlie, rater, model_server, analyst
):
    project, _ = judged(rater, model_server, analyst)
    # A gate any agreement passes (the judge's 3s against 0-3 give a negative alpha).
    MachineGate.objects.create(project=project, admit="certified", min_alpha=-1.0, min_gold=1)
    url = reverse("metrics:series_export", args=[project.slug])

    machine = charlie.get(url, {"grades": "machine"})
    both = charlie.get(url, {"grades": "both"})
    bad = charlie.get(url, {"grades": "robots"})

    assert machine["Content-Disposition"].endswith('-metric-series-machine.csv"')
    lines = b"".join(machine.streaming_content).decode().splitlines()
    assert lines[0].endswith(",zero_idcg,grades,ci_pending,covers_until")
    [row] = [line.split(",") for line in lines[1:]]
    assert (row[0], row[3], row[-3], row[-2]) == ("prod", "1.0", "machine", "false")
    # A replayed day's end covers the judgements up to it, or up to now for today's.
    assert row[-1] <= row[2]
    both_lines = b"".join(both.streaming_content).decode().splitlines()
    assert [line.split(",")[-3] for line in both_lines[1:]] == ["both"]
    assert bad.status_code == 400 and "grades: 'robots'" in bad.content.decode()


def test_the_compare_and_working_apis_take_the_grades(charlie, rater, model_server, analyst):
    project, _ = judged(rater, model_server, analyst)
    prod = project.result_lists.get()
    # A second list: query 0's documents in the opposite order.
    new = ResultListFactory(project=project, name="new")
    for hit in Hit.objects.filter(result_list=prod):
        HitFactory(result_list=new, query=hit.query, document=hit.document, rank=5 - hit.rank)
    url = reverse("api:compare", args=[project.slug])
    params = {"a": prod.pk, "b": new.pk}

    human = charlie.get(url, params).json()
    machine = charlie.get(url, {**params, "grades": "machine"}).json()

    assert (human["grades"], machine["grades"], machine["source"]) == ("human", "machine", "log")
    # Humans graded query 0 from 0 to 3 (rank 1 to 4): reversing it is better. The judge
    # said 3 everywhere: both orders are perfect.
    assert human["mean_difference"] > 0
    assert (machine["a"]["mean"], machine["b"]["mean"], machine["mean_difference"]) == (1, 1, 0)
    query = project.queries.get(text="query 0")
    working = reverse("api:query-working", args=[prod.pk, query.pk])
    rows = charlie.get(working, {"grades": "machine"}).json()
    assert (rows["grades"], rows["source"], rows["ndcg"]) == ("machine", "log", 1.0)
    assert {row["grade"] for row in rows["rows"] if row["returned"]} == {3.0}
