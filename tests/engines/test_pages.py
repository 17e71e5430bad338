"""The engines' pages: who may see them, what they say, and that bad input is a clear
error on the page. Who may see what: charlie (analyst) everything; alice (rater) 403;
anonymous visitors the login page."""

import pytest
from django.test import Client
from django.urls import reverse

from judgements.models import Capture, SearchEndpoint
from tests.engines.conftest import MULTI_MATCH, cranfield_project, make_endpoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(analyst):
    return cranfield_project(analyst, queries=8)


def endpoint_post(server, **changes):
    import json

    data = {
        "name": "prod",
        "kind": "elasticsearch",
        "base_url": server.url,
        "index": "cranfield",
        "method": "GET",
        "title_field": "title",
        "snippet_field": "text",
        "auth": "none",
        "timeout_seconds": "10",
        "concurrency": "4",
        "depth": "10",
        "template": json.dumps(MULTI_MATCH),
    }
    return {**data, **changes}


def test_raters_may_not_see_the_engines_pages(project, rater, elastic, analyst):
    endpoint = make_endpoint(project, elastic, analyst)
    client = Client()
    client.force_login(rater)
    for url in [
        reverse("judgements:engines", args=[project.slug]),
        endpoint.get_absolute_url(),
        reverse("judgements:engine_try", args=[project.slug, endpoint.pk]),
    ]:
        assert client.get(url).status_code == 403
    assert Client().get(endpoint.get_absolute_url()).status_code == 302


def test_an_analyst_creates_an_endpoint_and_its_secret_is_never_shown(project, charlie, elastic):
    url = reverse("judgements:engines", args=[project.slug])
    assert "No search endpoint yet" in charlie.get(url).content.decode()

    response = charlie.post(
        url, endpoint_post(elastic, auth="basic", username="elastic", secret="hunter2-secret")
    )

    endpoint = SearchEndpoint.objects.get(project=project)
    assert response.status_code == 302 and response["Location"] == endpoint.get_absolute_url()
    assert endpoint.template.version == 1 and "hunter2" not in endpoint.secret_encrypted
    page = charlie.get(endpoint.get_absolute_url()).content.decode()
    assert "hunter2-secret" not in page and "A secret is stored (not shown)" in page


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"template": '{"query": {"match": {"text": "x"}}}'}, "does not name {{query}}"),
        ({"template": '{"query": '}, "The template is not valid JSON"),
        ({"base_url": "ftp://example.org"}, "must start with http:// or https://"),
        ({"auth": "bearer"}, "This authentication needs a secret."),
    ],
)
def test_bad_input_is_a_clear_error_on_the_page(project, charlie, elastic, changes, message):
    url = reverse("judgements:engines", args=[project.slug])

    response = charlie.post(url, endpoint_post(elastic, **changes))

    assert response.status_code == 400
    assert message in response.content.decode()
    assert not SearchEndpoint.objects.exists()


def test_search_endpoint_allow_refuses_an_unlisted_host_on_the_page(
    project, charlie, elastic, settings
):
    settings.SEARCH_ENDPOINT_ALLOW = ["*.example.org"]

    response = charlie.post(
        reverse("judgements:engines", args=[project.slug]), endpoint_post(elastic)
    )

    assert (
        "127.0.0.1 is not among the hosts SEARCH_ENDPOINT_ALLOW allows"
        in response.content.decode()
    )


def test_capture_now_runs_and_its_page_shows_the_outcome(
    project, charlie, elastic, analyst, django_capture_on_commit_callbacks
):
    endpoint = make_endpoint(project, elastic, analyst)
    with django_capture_on_commit_callbacks(execute=True):
        response = charlie.post(
            reverse("judgements:engine_capture", args=[project.slug, endpoint.pk]),
            {"name": "nightly", "queries": ""},
        )
    capture = Capture.objects.get()
    assert response["Location"] == capture.get_absolute_url()

    page = charlie.get(capture.get_absolute_url()).content.decode()

    assert "Done" in page and "nightly" in page
    progress = charlie.get(reverse("judgements:capture_progress", args=[project.slug, capture.pk]))
    assert progress.json() == {
        "status": "done",
        "percent": 100,
        "stage": "8 of 8 queries sent",
        "failed": 0,
    }


def test_a_capture_of_unknown_queries_is_refused_with_their_names(
    project, charlie, elastic, analyst
):
    endpoint = make_endpoint(project, elastic, analyst)

    response = charlie.post(
        reverse("judgements:engine_capture", args=[project.slug, endpoint.pk]),
        {"name": "", "queries": "1\nnope-404"},
        follow=True,
    )

    expected = "Nothing was captured: 1 not in the project: &quot;nope-404&quot;."
    assert expected in response.content.decode()
    assert not Capture.objects.exists()


def test_the_try_page_runs_a_try_and_shows_its_ndcg_and_coverage(
    project, charlie, elastic, analyst, django_capture_on_commit_callbacks
):
    endpoint = make_endpoint(project, elastic, analyst)
    url = reverse("judgements:engine_try", args=[project.slug, endpoint.pk])
    page = charlie.get(url).content.decode()
    assert "multi_match" in page

    with django_capture_on_commit_callbacks(execute=True):
        response = charlie.post(
            url,
            {
                "template": '{"query": {"match": {"title": "{{query}}"}}}',
                "note": "titles",
                "queries": "",
            },
        )

    capture = Capture.objects.get(kind="try")
    assert response["Location"] == capture.get_absolute_url()
    page = charlie.get(capture.get_absolute_url()).content.decode()
    assert 'data-testid="try-mean"' in page and "Keep and queue" in page
    assert capture.template.version == 2 and capture.template.note == "titles"


def test_a_try_with_a_bad_template_is_an_error_on_the_try_page(project, charlie, elastic, analyst):
    endpoint = make_endpoint(project, elastic, analyst)

    response = charlie.post(
        reverse("judgements:engine_try", args=[project.slug, endpoint.pk]),
        {"template": '{"q": "{{query}}", "x": "{{size}}"}', "queries": ""},
    )

    assert response.status_code == 400
    assert "Unknown placeholder {{size}}" in response.content.decode()


def test_template_versions_are_compared_line_by_line(project, charlie, elastic, analyst):
    from judgements.engines.services import template_save

    endpoint = make_endpoint(project, elastic, analyst)
    template_save(endpoint=endpoint, body='{"q": "{{query}}"}', user=analyst)

    page = charlie.get(
        reverse("judgements:engine_templates", args=[project.slug, endpoint.pk]) + "?a=1&b=2"
    ).content.decode()

    assert '<span class="added">+{&quot;q&quot;: &quot;{{query}}&quot;}</span>' in page
    assert "multi_match" in page


def test_one_query_live_beside_the_stored_ranking(
    project, charlie, elastic, analyst, django_capture_on_commit_callbacks
):
    from judgements.engines.capture import capture_start

    endpoint = make_endpoint(project, elastic, analyst)
    with django_capture_on_commit_callbacks(execute=True):
        capture_start(endpoint=endpoint, user=analyst, name="stored")
    query = project.queries.get(external_id="1")

    page = charlie.get(
        reverse("judgements:engine_live", args=[project.slug, endpoint.pk, query.pk])
    ).content.decode()

    assert page.count("stored #") == 10  # The same template: every live hit is in the list.
    assert "unjudged" in page and "raw JSON" in page and "&quot;_source&quot;" in page
    detail = reverse(
        "metrics:query", args=[project.slug, query.hits.first().result_list_id, query.pk]
    )
    assert f"Run live on {endpoint.name}" in charlie.get(detail).content.decode()


def test_the_live_page_names_the_engines_error(project, charlie, elastic, analyst):
    endpoint = make_endpoint(project, elastic, analyst, index="nope")
    query = project.queries.first()

    page = charlie.get(
        reverse("judgements:engine_live", args=[project.slug, endpoint.pk, query.pk])
    ).content.decode()

    assert "HTTP 404: index_not_found_exception: no such index [nope]" in page
