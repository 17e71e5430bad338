import datetime as dt

import pytest
from django.urls import reverse

from judgements.models import Judgement
from tests.factories import DocumentFactory, HitFactory, JudgementFactory, QueryFactory

# alice (rater) sees and revises only her own answers; bob's stay out of her sight.
# charlie (analyst) grades in bulk and names the raters of a project; raters get 403
# on those pages.


def url(name, project, **params):
    path = reverse(f"judgements:{name}", args=[project.slug])
    return path + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")


def answer(rater, hit, grade=2, kind="grade", day=1):
    return JudgementFactory(
        rater=rater,
        query=hit.query,
        document=hit.document,
        grade=grade,
        kind=kind,
        created_at=dt.datetime(2026, 11, day, tzinfo=dt.UTC),
    )


@pytest.fixture
def hits(query_with_hits):
    return list(query_with_hits.hits.order_by("rank"))


def test_my_judgements_lists_current_answers_newest_first(
    client, rater, other_rater, project, hits
):
    answer(rater, hits[0], grade=1, day=1)
    answer(rater, hits[0], grade=3, day=3)
    answer(rater, hits[1], grade=None, kind="cant_tell", day=2)
    answer(rater, hits[2], day=1)
    answer(rater, hits[2], grade=None, kind="retract", day=2)
    answer(other_rater, hits[3], day=4)
    client.force_login(rater)
    rows = client.get(url("my_judgements", project)).context["rows"]
    assert [(a.document, label) for a, label in rows] == [
        (hits[0].document, "3 Perfect"),
        (hits[1].document, "Can't tell"),
    ]


def test_my_judgements_are_paginated(client, rater, project):
    query = QueryFactory(project=project, text="many")
    for rank in range(1, 28):
        hit = HitFactory(result_list__project=project, query=query, rank=rank)
        answer(rater, hit)
    client.force_login(rater)
    first = client.get(url("my_judgements", project))
    assert len(first.context["rows"]) == 25
    assert len(client.get(url("my_judgements", project, page=2)).context["rows"]) == 2


def test_revising_adds_an_event_and_keeps_the_first(client, rater, project, hits):
    answer(rater, hits[0], grade=1)
    client.force_login(rater)
    data = {
        "query": hits[0].query_id,
        "document": hits[0].document_id,
        "answer": "2",
        "note": "re-read",
    }
    response = client.post(url("my_judgements", project), data, follow=True)
    assert "Saved." in response.content.decode()
    events = Judgement.objects.order_by("id").values_list("grade", "note")
    assert list(events) == [(1, ""), (2, "re-read")]


def test_a_revision_outside_the_scale_is_refused(client, rater, project, hits):
    answer(rater, hits[0], grade=1)
    client.force_login(rater)
    data = {"query": hits[0].query_id, "document": hits[0].document_id, "answer": "9"}
    response = client.post(url("my_judgements", project), data, follow=True)
    assert "Not saved" in response.content.decode()
    assert Judgement.objects.count() == 1


@pytest.mark.parametrize("name", ["bulk", "raters"])
def test_raters_cannot_open_analyst_pages(client, rater, project, name):
    client.force_login(rater)
    assert client.get(url(name, project)).status_code == 403


def test_raters_cannot_open_the_admin(client, rater):
    client.force_login(rater)
    response = client.get(reverse("admin:judgements_judgement_changelist"))
    assert response.status_code == 302
    assert "/admin/login/" in response.url


def test_bulk_shows_one_querys_pairs_down_to_a_depth(client, analyst, project, hits):
    client.force_login(analyst)
    response = client.get(url("bulk", project, depth=3))
    assert [row.best_rank for row, _, _ in response.context["rows"]] == [1, 2, 3]


def test_bulks_first_load_shows_what_its_unticked_filters_say(
    client, analyst, rater, project, hits
):
    answer(rater, hits[0])
    client.force_login(analyst)
    first_load = client.get(url("bulk", project))
    assert [row.best_rank for row, _, _ in first_load.context["rows"]] == [1, 2, 3, 4, 5]
    assert 'name="unjudged" id="id_unjudged" checked' not in first_load.content.decode()
    shown = client.get(url("bulk", project, query=hits[0].query_id, depth=project.pool_depth))
    assert [row for row, _, _ in shown.context["rows"]] == [
        row for row, _, _ in first_load.context["rows"]
    ]


def test_bulk_shows_25_pairs_a_page(client, analyst, project):
    query = QueryFactory(project=project, text="aaa first")
    for rank in range(1, 31):
        HitFactory(result_list__project=project, query=query, rank=rank)
    client.force_login(analyst)
    response = client.get(url("bulk", project, query=query.pk, depth=30))
    assert len(response.context["rows"]) == 25


def test_bulk_can_show_only_unjudged_pairs(client, analyst, rater, project, hits):
    answer(rater, hits[0])
    answer(rater, hits[1], grade=None, kind="cant_tell")
    client.force_login(analyst)
    response = client.get(url("bulk", project, unjudged="on"))
    assert [row.best_rank for row, _, _ in response.context["rows"]] == [2, 3, 4, 5]


def test_bulk_saves_changed_answers_only(client, analyst, project, hits):
    answer(analyst, hits[0], grade=2)
    client.force_login(analyst)
    data = {
        f"answer-{hits[0].document_id}": "2",
        f"answer-{hits[1].document_id}": "0",
        f"answer-{hits[2].document_id}": "cant_tell",
    }
    response = client.post(url("bulk", project), data, follow=True)
    assert "Saved 2 answers." in response.content.decode()
    new = Judgement.objects.order_by("id")[1:].values_list("document", "kind", "grade")
    assert list(new) == [
        (hits[1].document_id, "grade", 0),
        (hits[2].document_id, "cant_tell", None),
    ]


def test_bulk_refuses_a_grade_outside_the_scale_and_writes_nothing(client, analyst, project, hits):
    client.force_login(analyst)
    data = {f"answer-{hits[0].document_id}": "1", f"answer-{hits[1].document_id}": "8"}
    client.post(url("bulk", project), data)
    assert Judgement.objects.count() == 0


def test_the_raters_page_shows_progress_per_rater(
    client, analyst, rater, other_rater, project, hits
):
    answer(rater, hits[0])
    answer(rater, hits[1], grade=None, kind="cant_tell")
    answer(other_rater, hits[0], grade=1)
    client.force_login(analyst)
    # The raters page lives with the dashboards; the project's address leads there.
    response = client.get(url("raters", project), follow=True)
    assert response.redirect_chain == [(reverse("metrics:raters", args=[project.slug]), 302)]
    rows = {
        line.username: (line.answered, line.waiting, line.cant_tell)
        for line in response.context["lines"]
    }
    # The project wants one grade per pair: only alice's can't-tell pair still waits.
    assert rows == {"alice": (2, 1, 1), "bob": (1, 0, 0)}
    assert response.context["pool"].pairs == 5


def test_an_analyst_names_the_raters_of_a_project(client, analyst, rater, other_rater, project):
    client.force_login(analyst)
    response = client.post(
        url("raters_access", project), {"raters": [other_rater.pk]}, follow=True
    )
    assert "Saved who may rate" in response.content.decode()
    assert list(project.raters.all()) == [other_rater]


def test_a_page_of_another_project_document_is_refused_in_bulk(client, analyst, project, hits):
    stranger = DocumentFactory()
    client.force_login(analyst)
    data = {f"answer-{stranger.pk}": "1"}
    client.post(url("bulk", project), data)
    assert Judgement.objects.count() == 0
