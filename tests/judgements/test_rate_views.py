import datetime as dt
import re

import pytest
import time_machine
from django.test import Client
from django.urls import reverse

from judgements.models import Judgement, QueueLease, QueueSkip
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


def test_an_answer_reads_the_project_row_once(alice, rate_url, answer_url, query_with_hits):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    document = first_pair(query_with_hits)
    alice.get(rate_url)
    with CaptureQueriesContext(connection) as statements:
        response = alice.post(
            answer_url, {"query": query_with_hits.pk, "document": document.pk, "answer": "2"}
        )

    assert response.status_code == 302
    assert Judgement.objects.filter(query=query_with_hits, document=document).exists()
    # The project's own row, read by the page's access check; not again to check the grade.
    project_reads = [
        query["sql"]
        for query in statements
        if re.match(r'\s*SELECT (project\.\*|"judgements_project"\."id")', query["sql"])
    ]
    assert len(project_reads) == 1, project_reads


def test_an_unknown_project_is_403_for_a_user_without_a_role_and_404_for_a_rater(
    client, alice, outsider
):
    url = reverse("judgements:rate", args=["no-such-project"])
    assert alice.get(url).status_code == 404
    client.force_login(outsider)
    assert client.get(url).status_code == 403


def skip_url(project):
    return reverse("judgements:rate_skip", args=[project.slug])


def undo_url(project):
    return reverse("judgements:rate_undo", args=[project.slug])


def button_with(page: str, attribute: str) -> str:
    """The opening tag of the button that carries ``attribute``."""
    at = page.index(attribute)
    return page[page.rindex("<button", 0, at) : page.index(">", at)]


def test_enter_in_the_note_presses_a_disabled_button_not_a_grade(alice, rate_url, query_with_hits):
    # The form's first submit button is its default one, which Enter in a text field
    # presses: it must be the disabled one, ahead of every grade.
    page = alice.get(rate_url).content.decode()
    form = page[page.index('<form class="answer"') :]
    first_button = form[form.index("<button") : form.index(">", form.index("<button"))]
    assert "disabled" in first_button
    assert 'name="answer"' not in first_button


def test_a_skipped_pair_stays_skipped_in_a_new_session(
    client, rater, project, rate_url, query_with_hits
):
    first = first_pair(query_with_hits)
    client.force_login(rater)
    client.post(skip_url(project), {"query": query_with_hits.pk, "document": first.pk})
    client.logout()
    client.force_login(rater)
    assert client.get(rate_url).context["pair"].document != first


def test_a_skip_of_a_bad_pair_is_a_400_and_the_page_still_works(
    alice, project, rate_url, query_with_hits
):
    document = first_pair(query_with_hits)
    for bad in (
        {"query": "9223372036854775808", "document": document.pk},
        {"query": query_with_hits.pk, "document": "-1"},
        {"query": query_with_hits.pk, "document": "x"},
        {"query": query_with_hits.pk + 1000, "document": document.pk},
    ):
        response = alice.post(skip_url(project), bad)
        assert response.status_code == 400, bad
        assert "Not skipped" in response.content.decode()
    assert alice.get(rate_url).status_code == 200
    assert alice.get(rate_url).context["pair"].document == document
    assert QueueSkip.objects.count() == 0


def test_undo_goes_back_one_answer_per_press(alice, project, answer_url, query_with_hits):
    first, second = (hit.document for hit in query_with_hits.hits.order_by("rank")[:2])
    post_answer(alice, answer_url, query_with_hits, first, "1")
    post_answer(alice, answer_url, query_with_hits, second, "3")
    response = alice.post(undo_url(project), follow=True)
    assert response.context["pair"].document == second
    response = alice.post(undo_url(project), follow=True)
    assert response.context["pair"].document == first
    events = Judgement.objects.order_by("id").values_list("document", "kind", "grade")
    assert list(events) == [
        (first.pk, "grade", 1),
        (second.pk, "grade", 3),
        (second.pk, "retract", None),
        (first.pk, "retract", None),
    ]
    assert "Nothing to undo." in alice.post(undo_url(project), follow=True).content.decode()
    assert Judgement.objects.count() == 4


def test_the_pair_an_undo_gave_back_shows_the_answer_it_had(
    alice, project, answer_url, query_with_hits
):
    first = first_pair(query_with_hits)
    post_answer(alice, answer_url, query_with_hits, first, "2")
    page = alice.post(undo_url(project), follow=True).content.decode()
    assert "Undone: your answer <strong>2 Relevant</strong>" in page
    marked = button_with(page, 'value="2"')
    assert " was" in marked and 'aria-describedby="restored-note"' in marked
    assert " was" not in button_with(page, 'value="3"')
    # Answered again, the pair is done with and the queue moves on.
    response = post_answer(alice, answer_url, query_with_hits, first, "3")
    assert response.context["pair"].document != first
    assert response.context["restored"] is None


def test_an_undo_that_brings_back_an_earlier_answer_says_so(
    alice, rater, project, answer_url, query_with_hits
):
    document = first_pair(query_with_hits)
    JudgementFactory(
        rater=rater, query=query_with_hits, document=document, kind="cant_tell", grade=None
    )
    post_answer(alice, answer_url, query_with_hits, document, "3")
    page = alice.post(undo_url(project), follow=True).content.decode()
    assert "your answer is back to <strong>Can&#x27;t tell</strong>" in page


def test_the_end_of_the_queue_says_which_pairs_others_hold(
    alice, rater, other_rater, project, rate_url, query_with_hits
):
    hits = list(query_with_hits.hits.order_by("rank"))
    for hit in hits[1:]:
        JudgementFactory(rater=rater, query=query_with_hits, document=hit.document)
    bob = Client()
    bob.force_login(other_rater)
    assert bob.get(rate_url).context["pair"].document == hits[0].document
    page = alice.get(rate_url).content.decode()
    assert "1 pair is being rated by another rater; it comes back in 10 min" in page
    assert "Nothing left to rate" not in page
    assert 'data-testid="left">1<' in page


def test_a_project_without_queries_says_so_without_a_progress_bar(alice, rate_url, project):
    page = alice.get(rate_url).content.decode()
    assert "No queries yet" in page
    assert "<progress" not in page
    assert "Nothing left to rate" not in page


def test_a_project_without_a_result_list_says_so(alice, rate_url, project):
    QueryFactory(project=project, text="tent")
    page = alice.get(rate_url).content.decode()
    assert "Nothing to rate yet" in page
    assert "<progress" not in page


def test_the_progress_bar_has_a_name_and_counts_pairs(alice, rate_url, query_with_hits):
    page = alice.get(rate_url).content.decode()
    assert '<progress class="progress" value="0" max="5"' in page
    assert 'aria-label="Your progress in Outdoor gear"' in page


def test_a_rater_of_one_project_lands_in_its_queue_after_login(client, rater, project):
    rater.set_password("pw")
    rater.save()
    response = client.post(reverse("login"), {"username": "alice", "password": "pw"}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("judgements:rate", args=[project.slug])


def test_a_rater_of_two_projects_and_an_analyst_land_on_the_projects_page(
    client, rater, analyst, project
):
    ProjectFactory(slug="second")
    for user in (rater, analyst):
        client.force_login(user)
        response = client.get(reverse("judgements:start"))
        assert response.url == reverse("judgements:home")


def test_leaving_the_page_gives_its_lease_back(alice, rater, project, rate_url, query_with_hits):
    pair = alice.get(rate_url).context["pair"]
    release = reverse("judgements:rate_release", args=[project.slug])
    data = {"query": pair.query_id, "document": pair.document_id}
    stale = (pair.lease_expires_at - dt.timedelta(minutes=1)).isoformat()
    assert alice.post(release, {**data, "lease": stale}).status_code == 204
    assert QueueLease.objects.filter(rater=rater).exists()
    lease = pair.lease_expires_at.isoformat()
    assert alice.post(release, {**data, "lease": lease}).status_code == 204
    assert not QueueLease.objects.filter(rater=rater).exists()
    assert alice.post(release, {**data, "lease": "soon"}).status_code == 400
