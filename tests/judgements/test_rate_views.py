import datetime as dt

import pytest
import time_machine
from django.test import Client
from django.urls import reverse

from judgements.models import Judgement
from tests.factories import (
    DocumentFactory,
    HitFactory,
    JudgementFactory,
    ProjectFactory,
    QueryFactory,
    ResultListFactory,
)

# alice (rater) grades the "outdoor" project's pool; bob (rater) grades it too, and
# neither sees the other's answers. charlie (analyst) may also use the bulk and raters
# pages; dave (no role) and anonymous visitors may use none of them.


@pytest.fixture
def rate_url(project):
    return reverse("judgements:rate", args=[project.slug])


@pytest.fixture
def answer_url(project):
    return reverse("judgements:rate_answer", args=[project.slug])


@pytest.fixture
def alice(client, rater):
    client.force_login(rater)
    return client


def first_pair(query):
    return query.hits.get(rank=1).document


def post_answer(client, url, query, document, answer="2", **extra):
    data = {"query": query.pk, "document": document.pk, "answer": answer, **extra}
    return client.post(url, data, follow=True)


def test_anonymous_visitors_are_sent_to_login(client, rate_url):
    response = client.get(rate_url)
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


def test_a_user_without_a_role_gets_403(client, outsider, rate_url):
    client.force_login(outsider)
    assert client.get(rate_url).status_code == 403


def test_the_page_shows_the_query_and_the_hit_as_a_searcher_sees_it(alice, rate_url, project):
    query = QueryFactory(project=project, text="tent", description="Two people, light.")
    document = DocumentFactory(
        project=project,
        title="Featherlite 2",
        url="https://shop.example.com/p/featherlite-2",
        snippet="A light tent.",
        image_url="https://shop.example.com/img/f2.jpg",
        fields={"weight_g": 1200, "brand": "Ridgeline"},
    )
    HitFactory(result_list__project=project, query=query, document=document, rank=1)
    page = alice.get(rate_url).content.decode()
    assert "Two people, light." in page
    assert 'href="https://shop.example.com/p/featherlite-2" target="_blank" rel="noopener"' in page
    assert "A light tent." in page
    assert 'src="https://shop.example.com/img/f2.jpg"' in page
    assert "<th>weight_g</th><td>1200</td>" in page


def test_the_scale_buttons_show_labels_descriptions_and_keys(alice, rate_url, query_with_hits):
    page = alice.get(rate_url).content.decode()
    assert 'data-key="3"' in page
    assert "Exactly what the searcher wanted." in page
    assert '<kbd>?</kbd><span class="grade-label">Can\'t tell</span>' in page
    assert "<kbd>s</kbd> Skip for now" in page


def test_the_digit_keys_follow_a_projects_own_scale(client, rater):
    scale = [{"value": 1, "label": "Bad"}, {"value": 5, "label": "Good"}]
    project = ProjectFactory(scale=scale)
    HitFactory(result_list__project=project, rank=1)
    client.force_login(rater)
    page = client.get(reverse("judgements:rate", args=[project.slug])).content.decode()
    assert 'data-key="5"' in page
    assert 'data-key="3"' not in page


def test_the_guidelines_are_markdown_without_scripts(alice, rate_url, project):
    project.guidelines = (
        "**Read** this.\n\n<script>alert(1)</script><a href='javascript:x()'>x</a>"
    )
    project.save()
    page = alice.get(rate_url).content.decode()
    assert "<strong>Read</strong>" in page
    assert "alert(1)" not in page
    assert "javascript:" not in page


def test_document_fields_are_escaped(alice, rate_url, project):
    document = DocumentFactory(
        project=project, title="<script>alert(1)</script>", fields={"x": "<img onerror=a>"}
    )
    HitFactory(result_list__project=project, document=document, rank=1)
    page = alice.get(rate_url).content.decode()
    assert "<script>alert(1)" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img onerror" not in page


def test_a_rater_never_sees_other_raters_grades(alice, rate_url, other_rater, query_with_hits):
    document = first_pair(query_with_hits)
    JudgementFactory(rater=other_rater, query=query_with_hits, document=document, note="bob-x")
    page = alice.get(rate_url).content.decode()
    assert "bob-x" not in page
    assert "bob" not in page
    assert "consensus" not in page.lower()


def test_a_grade_is_recorded_and_the_next_pair_follows(alice, rater, answer_url, query_with_hits):
    document = first_pair(query_with_hits)
    response = post_answer(alice, answer_url, query_with_hits, document, "3", note="spot on")
    stored = Judgement.objects.get()
    assert (stored.rater, stored.document, stored.grade, stored.note) == (
        rater,
        document,
        3,
        "spot on",
    )
    assert response.context["pair"].document == query_with_hits.hits.get(rank=2).document
    assert response.context["progress"].done == 1


def test_cant_tell_is_recorded_without_a_grade(alice, answer_url, query_with_hits):
    post_answer(alice, answer_url, query_with_hits, first_pair(query_with_hits), "cant_tell")
    assert Judgement.objects.values_list("kind", "grade").get() == ("cant_tell", None)


def test_htmx_gets_only_the_rating_part(alice, rate_url, query_with_hits):
    response = alice.get(rate_url, headers={"HX-Request": "true"})
    assert response.templates[0].name == "judgements/partials/_rating.html"
    assert b"<html" not in response.content
    assert b'id="rating"' in response.content


def test_a_grade_outside_the_scale_is_refused(alice, answer_url, query_with_hits):
    response = post_answer(alice, answer_url, query_with_hits, first_pair(query_with_hits), "7")
    assert "7 is not on this project&#x27;s scale (0-3)" in response.content.decode()
    assert Judgement.objects.count() == 0


def test_a_pair_of_another_project_is_refused(alice, answer_url, query_with_hits):
    elsewhere = HitFactory(result_list=ResultListFactory(), rank=1)
    response = post_answer(alice, answer_url, elsewhere.query, elsewhere.document)
    assert "That query is not part of Outdoor gear" in response.content.decode()
    assert Judgement.objects.count() == 0


def test_a_document_that_is_no_hit_of_the_query_is_refused(
    alice, answer_url, project, query_with_hits
):
    stray = DocumentFactory(project=project)
    response = post_answer(alice, answer_url, query_with_hits, stray)
    assert "are not a pair of Outdoor gear" in response.content.decode()
    assert Judgement.objects.count() == 0


def test_a_double_submit_within_a_second_is_written_once(alice, answer_url, query_with_hits):
    document = first_pair(query_with_hits)
    with time_machine.travel(dt.datetime(2026, 11, 20, 9, tzinfo=dt.UTC), tick=False) as clock:
        post_answer(alice, answer_url, query_with_hits, document, "2")
        clock.shift(0.5)
        post_answer(alice, answer_url, query_with_hits, document, "2")
        assert Judgement.objects.count() == 1
        clock.shift(1)
        post_answer(alice, answer_url, query_with_hits, document, "2")
    assert Judgement.objects.count() == 2


def test_a_changed_answer_within_a_second_is_written(alice, answer_url, query_with_hits):
    document = first_pair(query_with_hits)
    post_answer(alice, answer_url, query_with_hits, document, "2")
    post_answer(alice, answer_url, query_with_hits, document, "3")
    assert list(Judgement.objects.order_by("id").values_list("grade", flat=True)) == [2, 3]


def test_a_post_without_csrf_token_is_refused(rater, answer_url, query_with_hits):
    client = Client(enforce_csrf_checks=True)
    client.force_login(rater)
    data = {"query": query_with_hits.pk, "document": first_pair(query_with_hits).pk, "answer": 2}
    response = client.post(answer_url, data)
    assert response.status_code == 403
    assert b"CSRF verification failed" in response.content
    assert Judgement.objects.count() == 0


def test_a_get_cannot_record_an_answer(alice, answer_url):
    assert alice.get(answer_url).status_code == 405


def test_undo_of_a_first_answer_adds_a_retraction(alice, project, answer_url, query_with_hits):
    document = first_pair(query_with_hits)
    post_answer(alice, answer_url, query_with_hits, document, "1")
    response = alice.post(reverse("judgements:rate_undo", args=[project.slug]), follow=True)
    events = Judgement.objects.order_by("id").values_list("kind", "grade")
    assert list(events) == [("grade", 1), ("retract", None)]
    assert response.context["pair"].document == document
    assert "Undone" in response.content.decode()


def test_undo_of_a_revision_restores_the_earlier_answer(
    alice, rater, project, answer_url, query_with_hits
):
    document = first_pair(query_with_hits)
    JudgementFactory(
        rater=rater,
        query=query_with_hits,
        document=document,
        kind="cant_tell",
        grade=None,
        note="unsure",
        created_at=dt.datetime(2026, 11, 1, tzinfo=dt.UTC),
    )
    post_answer(alice, answer_url, query_with_hits, document, "3")
    alice.post(reverse("judgements:rate_undo", args=[project.slug]))
    newest = Judgement.objects.order_by("-id").first()
    assert (newest.kind, newest.grade, newest.note) == ("cant_tell", None, "unsure")
    assert Judgement.objects.count() == 3


def test_undo_with_nothing_to_undo_writes_nothing(alice, project, query_with_hits):
    response = alice.post(reverse("judgements:rate_undo", args=[project.slug]), follow=True)
    assert "Nothing to undo." in response.content.decode()
    assert Judgement.objects.count() == 0


def test_undo_works_once(alice, project, answer_url, query_with_hits):
    post_answer(alice, answer_url, query_with_hits, first_pair(query_with_hits), "1")
    undo = reverse("judgements:rate_undo", args=[project.slug])
    alice.post(undo)
    alice.post(undo)
    assert Judgement.objects.count() == 2


def test_skip_moves_on_to_another_pair_without_writing(alice, project, rate_url, query_with_hits):
    document = first_pair(query_with_hits)
    skip = reverse("judgements:rate_skip", args=[project.slug])
    response = alice.post(
        skip, {"query": query_with_hits.pk, "document": document.pk}, follow=True
    )
    assert response.context["pair"].document != document
    assert Judgement.objects.count() == 0


def test_when_the_pool_is_done_the_page_says_so(alice, rater, rate_url, query_with_hits):
    for hit in query_with_hits.hits.all():
        JudgementFactory(rater=rater, query=query_with_hits, document=hit.document)
    page = alice.get(rate_url).content.decode()
    assert "Nothing left to rate" in page


def test_a_rater_not_named_by_a_project_cannot_see_or_rate_it(
    alice, other_rater, project, rate_url, answer_url, query_with_hits
):
    project.raters.set([other_rater])
    assert alice.get(rate_url).status_code == 404
    assert b"Outdoor gear" not in alice.get("/").content
    response = alice.post(
        answer_url,
        {"query": query_with_hits.pk, "document": first_pair(query_with_hits).pk, "answer": "2"},
    )
    assert response.status_code == 404
    assert Judgement.objects.count() == 0


def test_the_home_page_links_raters_to_their_queue(alice, rate_url, project):
    assert rate_url.encode() in alice.get("/").content


def test_the_rating_page_is_never_cached_and_varies_with_htmx(alice, rate_url, query_with_hits):
    response = alice.get(rate_url)
    assert "no-store" in response["Cache-Control"]
    assert "HX-Request" in response["Vary"]


def test_the_rating_page_costs_a_fixed_number_of_statements(
    alice, rate_url, query_with_hits, django_assert_num_queries
):
    # Session, user, then project + roles + progress in one, the pick, the lease and the
    # pair; the savepoint and its release stand for the transaction of the pick.
    with django_assert_num_queries(8):
        alice.get(rate_url, headers={"HX-Request": "true"})
    with django_assert_num_queries(8):
        assert alice.get(rate_url).context["pair"] is not None


def test_an_unknown_project_is_403_for_a_user_without_a_role_and_404_for_a_rater(
    client, alice, outsider
):
    url = reverse("judgements:rate", args=["no-such-project"])
    assert alice.get(url).status_code == 404
    client.force_login(outsider)
    assert client.get(url).status_code == 403
