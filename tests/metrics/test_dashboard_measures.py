"""P@k, AP@k, RR@k and ERR@k beside NDCG on the dashboards and in their CSV files, and
queries named by the team's own ids (issue 42, points 2 and 4).

Who may see what: charlie (analyst) opens the dashboards and their CSV files.
"""

import csv
import datetime as dt
import io
import re

import pytest
from django.urls import reverse

from tests.factories import (
    DocumentFactory,
    HitFactory,
    JudgementFactory,
    ProjectFactory,
    QueryFactory,
    ResultListFactory,
)
from tests.metrics.test_views import text_of

NOV = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


# Every measure beside NDCG, ticked (the pages show none unless chosen).
EVERY = ["precision", "average_precision", "reciprocal_rank", "err"]


@pytest.fixture
def shop(db, rater):
    """Two lists over two queries with the team's ids 28 and 7; "old" ranks the relevant
    documents first for "tent" and last for "rain jacket", "new" the other way round."""
    project = ProjectFactory(name="Shop", slug="shop")
    old = ResultListFactory(project=project, name="old", captured_at=NOV)
    new = ResultListFactory(project=project, name="new", captured_at=NOV + dt.timedelta(days=1))
    docs = [DocumentFactory(project=project, external_id=f"SKU-{n}") for n in range(4)]
    for text, qid in (("rain jacket for a long walk in the hills " * 4, "28"), ("tent", "7")):
        query = QueryFactory(project=project, text=text.strip(), external_id=qid)
        for rank, doc in enumerate(docs, start=1):
            HitFactory(result_list=old, query=query, document=doc, rank=rank)
            HitFactory(result_list=new, query=query, document=docs[-rank], rank=rank)
        for doc, grade in zip(docs, (3, 0, 0, 1) if qid == "7" else (0, 0, 2, 3), strict=True):
            JudgementFactory(query=query, document=doc, rater=rater, grade=grade, created_at=NOV)
    return project


def api_means(api_client, analyst, result_list, **params) -> dict:
    api_client.force_authenticate(analyst)
    url = reverse("api:result-list-metrics", args=[result_list.pk])
    return api_client.get(url, params).json()["means"]


def cells(html: str, name: str) -> list[str]:
    return re.findall(rf'<td class="num" data-measure="{name}">([^<]*)</td>', html)


def test_the_overview_shows_the_apis_means_of_every_measure_named_with_k(
    client, analyst, api_client, shop
):
    client.force_login(analyst)

    overview = reverse("metrics:overview", args=[shop.slug])
    response = client.get(overview, {"k": 3, "measures": EVERY})

    html = response.content.decode()
    for label in ("Mean P@3", "Mean AP@3", "Mean RR@3", "Mean ERR@3"):
        assert label in text_of(response)
    for position, result_list in enumerate(shop.result_lists.order_by("captured_at")):
        means = api_means(api_client, analyst, result_list, k=3)
        for name in ("precision", "average_precision", "reciprocal_rank", "err"):
            assert cells(html, name)[position] == f"{means[name]:.4f}"
    assert "relevant from consensus grade 1" in text_of(response)


def test_a_page_shows_only_the_measures_chosen_and_none_when_none_is(client, analyst, shop):
    client.force_login(analyst)
    url = reverse("metrics:overview", args=[shop.slug])

    chosen = client.get(f"{url}?measures_set=1&measures=err")
    none = client.get(f"{url}?measures_set=1")

    assert "Mean ERR@10" in text_of(chosen) and "Mean P@10" not in text_of(chosen)
    assert not cells(none.content.decode(), "err") and "Mean ERR@10" not in text_of(none)
    assert client.get(f"{url}?measures_set=1&measures=ndcg").status_code == 400


def test_judged_only_measures_say_so(client, analyst, shop):
    client.force_login(analyst)

    response = client.get(
        reverse("metrics:overview", args=[shop.slug]), {"unjudged": "remove", "measures": EVERY}
    )

    assert "Mean judged-only RR@10" in text_of(response)


def test_the_query_table_shows_each_querys_measures_and_sorts_by_them(
    client, analyst, api_client, shop
):
    new = shop.result_lists.get(name="new")
    client.force_login(analyst)
    url = reverse("metrics:queries", args=[shop.slug, new.pk])

    response = client.get(url, {"sort": "-reciprocal_rank", "measures": EVERY})

    api_client.force_authenticate(analyst)
    api = api_client.get(reverse("api:result-list-metrics", args=[new.pk])).json()["results"]
    by_rr = sorted(api, key=lambda row: -row["reciprocal_rank"])
    assert cells(response.content.decode(), "reciprocal_rank") == [
        f"{row['reciprocal_rank']:.4f}" for row in by_rr
    ]
    assert "AP@10" in text_of(response) and "ERR@10" in text_of(response)


def test_the_query_detail_shows_the_measures_of_the_query(client, analyst, api_client, shop):
    new = shop.result_lists.get(name="new")
    tent = shop.queries.get(text="tent")
    client.force_login(analyst)

    query = reverse("metrics:query", args=[shop.slug, new.pk, tent.pk])
    response = client.get(query, {"measures": EVERY})

    api_client.force_authenticate(analyst)
    api = api_client.get(reverse("api:result-list-metrics", args=[new.pk])).json()["results"]
    [row] = [row for row in api if row["id"] == tent.pk]
    text = text_of(response)
    for label, name in (("P@10", "precision"), ("AP@10", "average_precision"), ("ERR@10", "err")):
        assert f"{label} {row[name]:.4f}" in text
    assert "Query 7:" in text


def test_compare_shows_the_means_and_each_querys_change_of_every_measure(
    client, analyst, api_client, shop
):
    old, new = shop.result_lists.order_by("captured_at")
    client.force_login(analyst)

    response = client.get(reverse("metrics:compare", args=[shop.slug]), {"measures": EVERY})

    text = text_of(response)
    for name, label in (("average_precision", "AP@10"), ("reciprocal_rank", "RR@10")):
        mean_a = api_means(api_client, analyst, old)[name]
        mean_b = api_means(api_client, analyst, new)[name]
        assert f"{label} {mean_a:.4f} {mean_b:.4f}" in text
    assert "B \N{MINUS SIGN} A ERR@10" in text
    assert len(re.findall('data-testid="measure-delta"', response.content.decode())) == 8


def test_the_query_tables_csv_has_every_query_every_measure_and_the_qid(
    client, analyst, api_client, shop
):
    new = shop.result_lists.get(name="new")
    client.force_login(analyst)

    # The page's own choice of measures does not narrow the CSV file.
    url = reverse("metrics:queries_export", args=[shop.slug, new.pk])
    response = client.get(url, {"measures_set": "1", "k": "3"})

    assert response["Content-Type"] == "text/csv"
    assert f"{shop.slug}-{new.pk}-queries.csv" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    api_client.force_authenticate(analyst)
    metrics = reverse("api:result-list-metrics", args=[new.pk])
    api = {row["id"]: row for row in api_client.get(metrics, {"k": 3}).json()["results"]}
    assert sorted(row["external_id"] for row in rows) == ["28", "7"]
    for row in rows:
        expected = api[int(row["query_id"])]
        for name in ("ndcg", "precision", "average_precision", "reciprocal_rank", "err"):
            assert float(row[name]) == pytest.approx(expected[name])
        assert row["metric"].startswith("ndcg@3 ")


def test_the_comparisons_csv_has_both_lists_measures(client, analyst, api_client, shop):
    old, new = shop.result_lists.order_by("captured_at")
    client.force_login(analyst)

    response = client.get(reverse("metrics:compare_export", args=[shop.slug]))

    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    api_client.force_authenticate(analyst)
    results = {
        side: {row["id"]: row for row in api_client.get(
            reverse("api:result-list-metrics", args=[result_list.pk])).json()["results"]}
        for side, result_list in (("a", old), ("b", new))
    }  # fmt: skip
    assert len(rows) == 2
    for row in rows:
        for side in "ab":
            expected = results[side][int(row["query_id"])]
            assert float(row[f"err_{side}"]) == pytest.approx(expected["err"])
            assert float(row[f"ndcg_{side}"]) == pytest.approx(expected["ndcg"])
        assert float(row["delta"]) == pytest.approx(float(row["ndcg_b"]) - float(row["ndcg_a"]))


def test_bad_parameters_of_a_csv_are_a_400_not_a_500(client, analyst, shop):
    new = shop.result_lists.get(name="new")
    client.force_login(analyst)

    queries = client.get(reverse("metrics:queries_export", args=[shop.slug, new.pk]), {"k": 0})
    compare = client.get(reverse("metrics:compare_export", args=[shop.slug]), {"a": "x"})

    assert queries.status_code == compare.status_code == 400


def test_a_query_is_found_by_its_id_and_its_long_text_is_cut_with_the_whole_on_hover(
    client, analyst, shop
):
    new = shop.result_lists.get(name="new")
    client.force_login(analyst)
    url = reverse("metrics:queries", args=[shop.slug, new.pk])

    found = client.get(url, {"q": "28"})

    html = found.content.decode()
    jacket = shop.queries.get(external_id="28").text
    assert re.findall(r'data-testid="qid">([^<]*)<', html) == ["28"]
    assert f'class="query-text" title="{jacket}"' in html
    assert "tent" not in text_of(found)
    # A number inside another id or text finds nothing: the id is matched whole.
    assert "No query matches." in text_of(client.get(url, {"q": "2"}))


def test_compare_names_each_query_by_its_id(client, analyst, shop):
    client.force_login(analyst)

    response = client.get(reverse("metrics:compare", args=[shop.slug]))

    ids = re.findall(r'data-testid="qid">([^<]*)<', response.content.decode())
    assert sorted(set(ids)) == ["28", "7"]


def test_a_bare_dashboard_url_shows_ndcg_alone(client, analyst, shop):
    """The other measures read every hit's grade: shown when chosen, not by default."""
    client.force_login(analyst)

    response = client.get(reverse("metrics:overview", args=[shop.slug]))

    assert "Mean NDCG@10" in text_of(response) or "NDCG@10" in text_of(response)
    assert "Mean P@10" not in text_of(response) and "Mean ERR@10" not in text_of(response)
    assert 'name="measures"' in response.content.decode()  # still choosable
