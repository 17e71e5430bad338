"""Every page and action of the analyst's workspace, against every role, and CSRF.

Who may see what: charlie (analyst) uses them all; alice (rater) and dave (no role)
get 403 and no data; anonymous visitors are sent to the login page. Every POST
without the CSRF token is refused (403) and changes nothing.
"""

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from judgements import urls as judgements_urls
from judgements.models import Job, Project
from tests.judgements.forms import project_form_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def setting(query_with_hits, rater):
    project = query_with_hits.project
    result_list = query_with_hits.hits.first().result_list
    job = Job.objects.create(kind=Job.Kind.QUERIES, label="queries.csv", project=project)
    return project, result_list, job, rater


def pages(project, result_list, job) -> dict[str, str]:
    """GET pages: name -> path."""
    slug = project.slug
    return {
        "project_new": reverse("judgements:project_new"),
        "project": reverse("judgements:project", args=[slug]),
        "project_settings": reverse("judgements:project_settings", args=[slug]),
        "project_delete": reverse("judgements:project_delete", args=[slug]),
        "uploads": reverse("judgements:uploads", args=[slug]),
        "result_list_delete": reverse(
            "judgements:result_list_delete", args=[slug, result_list.pk]
        ),
        "job": reverse("judgements:job", args=[job.pk]),
        "raters": reverse("metrics:raters", args=[slug]),
        "series_export": reverse("metrics:series_export", args=[slug]),
    }


def actions(project, result_list, rater) -> dict[str, tuple[str, dict]]:
    """POST actions: name -> (path, a valid form)."""
    slug = project.slug
    return {
        "project_new": (
            reverse("judgements:project_new"),
            project_form_data(name="New", slug="new-one"),
        ),
        "project_settings": (
            reverse("judgements:project_settings", args=[slug]),
            project_form_data(project, name="Renamed"),
        ),
        "project_delete": (
            reverse("judgements:project_delete", args=[slug]),
            {"confirm": slug},
        ),
        "result_list_delete": (
            reverse("judgements:result_list_delete", args=[slug, result_list.pk]),
            {},
        ),
        "upload": (
            reverse("judgements:upload", args=[slug, "queries"]),
            {"format": "csv", "file": _file("text\nhat\n")},
        ),
        "guidelines_preview": (reverse("judgements:guidelines_preview"), {"text": "# Hi"}),
        "rater_new": (
            reverse("judgements:rater_new", args=[slug]),
            {"username": "erin", "how": "invite"},
        ),
        "rater_invite": (reverse("judgements:rater_invite", args=[slug]), {"user": rater.pk}),
        "rater_role": (reverse("judgements:rater_role", args=[slug]), {"user": rater.pk}),
        "raters_access": (
            reverse("judgements:raters_access", args=[slug]),
            {"raters": [rater.pk]},
        ),
    }


def _file(text: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("upload.csv", text.encode())


PAGES = [
    "project_new", "project", "project_settings", "project_delete", "uploads",
    "result_list_delete", "job", "raters", "series_export",
]  # fmt: skip
ACTIONS = [
    "project_new", "project_settings", "project_delete", "result_list_delete", "upload",
    "guidelines_preview", "rater_new", "rater_invite", "rater_role", "raters_access",
]  # fmt: skip


def state() -> tuple:
    """What any of the actions would change."""
    return (
        sorted(Project.objects.values_list("slug", "name")),
        Job.objects.count(),
        sorted(User.objects.values_list("username", flat=True)),
        sorted(User.objects.filter(groups__name="rater").values_list("username", flat=True)),
        sorted(Project.raters.through.objects.values_list("project_id", "user_id")),
    )


@pytest.mark.parametrize("name", PAGES)
def test_an_analyst_opens_every_page(client, analyst, setting, name):
    client.force_login(analyst)
    assert client.get(pages(*setting[:3])[name]).status_code == 200


@pytest.mark.parametrize("persona", ["rater", "outsider"])
@pytest.mark.parametrize("name", PAGES)
def test_raters_and_users_without_a_role_get_403_on_every_page(
    request, client, setting, persona, name
):
    client.force_login(request.getfixturevalue(persona))
    response = client.get(pages(*setting[:3])[name])
    assert response.status_code == 403
    assert setting[0].name.encode() not in response.content


@pytest.mark.parametrize("name", PAGES)
def test_anonymous_visitors_are_sent_to_login_from_every_page(client, setting, name):
    response = client.get(pages(*setting[:3])[name])
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


@pytest.mark.parametrize("persona", ["rater", "outsider", None])
@pytest.mark.parametrize("name", ACTIONS)
def test_no_action_is_open_to_raters_users_without_a_role_or_anonymous_visitors(
    request, client, setting, persona, name
):
    project, result_list, _, rater = setting
    if persona:
        client.force_login(request.getfixturevalue(persona))
    path, form = actions(project, result_list, rater)[name]
    before = state()
    response = client.post(path, form)
    assert response.status_code == (403 if persona else 302)
    assert state() == before


@pytest.mark.parametrize("name", ACTIONS)
def test_every_action_needs_the_csrf_token(analyst, setting, name):
    project, result_list, _, rater = setting
    client = Client(enforce_csrf_checks=True)
    client.force_login(analyst)
    path, form = actions(project, result_list, rater)[name]
    before = state()
    response = client.post(path, form)
    assert response.status_code == 403
    assert b"CSRF" in response.content
    assert state() == before


@pytest.mark.parametrize("name", ACTIONS)
def test_with_the_csrf_token_an_analyst_may_take_every_action(analyst, setting, name):
    # The other half of the test above: the token, not something else, made the 403.
    project, result_list, _, rater = setting
    client = Client(enforce_csrf_checks=True)
    client.force_login(analyst)
    client.get(reverse("judgements:home"))
    path, form = actions(project, result_list, rater)[name]
    token = client.cookies["csrftoken"].value
    response = client.post(path, {**form, "csrfmiddlewaretoken": token})
    assert response.status_code in (200, 302)


def test_the_lists_above_name_every_workspace_route():
    # A page or action added to the workspace is checked here only once it is listed.
    workspace = {
        pattern.name
        for pattern in judgements_urls.urlpatterns
        if pattern.callback.__module__.startswith("judgements.workspace")
    }
    # The invitation is for whoever holds the link (tests/judgements/test_raters_page.py);
    # "raters" is the old address that leads to the raters page (listed, in metrics).
    assert workspace - {"invitation"} <= set(PAGES) | set(ACTIONS)
    assert {"raters", "series_export"} <= set(PAGES)
