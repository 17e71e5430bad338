"""The stored series of a list and of a query (JSON and CSV), and one query's working."""

import csv
import datetime as dt
import io

import pytest

from metrics import history
from metrics.core import ideal_grades, ndcg
from metrics.models import MetricPoint
from metrics.registry import project_spec
from tests.api import metrics_oracle
from tests.api.conftest import NOV

# Charlie (analyst) reads series and workings; others are refused (test_role_matrix).


@pytest.fixture
def rebuilt(shop):
    """The daily series from 2 to 5 November: before and after the revision of the 4th."""
    history.metrics_rebuild(
        project=shop, since=NOV + dt.timedelta(days=1), until=NOV + dt.timedelta(days=4)
    )
    return shop


def test_a_lists_series_is_its_stored_mean_as_of_each_moment(charlie, rebuilt):
    prod = rebuilt.result_lists.get(name="prod")
    spec = project_spec(rebuilt)

    body = charlie.get(f"/api/result-lists/{prod.pk}/series/").json()

    stored = MetricPoint.objects.filter(result_list=prod, query=None, metric=spec.name)
    assert body["kept"] is True and body["spec"]["name"] == spec.name
    assert body["count"] == stored.count() == 4
    moments = [point["as_of"] for point in body["results"]]
    assert moments == sorted(moments)
    for point in body["results"]:
        moment = dt.datetime.fromisoformat(point["as_of"])
        missing = metrics_oracle.unreturned(prod, spec, moment)
        then = metrics_oracle.summary(metrics_oracle.per_query(prod, spec, moment), spec, missing)
        if not then["queries"]:
            # Before the first grade no query counts under the judged mean: the mean is
            # 0 by convention (metrics.core.query_mean) and there is no interval.
            assert point["value"] == 0.0 and point["queries"] == 0
            assert point["ci_low"] is point["ci_high"] is None
            continue
        assert point["value"] == pytest.approx(then["means"]["ndcg"], abs=1e-12)
        assert point["coverage"] == pytest.approx(then["coverage"], abs=1e-12)
        assert point["ci_confidence"] == 0.95 and point["ci_low"] <= point["value"]
    assert body["results"][-1]["value"] != body["results"][0]["value"]


def test_a_series_can_be_cut_to_a_time_range(charlie, rebuilt):
    prod = rebuilt.result_lists.get(name="prod")
    url = f"/api/result-lists/{prod.pk}/series/"

    body = charlie.get(url, {"since": "2026-11-04T00:00:00Z", "as_of": "2026-11-05T00:00:00Z"})

    assert [p["as_of"] for p in body.json()["results"]] == [
        "2026-11-04T00:00:00Z",
        "2026-11-05T00:00:00Z",
    ]


def test_a_series_comes_as_csv_with_the_same_points(charlie, rebuilt):
    prod = rebuilt.result_lists.get(name="prod")
    url = f"/api/result-lists/{prod.pk}/series/"

    response = charlie.get(url, {"format": "csv"})

    assert response["Content-Type"] == "text/csv"
    assert f'filename="shop-{prod.pk}-series.csv"' in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    points = charlie.get(url).json()["results"]
    assert len(rows) == len(points) == 4
    for row, point in zip(rows, points, strict=True):
        assert float(row["value"]) == point["value"]
        assert row["as_of"].replace("+00:00", "Z") == point["as_of"]
        assert int(row["queries"]) == point["queries"]


def test_a_metric_the_project_does_not_keep_has_no_series_and_says_so(charlie, rebuilt):
    prod = rebuilt.result_lists.get(name="prod")

    body = charlie.get(f"/api/result-lists/{prod.pk}/series/", {"k": 5}).json()

    assert (body["kept"], body["count"], body["results"]) == (False, 0, [])


def test_a_querys_series_is_its_stored_ndcg_as_of_each_moment(charlie, rebuilt):
    prod = rebuilt.result_lists.get(name="prod")
    tent = rebuilt.queries.get(text="tent")
    spec = project_spec(rebuilt)

    body = charlie.get(f"/api/result-lists/{prod.pk}/queries/{tent.pk}/series/").json()

    assert body["query"] == {"id": tent.pk, "external_id": "T-1", "text": "tent"}
    assert len(body["results"]) == 4
    for point in body["results"]:
        moment = dt.datetime.fromisoformat(point["as_of"])
        then = metrics_oracle.per_query(prod, spec, moment)[tent.pk]
        assert (point["value"], point["dcg"], point["idcg"]) == pytest.approx(
            (then["ndcg"], then["dcg"], then["idcg"]), abs=1e-12
        )
    csv_text = charlie.get(
        f"/api/result-lists/{prod.pk}/queries/{tent.pk}/series/", {"format": "csv"}
    ).content.decode()
    assert csv_text.splitlines()[0] == (
        "as_of,value,dcg,idcg,judged,retrieved,judgements,computed_at,coverage"
    )


def test_a_query_the_list_did_not_return_is_a_404(charlie, rebuilt):
    prod = rebuilt.result_lists.get(name="prod")
    unreturned = rebuilt.queries.get(text="map")

    for view in ("series", "working"):
        response = charlie.get(f"/api/result-lists/{prod.pk}/queries/{unreturned.pk}/{view}/")
        assert response.status_code == 404
        assert "returned no hit for query" in response.json()["errors"][0]["message"]


@pytest.mark.parametrize("unjudged", ["zero", "remove"])
@pytest.mark.parametrize("ideal", ["judged", "returned"])
def test_the_working_equals_the_cores_rank_by_rank(charlie, shop, unjudged, ideal):
    prod = shop.result_lists.get(name="prod")
    tent = shop.queries.get(text="tent")
    spec = project_spec(shop).with_changes(k=4, unjudged=unjudged, ideal=ideal)
    params = {"k": 4, "unjudged": unjudged, "ideal": ideal}

    body = charlie.get(f"/api/result-lists/{prod.pk}/queries/{tent.pk}/working/", params).json()

    grade = metrics_oracle.consensus(shop, spec, dt.datetime.now(dt.UTC))
    hits = list(prod.hits.filter(query=tent).order_by("rank").select_related("document"))
    ranked = [grade.get((tent.pk, hit.document_id)) for hit in hits]
    judged = [g for (q, _), g in grade.items() if q == tent.pk]
    ideal_list = ideal_grades(ideal, ranked_grades=ranked, judged_grades=judged)
    expected = ndcg(ranked, ideal_list, k=4, unjudged=unjudged)
    assert body["ndcg"] == pytest.approx(expected.ndcg, abs=1e-12)
    assert len(body["rows"]) == len(expected.rows)
    for row, want in zip(body["rows"], expected.rows, strict=True):
        assert row["rank"] == want.rank and row["grade"] == want.grade
        assert (row["gain"], row["discount"], row["dcg"], row["idcg"], row["ndcg"]) == (
            pytest.approx((want.gain, want.discount, want.dcg, want.idcg, want.ndcg_at), abs=1e-12)
        )
    shown = [h for h in hits if unjudged == "zero" or (tent.pk, h.document_id) in grade]
    assert [row["document"]["external_id"] for row in body["rows"]] == [
        hit.document.external_id for hit in shown[:4]
    ]


def test_the_working_as_of_a_past_moment_shows_the_grades_of_then(charlie, shop):
    prod = shop.result_lists.get(name="prod")
    tent = shop.queries.get(text="tent")
    url = f"/api/result-lists/{prod.pk}/queries/{tent.pk}/working/"

    then = charlie.get(url, {"as_of": "2026-11-03T00:00:00Z"}).json()
    now = charlie.get(url).json()

    # Alice lowered D2 (rank 2) from 1 to 0 on 4 November; bob's 3 stands.
    assert (then["rows"][1]["grade"], now["rows"][1]["grade"]) == (2.0, 1.5)
    assert then["as_of"] == "2026-11-03T00:00:00Z"
