import json

import pytest
from django.urls import reverse


def test_home_redirects_anonymous_visitors_to_login(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


def test_login_page_renders(client):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert b"Log in" in response.content


def test_a_rater_sees_the_project_list_without_analyst_links(client, rater, project):
    client.force_login(rater)
    response = client.get("/")
    assert response.status_code == 200
    assert b"Outdoor gear" in response.content
    assert project.get_absolute_url().encode() not in response.content


def test_an_analyst_sees_the_project_page(client, analyst, query_with_hits):
    client.force_login(analyst)
    project = query_with_hits.project
    response = client.get(project.get_absolute_url())
    assert response.status_code == 200
    assert response.context["query_count"] == 1
    assert b"bm25" in response.content


def test_a_rater_gets_403_on_the_project_page(client, rater, project):
    client.force_login(rater)
    response = client.get(project.get_absolute_url())
    assert response.status_code == 403


def test_anonymous_visitors_are_sent_to_login_from_the_project_page(client, project):
    response = client.get(project.get_absolute_url())
    assert response.status_code == 302


def test_a_rater_cannot_open_the_admin(client, rater):
    client.force_login(rater)
    response = client.get("/admin/")
    assert response.status_code == 302
    assert "/admin/login/" in response.url


def test_the_admin_lists_judgements_for_a_superuser(admin_client, query_with_hits):
    response = admin_client.get("/admin/judgements/judgement/")
    assert response.status_code == 200


def test_logout_is_a_post_and_ends_the_session(client, rater):
    client.force_login(rater)
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert client.get("/").status_code == 302


@pytest.mark.parametrize("policy", ["majority", "quepid"])
def test_the_admin_saves_every_consensus_policy(admin_client, project, policy):
    url = f"/admin/judgements/project/{project.pk}/change/"
    data = {
        "name": project.name,
        "slug": project.slug,
        "scale": json.dumps(project.scale),
        "judges_per_pair": 1,
        "pool_depth": 10,
        "metric_k": 10,
        "metric_gain": "exponential",
        "metric_discount": "log2",
        "metric_ideal": "judged",
        "metric_ideal_depth": "cut",
        "metric_unjudged": "zero",
        "metric_negative": "penalise",
        "metric_mean_over": "all",
        "consensus": policy,
        "cant_tell_text": project.cant_tell_text,
        "created_at_0": "2026-11-01",
        "created_at_1": "12:00:00",
    }
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    project.refresh_from_db()
    assert project.consensus == policy
    assert (project.metric_negative, project.metric_mean_over) == ("penalise", "all")
