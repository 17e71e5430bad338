"""Dashboard pages: who may open them, what they show, and how they refuse bad parameters.

Who may see what: charlie (analyst) opens every dashboard; alice (rater) and dave
(no role) get 403; anonymous visitors are sent to the login page.
"""

import datetime as dt
import re
from html import unescape

import pytest
from django.test import Client
from django.urls import reverse

from judgements.models import QueuePair, QueueRequest
from metrics import history, refresh
from metrics.models import MetricPoint
from metrics.registry import MetricSpec
from tests.factories import (
    DocumentFactory,
    HitFactory,
    JudgementFactory,
    ProjectFactory,
    QueryFactory,
    ResultListFactory,
)

NOV = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


@pytest.fixture
def shop(db, rater, other_rater):
    """Two result lists over two queries; alice and bob disagree on one pair by 3 grades."""
    project = ProjectFactory(name="Shop", slug="shop", judges_per_pair=2)
    old = ResultListFactory(project=project, name="old", captured_at=NOV)
    new = ResultListFactory(project=project, name="new", captured_at=NOV + dt.timedelta(days=2))
    docs = [DocumentFactory(project=project, external_id=f"SKU-{n}") for n in range(4)]
    for text in ("rain jacket", "tent"):
        query = QueryFactory(project=project, text=text)
        for rank, doc in enumerate(docs, start=1):
            HitFactory(result_list=old, query=query, document=doc, rank=rank)
            HitFactory(result_list=new, query=query, document=docs[-rank], rank=rank)
        for doc, alice, bob in zip(docs, (0, 1, 2, 3), (3, 1, 2, 2), strict=True):
            for user, grade in ((rater, alice), (other_rater, bob)):
                JudgementFactory(
                    query=query, document=doc, rater=user, grade=grade, created_at=NOV
                )
    return project


def pages(project) -> dict[str, str]:
    new = project.result_lists.get(name="new")
    query = project.queries.get(text="tent")
    return {
        "index": reverse("metrics:index"),
        "overview": reverse("metrics:overview", args=[project.slug]),
        "queries": reverse("metrics:queries", args=[project.slug, new.pk]),
        "query": reverse("metrics:query", args=[project.slug, new.pk, query.pk]),
        "compare": reverse("metrics:compare", args=[project.slug]),
        "raters": reverse("metrics:raters", args=[project.slug]),
    }


PAGES = ["index", "overview", "queries", "query", "compare", "raters"]


def text_of(response) -> str:
    """The page's visible text, in one line, without tags and scripts."""
    html = response.content.decode()
    html = re.sub(r"<(script|select).*?</\1>", " ", html, flags=re.S)
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)))


@pytest.mark.parametrize("page", PAGES)
def test_an_analyst_opens_every_dashboard(client, analyst, shop, page):
    client.force_login(analyst)

    response = client.get(pages(shop)[page])

    assert response.status_code == 200


@pytest.mark.parametrize("page", PAGES)
def test_a_rater_gets_403_on_every_dashboard(client, rater, shop, page):
    client.force_login(rater)

    response = client.get(pages(shop)[page])

    assert response.status_code == 403
    assert b"rain jacket" not in response.content


@pytest.mark.parametrize("page", PAGES)
def test_a_user_without_a_role_gets_403_on_every_dashboard(client, outsider, shop, page):
    client.force_login(outsider)

    assert client.get(pages(shop)[page]).status_code == 403


@pytest.mark.parametrize("page", PAGES)
def test_anonymous_visitors_are_sent_to_login_from_every_dashboard(client, shop, page):
    response = client.get(pages(shop)[page])

    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


@pytest.mark.parametrize("page", ["overview", "queries", "query", "compare"])
def test_every_metric_page_prints_the_parameters_beside_its_numbers(client, analyst, shop, page):
    client.force_login(analyst)

    text = text_of(client.get(pages(shop)[page]))

    assert (
        "NDCG@10 · gain exponential (2^rel \N{MINUS SIGN} 1) · discount log2(rank + 1) · "
        "ideal: all judged documents · ideal depth cut at k · unjudged hits count as grade 0 · "
        "consensus mean · negative grades count as 0 (trec_eval) · "
        "mean over judged queries (trec_eval) · weight=queries: each query once · "
        "grades: human grades · as of "
    ) in text


@pytest.mark.parametrize("page", ["overview", "queries", "query", "compare"])
def test_judged_only_ndcg_says_so_beside_its_numbers_and_in_the_form(client, analyst, shop, page):
    client.force_login(analyst)

    response = client.get(pages(shop)[page], {"unjudged": "remove"})

    assert response.status_code == 200
    text = text_of(response)
    assert "judged-only NDCG@10 · gain exponential" in text
    assert "ideal depth cut at k · unjudged hits removed: judged only (trec_eval -J) · " in text
    assert '<option value="remove" selected>removed: judged only (trec_eval -J)</option>' in (
        response.content.decode()
    )


def test_the_raters_page_prints_its_parameters(client, analyst, shop):
    client.force_login(analyst)

    text = text_of(client.get(pages(shop)["raters"]))

    assert "Krippendorff's alpha, ordinal metric · consensus mean · as of " in text


def test_changing_k_changes_the_numbers_and_their_label(client, analyst, shop):
    client.force_login(analyst)
    url = pages(shop)["overview"]

    at_ten = client.get(url)
    at_one = client.get(url, {"k": 1, "gain": "linear"})

    assert "NDCG@1 · gain linear (rel)" in text_of(at_one)
    means = [page.context["data"].summaries[0].mean for page in (at_ten, at_one)]
    assert means[0] != means[1]


def test_the_overview_as_of_a_moment_shows_the_values_of_then(client, analyst, shop):
    client.force_login(analyst)
    url = pages(shop)["overview"]
    JudgementFactory(
        query=shop.queries.get(text="tent"),
        document=shop.documents.get(external_id="SKU-3"),
        grade=0,
        created_at=NOV + dt.timedelta(days=5),
    )

    then = client.get(url, {"as_of": "2026-11-03T12:00"})
    now = client.get(url)

    assert "as of 2026-11-03 12:00:00 UTC" in text_of(then)
    means = [page.context["data"].summaries[1].mean for page in (then, now)]
    assert means[0] != means[1]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"k": "0"}, "Ensure this value is greater than or equal to 1."),
        ({"k": "ten"}, "Enter a whole number."),
        ({"gain": "cubic"}, "Select a valid choice. cubic is not one of the available choices."),
        ({"consensus": "loudest"}, "Select a valid choice."),
        ({"negative": "subtract"}, "Negative grades: Select a valid choice."),
        ({"mean_over": "some"}, "Mean over: Select a valid choice."),
        ({"unjudged": "judged_only"}, "Unjudged: Select a valid choice."),
        ({"as_of": "last tuesday"}, "Enter a valid date/time."),
    ],
)
def test_invalid_parameters_give_a_message_and_a_400_not_a_500(
    client, analyst, shop, params, message
):
    client.force_login(analyst)

    for page in ("overview", "queries", "query", "compare"):
        response = client.get(pages(shop)[page], params)
        assert response.status_code == 400
        assert message in text_of(response)


@pytest.mark.parametrize(
    ("as_of", "status", "shown"),
    [
        # Python reads offsets up to 23:59 that PostgreSQL refuses: taken to UTC.
        ("2026-11-02T12:00:00+23:00", 200, "2026-11-01 13:00:00"),
        ("0001-01-01T00:00:00+01:00", 400, "This moment is out of range."),
    ],
)
def test_a_moment_with_any_offset_is_read_in_utc_or_refused(
    client, analyst, shop, as_of, status, shown
):
    client.force_login(analyst)

    for page in ("overview", "queries", "query", "compare"):
        response = client.get(pages(shop)[page], {"as_of": as_of})
        assert response.status_code == status, page
        assert shown in text_of(response)


def test_comparing_a_list_with_itself_is_refused_with_a_message(client, analyst, shop):
    client.force_login(analyst)
    new = shop.result_lists.get(name="new")

    response = client.get(pages(shop)["compare"], {"a": new.pk, "b": new.pk})

    assert response.status_code == 400
    assert "Choose two different result lists to compare." in text_of(response)


def test_a_result_list_of_another_project_is_not_found(client, analyst, shop):
    client.force_login(analyst)
    stranger = ResultListFactory(project=ProjectFactory(), name="elsewhere")

    response = client.get(reverse("metrics:queries", args=[shop.slug, stranger.pk]))

    assert response.status_code == 404


def test_a_query_of_another_project_is_not_found(client, analyst, shop):
    client.force_login(analyst)
    new = shop.result_lists.get(name="new")
    stranger = QueryFactory(project=ProjectFactory(), text="elsewhere")

    response = client.get(reverse("metrics:query", args=[shop.slug, new.pk, stranger.pk]))

    assert response.status_code == 404


def test_the_returned_ideal_says_that_missing_documents_are_not_penalised(client, analyst, shop):
    client.force_login(analyst)

    text = text_of(client.get(pages(shop)["overview"], {"ideal": "returned"}))

    assert "relevant documents the engine did not return are not penalised" in text


def test_the_judged_ideal_does_not_claim_that(client, analyst, shop):
    client.force_login(analyst)

    assert "not penalised" not in text_of(client.get(pages(shop)["overview"]))


def test_the_query_table_sorts_and_filters_on_the_server(client, analyst, shop):
    client.force_login(analyst)
    url = pages(shop)["queries"]

    by_text = client.get(url, {"sort": "-query"}).context["data"].rows
    filtered = client.get(url, {"q": "JACK"}).context["data"].rows

    assert [row.text for row in by_text] == ["tent", "rain jacket"]
    assert [row.text for row in filtered] == ["rain jacket"]


def test_an_unknown_sort_column_is_refused(client, analyst, shop):
    client.force_login(analyst)

    response = client.get(pages(shop)["queries"], {"sort": "password"})

    assert response.status_code == 400


def test_sort_links_keep_the_parameters_and_reverse_on_a_second_click(client, analyst, shop):
    client.force_login(analyst)

    html = client.get(pages(shop)["queries"], {"k": 3, "sort": "ndcg"}).content.decode()

    assert 'href="?k=3&amp;sort=-ndcg"' in html
    assert 'href="?k=3&amp;sort=dcg"' in html


def test_the_query_page_shows_every_raters_grade_and_the_working(client, analyst, shop):
    client.force_login(analyst)

    response = client.get(pages(shop)["query"], {"k": 4, "gain": "linear", "discount": "rank"})

    data = response.context["data"]
    assert data.raters == ["alice", "bob"]
    # "new" ranks SKU-3 first: alice 3, bob 2, consensus 2.5.
    assert data.hits[0].rater_grades == [3, 2] and data.hits[0].consensus == 2.5
    text = text_of(response)
    columns = "Rank Document Grade Gain Discount Discounted gain DCG Ideal grade Ideal gain IDCG"
    assert columns in text
    assert f"NDCG@4 = DCG / IDCG {data.result.dcg:.4f}" in text


def test_the_compare_page_shows_the_test_and_the_interval(client, analyst, shop):
    client.force_login(analyst)

    response = client.get(pages(shop)["compare"])

    data = response.context["data"]
    assert data.a.result_list.name == "old" and data.b.result_list.name == "new"
    text = text_of(response)
    assert f"p-value {data.test.p_value:.4f}" in text
    assert "two-sided paired randomisation test" in text


def test_the_raters_page_lists_pairs_graded_far_apart_with_a_button_to_send_them_back(
    client, analyst, shop
):
    client.force_login(analyst)

    response = client.get(pages(shop)["raters"])

    assert response.context["data"].disputed_total == 2
    assert "is not available yet" not in text_of(response)
    assert text_of(response).count("Send back for one more grade") == 2
    assert "Send all 2 disputed pairs back for one more grade" in text_of(response)
    forms = re.findall(
        r'<form method="post" action="([^"]+)">\s*<input[^>]+csrfmiddlewaretoken',
        response.content.decode(),
    )
    assert forms == [request_grades_url(shop)] * 3


def request_grades_url(project) -> str:
    return reverse("metrics:raters_request_grades", args=[project.slug])


def disputed_pair(project) -> dict:
    document = project.documents.get(external_id="SKU-0")
    return {"query": project.queries.get(text="tent").pk, "document": document.pk}


def test_an_analyst_sends_one_pair_back_and_the_page_says_so(client, analyst, shop):
    client.force_login(analyst)

    response = client.post(request_grades_url(shop), disputed_pair(shop), follow=True)

    assert response.redirect_chain == [(pages(shop)["raters"], 302)]
    text = text_of(response)
    assert "1 pair sent back for one more grade." in text
    assert "Needs 1 more grade" in text
    assert text.count("Send back for one more grade") == 1
    pair = QueuePair.objects.get(
        **{f"{key}_id": value for key, value in disputed_pair(shop).items()}
    )
    assert (pair.grades, pair.wanted, pair.needed) == (2, 3, 1)


def test_a_double_click_sends_the_pair_back_once(client, analyst, shop):
    client.force_login(analyst)
    client.post(request_grades_url(shop), disputed_pair(shop))

    response = client.post(request_grades_url(shop), disputed_pair(shop), follow=True)

    assert "0 pairs sent back for one more grade; 1 already waiting for it." in text_of(response)
    assert QueueRequest.objects.count() == 1


def test_an_analyst_sends_every_disputed_pair_back(client, analyst, shop):
    client.force_login(analyst)

    response = client.post(request_grades_url(shop), {"all": "on"}, follow=True)

    assert "2 pairs sent back for one more grade." in text_of(response)
    assert set(QueueRequest.objects.values_list("requested_by__username", "wanted")) == {
        ("charlie", 3)
    }
    assert QueueRequest.objects.count() == 2


@pytest.mark.parametrize(
    "data", [{}, {"query": "x", "document": "1"}, {"all": "on", "query": "1", "document": "2"}]
)
def test_a_bad_request_sends_nothing_back_and_says_why(client, analyst, shop, data):
    client.force_login(analyst)

    response = client.post(request_grades_url(shop), data, follow=True)

    assert response.status_code == 200
    assert "Nothing was sent back:" in text_of(response)
    assert not QueueRequest.objects.exists()


def test_raters_and_visitors_cannot_send_pairs_back(client, rater, shop):
    response = client.post(request_grades_url(shop), disputed_pair(shop))
    assert response.status_code == 302 and "/accounts/login/" in response.url
    client.force_login(rater)
    assert client.post(request_grades_url(shop), disputed_pair(shop)).status_code == 403
    assert not QueueRequest.objects.exists()


def test_sending_back_needs_a_post_with_the_csrf_token(analyst, shop):
    client = Client(enforce_csrf_checks=True)
    client.force_login(analyst)
    assert client.get(request_grades_url(shop)).status_code == 405
    assert client.post(request_grades_url(shop), disputed_pair(shop)).status_code == 403
    assert not QueueRequest.objects.exists()


def test_a_past_moment_shows_no_button(client, analyst, shop):
    client.force_login(analyst)
    response = client.get(pages(shop)["raters"], {"as_of": "2026-11-05T00:00"})
    assert response.status_code == 200
    assert "Send back for one more grade" not in text_of(response)


def test_chart_data_is_passed_as_json_and_scripts_come_from_this_site(client, analyst, shop):
    client.force_login(analyst)

    for page in ("overview", "query", "compare", "raters"):
        html = client.get(pages(shop)[page]).content.decode()
        assert re.search(r'<script id="[\w-]+-data" type="application/json">', html)
        sources = re.findall(r'<script[^>]* src="([^"]+)"', html)
        assert sources and all(source.startswith("/static/") for source in sources)
        assert "/static/vendor/chartjs/chart.umd.js" in sources


def test_the_dashboards_link_shows_for_analysts_only(client, analyst, rater, shop):
    client.force_login(analyst)
    assert reverse("metrics:index") in client.get("/").content.decode()

    client.force_login(rater)
    assert reverse("metrics:index") not in client.get("/").content.decode()


@pytest.mark.parametrize("page", PAGES)
def test_every_dashboard_opens_before_anything_is_graded(client, analyst, page):
    project = ProjectFactory(name="New", slug="new-project")
    result_list = ResultListFactory(project=project, name="new", captured_at=NOV)
    for text in ("rain jacket", "tent"):
        query = QueryFactory(project=project, text=text)
        HitFactory(result_list=result_list, query=query, rank=1, document__project=project)
    ResultListFactory(project=project, name="old", captured_at=NOV - dt.timedelta(days=1))
    client.force_login(analyst)

    response = client.get(pages(project)[page])

    assert response.status_code == 200


def test_every_metric_page_offers_every_parameter_with_the_projects_defaults(
    client, analyst, shop
):
    shop.metric_negative, shop.metric_mean_over = "penalise", "all"
    shop.save()
    client.force_login(analyst)

    for page in ("overview", "queries", "query", "compare"):
        form = client.get(pages(shop)[page]).context["form"]
        for name, values in MetricSpec._choices().items():
            assert [value for value, _ in form.fields[name].choices] == list(values)
        assert (form["negative"].value(), form["mean_over"].value()) == ("penalise", "all")


def test_the_mean_over_all_queries_counts_the_unjudged_query(client, analyst, shop):
    new = shop.result_lists.get(name="new")
    HitFactory(result_list=new, query=QueryFactory(project=shop, text="map"), rank=1)
    client.force_login(analyst)
    url = pages(shop)["overview"]

    judged = client.get(url).context["data"].summaries[1]
    every = client.get(url, {"mean_over": "all"}).context["data"].summaries[1]

    assert (judged.queries, every.queries) == (2, 3)
    assert (judged.queries_judged, judged.queries_returned) == (2, 3)
    assert every.mean == pytest.approx(judged.mean * 2 / 3, abs=1e-12)
    assert "mean over all queries, unjudged as 0 (trec_eval -c)" in text_of(
        client.get(url, {"mean_over": "all"})
    )


def test_the_overview_says_what_moved_the_number(client, analyst, shop):
    client.force_login(analyst)
    # A page without stored points draws no over-time chart, and needs no caption.
    assert "Early points rest on fewer queries" not in text_of(client.get(pages(shop)["overview"]))
    history.metrics_rebuild(project=shop, since=NOV, until=NOV + dt.timedelta(days=3))

    text = text_of(client.get(pages(shop)["overview"]))

    assert "Because grades arrived:" in text and "Because the ranking changed:" in text
    assert (
        "Reading aid: “because grades arrived” keeps each ranking fixed while grades arrive"
        in text
    )
    assert "Early points rest on fewer queries" in text


def test_revisions_show_on_the_query_page_and_per_week_on_the_overview(client, analyst, shop):
    tent = shop.queries.get(text="tent")
    sku = shop.documents.get(external_id="SKU-0")
    first = tent.judgements.filter(document=sku).order_by("created_at").first()
    JudgementFactory(
        query=tent,
        document=sku,
        rater=first.rater,
        grade=first.grade + 1,
        note="The description says waterproof.",
        created_at=NOV + dt.timedelta(days=3),
    )
    # As every write of grades does: the refresh recounts the query later.
    refresh.queries_mark_stale(query_ids=[tent.pk])
    client.force_login(analyst)

    query_page = text_of(client.get(pages(shop)["query"]))
    overview = client.get(pages(shop)["overview"])

    assert f"2026-11-04 00:00 Title of SKU-0 SKU-0 {first.rater.username} {first.grade} " in (
        query_page
    )
    assert "The description says waterproof." in query_page
    assert [(w.week, w.revisions) for w in overview.context["data"].revisions] == [
        (dt.date(2026, 11, 2), 1)
    ]
    assert "2026-11-02 1" in text_of(overview)


def test_a_project_with_no_revision_says_so(client, analyst, shop):
    client.force_login(analyst)

    assert "No rater has revised a grade yet." in text_of(client.get(pages(shop)["overview"]))
    assert "No rater has revised an answer for this query." in text_of(
        client.get(pages(shop)["query"])
    )


def test_negative_grades_penalise_on_the_query_page_and_in_the_stored_series(client, analyst):
    # One query, the harmful document at rank 1: the worked example of
    # tests/metrics/core/test_negative.py (linear gain: 0.4619696844706532).
    scale = [{"value": v, "label": str(v)} for v in (-2, -1, 0, 1, 2, 3)]
    project = ProjectFactory(slug="spam", scale=scale, metric_gain="linear")
    project.metric_negative = "penalise"
    project.save()
    result_list = ResultListFactory(project=project, name="run", captured_at=NOV)
    query = QueryFactory(project=project, text="tent")
    for rank, (name, grade) in enumerate([("C", -2), ("A", 3), ("B", 2), ("D", 0)], start=1):
        document = DocumentFactory(project=project, external_id=name)
        HitFactory(result_list=result_list, query=query, document=document, rank=rank)
        JudgementFactory(query=query, document=document, grade=grade, created_at=NOV)
    history.metrics_rebuild(project=project, since=NOV, until=NOV, every="day")
    client.force_login(analyst)

    response = client.get(reverse("metrics:query", args=[project.slug, result_list.pk, query.pk]))

    text = text_of(response)
    assert "negative grades penalise (min-max, worst to best ordering)" in text
    assert "NDCG@10 = (DCG \N{MINUS SIGN} worst DCG) / (IDCG \N{MINUS SIGN} worst DCG)" in text
    assert response.context["data"].result.ndcg == pytest.approx(0.4619696844706532, abs=1e-12)
    assert response.context["data"].result.min_dcg == -2.0
    stored = MetricPoint.objects.get(query=query, as_of=NOV)
    assert stored.metric.endswith(" penalise judged")
    assert stored.value == pytest.approx(0.4619696844706532, abs=1e-12)


def test_the_query_table_marks_a_query_nobody_graded_as_left_out_of_the_mean(
    client, analyst, shop
):
    new = shop.result_lists.get(name="new")
    HitFactory(result_list=new, query=QueryFactory(project=shop, text="map"), rank=1)
    client.force_login(analyst)
    url = pages(shop)["queries"]

    assert "map (no grade yet: not in the mean)" in text_of(client.get(url))
    assert "map (no grade yet)" in text_of(client.get(url, {"mean_over": "all"}))
    assert "2 of the list's queries have a grade." in text_of(client.get(url))


@pytest.fixture
def spam(db):
    """A scale with harmful grades; one query, on the same grades in two result lists:
    "before" shows the harmful document C (grade -2) first, "after" moves it to rank 4."""
    scale = [{"value": v, "label": str(v)} for v in (-2, -1, 0, 1, 2, 3)]
    project = ProjectFactory(slug="spam", scale=scale, metric_k=4, metric_gain="linear")
    query = QueryFactory(project=project, text="tent")
    grades = {"A": 3, "B": 2, "C": -2, "D": 0}
    documents = {name: DocumentFactory(project=project, external_id=name) for name in grades}
    for name, grade in grades.items():
        JudgementFactory(query=query, document=documents[name], grade=grade, created_at=NOV)
    for day, (name, order) in enumerate([("before", "CABD"), ("after", "ABDC")]):
        captured = NOV + dt.timedelta(days=day)
        result_list = ResultListFactory(project=project, name=name, captured_at=captured)
        for rank, document in enumerate(order, start=1):
            HitFactory(
                result_list=result_list, query=query, document=documents[document], rank=rank
            )
    return project


def test_negative_grades_penalise_on_the_overview_and_the_comparison_when_asked(
    client, analyst, spam
):
    # The worked examples of tests/metrics/core/test_negative.py (NDCG@4, linear gain):
    # with the zero rule C counts as 0, so "after" is perfect and "before" loses only
    # the places C pushes A and B down; penalised, C at rank 1 costs far more.
    client.force_login(analyst)
    overview, compare = pages_of(spam)

    zero = client.get(overview).context["data"].summaries
    penalised = client.get(overview, {"negative": "penalise"})

    assert [s.mean for s in zero] == pytest.approx([0.6787622294601761, 1.0], abs=1e-12)
    means = [s.mean for s in penalised.context["data"].summaries]
    assert means == pytest.approx([0.4619696844706532, 0.8624445158559948], abs=1e-12)
    assert "negative grades penalise (min-max, worst to best ordering)" in text_of(penalised)
    # Penalising is not the project's stored metric: it is computed from the grades.
    assert penalised.context["data"].source == "packed"
    both = {"a": spam.result_lists.get(name="before").pk}
    both["b"] = spam.result_lists.get(name="after").pk
    difference = client.get(compare, {**both, "negative": "penalise"}).context["data"]
    assert (difference.mean_a, difference.mean_b) == pytest.approx(means, abs=1e-12)


def test_a_project_that_penalises_stores_and_draws_the_penalised_series(client, analyst, spam):
    spam.metric_negative = "penalise"
    spam.save()
    history.metrics_rebuild(project=spam, since=NOV, until=NOV + dt.timedelta(days=1))
    client.force_login(analyst)

    response = client.get(pages_of(spam)[0])

    data = response.context["data"]
    assert data.source == "stored"
    means = [summary.mean for summary in data.summaries]
    assert means == pytest.approx([0.4619696844706532, 0.8624445158559948], abs=1e-12)
    drawn = {line["label"]: line["points"] for line in data.chart["series"]}
    assert [point[1] for point in drawn["before"]] == pytest.approx([0.4619696844706532] * 2)
    assert [point[1] for point in drawn["after"]] == pytest.approx([0.8624445158559948])
    assert data.series_spec.name == "ndcg@4 linear log2 judged cut zero mean penalise judged"


def pages_of(project) -> tuple[str, str]:
    """The overview and the comparison of ``project``."""
    return (
        reverse("metrics:overview", args=[project.slug]),
        reverse("metrics:compare", args=[project.slug]),
    )


def test_an_empty_dashboard_points_to_the_uploads_page_not_a_command(client, analyst, db):
    """A list with hits and no grade yet: the overview's empty chart and points say what
    to do next with a link to the project's Uploads page, never a management command."""
    project = ProjectFactory(name="New", slug="new")
    result_list = ResultListFactory(project=project, name="first", captured_at=NOV)
    client.force_login(analyst)
    uploads = reverse("judgements:uploads", args=[project.slug]) + "#judgements"

    page = client.get(reverse("metrics:overview", args=[project.slug])).content.decode()

    assert "manage.py" not in page
    assert f'href="{uploads}"' in page
    assert "added as grades arrive" in page
    assert result_list.name in page
