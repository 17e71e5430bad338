"""GET /api/result-lists/<id>/metrics/: a result list's numbers equal metrics.core's."""

import datetime as dt
import itertools
from urllib.parse import urlencode

import pytest
import time_machine

from judgements.models import ResultList
from metrics import refresh
from metrics.forms import SPEC_FIELDS
from metrics.registry import MetricSpec, project_spec
from searchlogs.models import QueryTraffic
from tests.api import metrics_oracle
from tests.api.conftest import NOV

# Charlie (analyst) reads every number; raters and visitors are refused (test_role_matrix).

K_VALUES = [None, 1, 3]


def every_spec():
    """Every combination of the form's choices, with k whole, 1 and 3."""
    choices = MetricSpec._choices()
    names = list(choices)
    for k in K_VALUES:
        for values in itertools.product(*(choices[name] for name in names)):
            yield MetricSpec(k=k, **dict(zip(names, values, strict=True)))


def params_of(spec: MetricSpec, **more) -> str:
    params = {name: "" if value is None else value for name, value in spec.as_dict().items()}
    return urlencode({**params, **more})


def metrics_of(client, result_list, spec: MetricSpec, **more) -> dict:
    response = client.get(f"/api/result-lists/{result_list.pk}/metrics/?{params_of(spec, **more)}")
    assert response.status_code == 200, response.content
    return response.json()


def assert_equals_oracle(body: dict, result_list, spec: MetricSpec, as_of) -> None:
    expected = metrics_oracle.per_query(result_list, spec, as_of)
    missing = metrics_oracle.unreturned(result_list, spec, as_of)
    traffic = metrics_oracle.traffic(result_list.project)
    overall = metrics_oracle.summary(expected, spec, missing, traffic)
    assert body["spec"] == {**spec.as_dict(), "name": spec.name, "label": spec.label}
    assert body["queries"] == overall["queries"]
    assert body["mean"] == pytest.approx(overall["means"]["ndcg"], abs=1e-12)
    assert body["means"] == pytest.approx(overall["means"], abs=1e-12)
    assert body["coverage"] == pytest.approx(overall["coverage"], abs=1e-12)
    assert body["unjudged"] == overall["unjudged"]
    assert body["zero_idcg"] == overall["zero_idcg"]
    interval = body["interval"]
    assert (interval["low"], interval["high"]) == pytest.approx(overall["interval"], abs=1e-12)
    assert [row["id"] for row in body["results"]] == sorted(expected)
    for row in body["results"]:
        wanted = {name: value for name, value in expected[row["id"]].items() if name != "graded"}
        assert {name: row[name] for name in wanted} == pytest.approx(wanted, abs=1e-12), spec


def test_every_parameter_combination_equals_the_core_one_query_at_a_time(charlie, shop):
    prod = shop.result_lists.get(name="prod")
    # Traffic for weight=traffic: every query but the last, each its own weight.
    queries = list(shop.queries.order_by("pk"))
    QueryTraffic.objects.bulk_create(
        QueryTraffic(project=shop, query=query, impressions=7 + 5 * i, stratum="top", drawn_at=NOV)
        for i, query in enumerate(queries[:-1])
    )
    now = dt.datetime.now(dt.UTC)
    for spec in every_spec():
        assert_equals_oracle(metrics_of(charlie, prod, spec), prod, spec, now)


def test_the_stored_series_gives_the_same_numbers_and_says_it_was_read(charlie, shop):
    prod = shop.result_lists.get(name="prod")
    spec = project_spec(shop)
    computed = metrics_of(charlie, prod, spec)
    refresh.metrics_refresh(project=shop)

    stored = metrics_of(charlie, prod, spec)

    assert (computed["source"], stored["source"]) == ("packed", "stored")
    for name in ("mean", "coverage", "zero_idcg", "queries", "unjudged", "means", "interval"):
        assert stored[name] == pytest.approx(computed[name], abs=1e-12), name
    for was, now in zip(computed["results"], stored["results"], strict=True):
        names = {name: (now.pop(name), was.pop(name)) for name in ("text", "external_id")}
        assert all(a == b for a, b in names.values())
        assert now == pytest.approx(was, abs=1e-12)
    assert_equals_oracle(stored, prod, spec, dt.datetime.now(dt.UTC))


def test_parameters_not_given_take_the_projects_defaults(charlie, shop):
    shop.metric_k, shop.metric_gain, shop.consensus = 3, "linear", "median"
    shop.save()
    prod = shop.result_lists.get(name="prod")

    body = charlie.get(f"/api/result-lists/{prod.pk}/metrics/?discount=rank").json()

    spec = project_spec(shop).with_changes(discount="rank")
    assert body["spec"]["name"] == spec.name
    assert_equals_oracle(body, prod, spec, dt.datetime.now(dt.UTC))


def test_the_echoed_spec_has_every_parameter_of_metric_spec(charlie, shop):
    prod = shop.result_lists.get(name="prod")

    body = charlie.get(f"/api/result-lists/{prod.pk}/metrics/").json()

    assert set(body["spec"]) == {*SPEC_FIELDS, "name", "label"}
    assert MetricSpec(**{name: body["spec"][name] for name in SPEC_FIELDS}) == project_spec(shop)


def test_as_of_ignores_judgements_recorded_later(charlie, shop):
    prod = shop.result_lists.get(name="prod")
    spec = project_spec(shop)
    before_revision = NOV + dt.timedelta(days=2)

    with time_machine.travel(NOV + dt.timedelta(days=30), tick=False):
        then = metrics_of(charlie, prod, spec, as_of=before_revision.isoformat())
        now = metrics_of(charlie, prod, spec)

    assert then["as_of"] == "2026-11-03T00:00:00Z"
    assert now["as_of"] == "2026-12-01T00:00:00Z"
    assert then["mean"] != pytest.approx(now["mean"], abs=1e-6)
    assert_equals_oracle(then, prod, spec, before_revision)
    assert_equals_oracle(now, prod, spec, NOV + dt.timedelta(days=30))


def test_a_grade_recorded_after_as_of_changes_nothing_then(charlie, shop):
    prod = shop.result_lists.get(name="prod")
    tent = shop.queries.get(text="tent")
    moment = (NOV + dt.timedelta(days=5)).isoformat()
    before = metrics_of(charlie, prod, project_spec(shop), as_of=moment)

    with time_machine.travel(NOV + dt.timedelta(days=6), tick=False):
        document = prod.hits.get(query=tent, rank=5).document
        services_grade(tent, document, grade=0)

    after = metrics_of(charlie, prod, project_spec(shop), as_of=moment)
    # The same numbers; the packed grades no longer hold that moment, so the log is read.
    sources = [(body.pop("source"), body.pop("results_source")) for body in (before, after)]
    assert sources == [("packed", "packed"), ("log", "log")]
    assert after == before
    assert metrics_of(charlie, prod, project_spec(shop))["mean"] != before["mean"]


def services_grade(query, document, *, grade: int) -> None:
    from tests.factories import JudgementFactory, UserFactory

    rater = UserFactory(username="erin", roles=["rater"])
    JudgementFactory(query=query, document=document, rater=rater, grade=grade)


def test_each_query_is_named_by_its_external_id_or_else_its_id(charlie, shop):
    prod = shop.result_lists.get(name="prod")

    rows = charlie.get(f"/api/result-lists/{prod.pk}/metrics/").json()["results"]

    by_text = {row["text"]: row for row in rows}
    assert by_text["tent"]["external_id"] == "T-1"
    stove = shop.queries.get(text="stove")
    assert by_text["stove"]["external_id"] == str(stove.pk) == str(by_text["stove"]["id"])


def test_the_per_query_values_come_in_pages(charlie, shop):
    prod = shop.result_lists.get(name="prod")
    url = f"/api/result-lists/{prod.pk}/metrics/?page_size=3"

    first = charlie.get(url).json()
    second = charlie.get(first["next"]).json()

    assert first["count"] == second["count"] == 4
    assert len(first["results"]) == 3 and len(second["results"]) == 1
    assert second["next"] is None and second["previous"] is not None
    assert second["mean"] == first["mean"]


def test_a_query_without_a_relevant_grade_counts_zero_and_is_counted(charlie, shop):
    prod = shop.result_lists.get(name="prod")

    # rope has only a "can't tell": the default mean over judged queries leaves it out.
    judged = charlie.get(f"/api/result-lists/{prod.pk}/metrics/").json()
    body = charlie.get(f"/api/result-lists/{prod.pk}/metrics/?mean_over=all").json()

    # It counts rope, and map: judged, but the list never returned it (trec_eval -c).
    assert body["queries"] == judged["queries"] + 2

    rope = next(row for row in body["results"] if row["text"] == "rope")
    assert (rope["ndcg"], rope["idcg"], rope["judged"]) == (0.0, 0.0, 0)
    assert body["zero_idcg"] >= 1
    assert body["provisional"] is True and body["unjudged"] > 0


def test_precision_is_null_without_a_cut_off(charlie, shop):
    prod = shop.result_lists.get(name="prod")

    body = charlie.get(f"/api/result-lists/{prod.pk}/metrics/?k=").json()

    assert body["spec"]["k"] is None
    assert body["means"]["precision"] is None
    assert {row["precision"] for row in body["results"]} == {None}


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ("k=0", "k", "greater than or equal to 1"),
        ("k=ten", "k", "whole number"),
        ("gain=cubic", "gain", "cubic is not one of the available choices"),
        ("as_of=yesterday", "as_of", "valid date/time"),
        ("as_of=2026-01-01T00:00:00%2B23:00", None, None),
        ("page=9", None, "Invalid page"),
    ],
)
def test_bad_parameters_get_a_400_naming_the_field(charlie, shop, query, field, message):
    prod = shop.result_lists.get(name="prod")

    response = charlie.get(f"/api/result-lists/{prod.pk}/metrics/?{query}")

    if message is None:
        # An offset PostgreSQL would refuse is taken to UTC, not passed on.
        assert response.status_code == 200
        assert response.json()["as_of"] == "2025-12-31T01:00:00Z"
        return
    assert response.status_code in (400, 404)
    (error,) = response.json()["errors"]
    assert error["field"] == field and message in error["message"]


def test_an_unknown_result_list_is_a_404_in_the_api_shape(charlie, db):
    response = charlie.get("/api/result-lists/999999/metrics/")

    assert response.status_code == 404
    assert list(response.json()) == ["errors"]


def test_a_list_with_no_hits_has_no_mean_and_no_queries(charlie, shop):
    empty = ResultList.objects.create(project=shop, name="empty", captured_at=NOV)

    body = charlie.get(f"/api/result-lists/{empty.pk}/metrics/").json()

    assert (body["queries"], body["mean"], body["results"]) == (0, None, [])
    assert body["interval"]["low"] is None and body["coverage"] is None
