"""The one freshness rule: which source holds a number for a spec at a moment, asked once
per request, and named by every page and API response that shows a metric."""

import datetime as dt
from io import StringIO

import numpy as np
import pytest
import time_machine
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from judgements.models import Hit, Judgement, Project, Query
from metrics import refresh
from metrics.models import MetricPoint, StaleQuery
from metrics.registry import project_spec
from metrics.sources import Source, freshness, grades_freshness
from tests.factories import HitFactory, JudgementFactory, ResultListFactory
from tests.rows import rows_read


@pytest.fixture
def demo(db):
    # load_demo rebuilds the stored series up to now: the project's metric is current.
    call_command("load_demo", stdout=StringIO())
    return Project.objects.get(slug="outdoor-gear")


def first_hit(project) -> Hit:
    return Hit.objects.filter(result_list__project=project, rank=1).order_by("pk").first()


def test_the_projects_metric_now_with_nothing_stale_is_read_from_the_stored_series(demo):
    fresh = freshness(demo, project_spec(demo), as_of=None)

    assert fresh.stored and fresh.derived
    assert (fresh.lists, fresh.pairs) == (Source.STORED, Source.PAIRS)
    newest = MetricPoint.objects.filter(query=None).latest("as_of").as_of
    assert fresh.moment == min(newest, fresh.moment) <= timezone.now()


def test_a_stale_query_sends_the_lists_to_their_packed_grades(demo):
    refresh.queries_mark_stale(query_ids=[first_hit(demo).query_id])

    fresh = freshness(demo, project_spec(demo), as_of=None)

    assert not fresh.stored
    assert (fresh.lists, fresh.pairs) == (Source.PACKED, Source.PAIRS)


def test_another_projects_marks_are_neither_this_projects_nor_read(demo):
    """Each mark carries its query's project: another project's 2,000 stale queries
    leave this project's stored series current, and asking reads none of them (a join
    of the marks with the queries read the query table from the first mark on)."""
    other = Project.objects.create(name="Other", slug="other")
    queries = Query.objects.bulk_create(Query(project=other, text=f"q{n}") for n in range(2000))
    refresh.queries_mark_stale(query_ids=[query.pk for query in queries])
    refresh.queries_mark_stale(query_ids=[queries[0].pk, first_hit(demo).query_id])
    StaleQuery.objects.filter(project=demo).delete()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE metrics_stalequery, judgements_query")
    before = rows_read(["metrics_stalequery", "judgements_query"])

    fresh = freshness(demo, project_spec(demo), as_of=None)

    assert fresh.stored
    assert rows_read(["metrics_stalequery", "judgements_query"]) - before < 10
    assert set(StaleQuery.objects.values_list("project", flat=True)) == {other.pk}


def test_a_grade_after_the_newest_stored_point_sends_the_lists_to_their_packed_grades(demo):
    newest = MetricPoint.objects.filter(query=None).latest("as_of").as_of
    hit = first_hit(demo)
    with time_machine.travel(newest + dt.timedelta(hours=1), tick=False):
        # Recorded without the refresh a grade schedules, as a worker that lags behind.
        JudgementFactory(query=hit.query, document=hit.document, grade=0)
        StaleQuery.objects.all().delete()

        fresh = freshness(demo, project_spec(demo), as_of=None)

    assert fresh.lists == Source.PACKED


def test_a_list_with_hits_and_no_stored_point_sends_the_lists_to_their_packed_grades(demo):
    hit = first_hit(demo)
    HitFactory(result_list=ResultListFactory(project=demo), query=hit.query, rank=1)

    assert freshness(demo, project_spec(demo), as_of=None).lists == Source.PACKED


def test_a_parameter_the_project_does_not_keep_is_computed_from_the_packed_grades(demo):
    spec = project_spec(demo).with_changes(k=3, gain="linear")

    fresh = freshness(demo, spec, as_of=None)

    assert (fresh.lists, fresh.pairs) == (Source.PACKED, Source.PAIRS)


def test_a_moment_before_an_event_is_replayed_from_the_log(demo):
    first = Judgement.objects.for_project(demo).earliest("created_at").created_at
    then = first + dt.timedelta(seconds=1)

    fresh = freshness(demo, project_spec(demo), as_of=then)

    assert (fresh.lists, fresh.pairs, fresh.moment) == (Source.LOG, Source.LOG, then)


def test_a_past_moment_after_every_event_is_read_packed(demo):
    last = Judgement.objects.for_project(demo).latest("created_at").created_at

    fresh = freshness(demo, project_spec(demo), as_of=last)

    # The stored series answers for now only; the packed rows hold any later moment.
    assert (fresh.lists, fresh.pairs) == (Source.PACKED, Source.PAIRS)


def test_an_event_dated_in_the_future_sends_now_to_the_log(demo):
    hit = first_hit(demo)
    tomorrow = timezone.now() + dt.timedelta(days=1)
    JudgementFactory(query=hit.query, document=hit.document, grade=3, created_at=tomorrow)

    assert freshness(demo, project_spec(demo), as_of=None).lists == Source.LOG
    assert grades_freshness(demo.pk, as_of=None).pairs == Source.LOG


def test_each_source_gives_the_same_numbers(demo):
    from metrics.dashboards.evaluations import list_evaluations
    from metrics.sources import Freshness

    spec = project_spec(demo)
    lists = list(demo.result_lists.order_by("pk"))
    stored = freshness(demo, spec, as_of=None)
    packed = Freshness(moment=stored.moment, stored=False, derived=True)
    log = Freshness(moment=stored.moment, stored=False, derived=False)

    by_source = {
        fresh.lists: list_evaluations(demo, spec, fresh=fresh, result_lists=lists)
        for fresh in (stored, packed, log)
    }

    assert set(by_source) == {Source.STORED, Source.PACKED, Source.LOG}
    replayed = np.concatenate([e.ndcg for e in by_source[Source.LOG]])
    assert len(replayed) > 0
    for evaluations in by_source.values():
        values = np.concatenate([e.ndcg for e in evaluations])
        assert values == pytest.approx(replayed, abs=1e-12)


# The pages and the API name the source.


def dashboard_urls(project) -> dict[str, str]:
    result_list = project.result_lists.order_by("pk").first()
    query = first_hit(project).query_id
    return {
        "overview": reverse("metrics:overview", args=[project.slug]),
        "table": reverse("metrics:queries", args=[project.slug, result_list.pk]),
        "query": reverse("metrics:query", args=[project.slug, result_list.pk, query]),
        "compare": reverse("metrics:compare", args=[project.slug]),
    }


def source_on(response) -> str:
    assert response.status_code == 200
    html = response.content.decode()
    marker = 'data-testid="source" data-source="'
    assert html.count(marker) == 1
    return html.split(marker)[1].split('"')[0]


def test_every_dashboard_names_the_source_of_its_numbers(client, analyst, demo):
    client.force_login(analyst)
    urls = dashboard_urls(demo)
    first = Judgement.objects.for_project(demo).earliest("created_at").created_at
    past = {"as_of": (first + dt.timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%S")}

    now = {name: source_on(client.get(url)) for name, url in urls.items()}
    other_k = {name: source_on(client.get(url, {"k": 3})) for name, url in urls.items()}
    then = {name: source_on(client.get(url, past)) for name, url in urls.items()}

    assert now == {"overview": "stored", "table": "stored", "query": "pairs", "compare": "stored"}
    assert other_k == {"overview": "packed", "table": "packed", "query": "pairs"} | {
        "compare": "packed"
    }
    assert set(then.values()) == {"log"}
    page = client.get(urls["overview"]).content.decode()
    assert Source.STORED.label in page


def test_every_metrics_response_of_the_api_names_its_source(client, analyst, demo):
    client.force_login(analyst)
    result_list = demo.result_lists.order_by("pk").first()
    query = first_hit(demo).query_id

    metrics = client.get(f"/api/result-lists/{result_list.pk}/metrics/").json()
    packed = client.get(f"/api/result-lists/{result_list.pk}/metrics/", {"k": 3}).json()
    working = client.get(f"/api/result-lists/{result_list.pk}/queries/{query}/working/").json()
    compare = client.get(f"/api/projects/{demo.slug}/compare/").json()
    unjudged = client.get(f"/api/result-lists/{result_list.pk}/unjudged/").json()
    series = client.get(f"/api/result-lists/{result_list.pk}/series/").json()

    assert (metrics["source"], metrics["results_source"]) == ("stored", "packed")
    assert (packed["source"], packed["results_source"]) == ("packed", "packed")
    assert working["source"] == "pairs"
    assert (compare["source"], compare["a"]["source"], compare["b"]["source"]) == ("stored",) * 3
    assert unjudged["source"] == "packed"
    assert series["source"] == "stored"


def test_the_openapi_schema_documents_the_source_field(client, analyst):
    client.force_login(analyst)

    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()

    components = schema["components"]["schemas"]
    assert components["MetricSourceEnum"]["enum"] == ["stored", "packed", "pairs", "log"]
    documented = {
        name: body["properties"]["source"]
        for name, body in components.items()
        if "MetricSourceEnum" in str(body.get("properties", {}).get("source"))
    }
    assert {"ResultListMetricsOutput", "QueryWorkingOutput", "CompareOutput"} <= set(documented)
    assert {"ResultListUnjudgedOutput", "ResultListSeriesOutput"} <= set(documented)
    for name in ("ResultListMetricsOutput", "QueryWorkingOutput", "CompareOutput"):
        assert "metrics.sources" in documented[name]["description"]


RULE = "/* metrics.sources.freshness */"


@pytest.mark.parametrize("page", ["overview", "table", "query", "compare"])
def test_a_page_asks_the_rule_once(client, analyst, demo, page):
    client.force_login(analyst)
    url = dashboard_urls(demo)[page]

    with CaptureQueriesContext(connection) as queries:
        source_on(client.get(url))

    asked = [query["sql"] for query in queries.captured_queries if RULE in query["sql"]]
    assert len(asked) == 1
