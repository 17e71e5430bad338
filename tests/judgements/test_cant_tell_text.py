"""The "Can't tell" explanation is the project's own text, today's by default (issue 42,
point 7).

Who may see what: charlie (analyst) changes the settings; alice (rater) rates.
"""

from django.urls import reverse

from judgements.models import Project
from judgements.models.project import CANT_TELL_TEXT
from tests.factories import HitFactory, ProjectFactory
from tests.judgements.forms import project_form_data


def test_a_new_project_explains_cant_tell_as_before(client, rater):
    project = ProjectFactory()
    HitFactory(result_list__project=project, rank=1)
    client.force_login(rater)

    page = client.get(reverse("judgements:rate", args=[project.slug])).content.decode()

    assert CANT_TELL_TEXT == "The listing does not say enough."
    assert f'<span class="grade-description">{CANT_TELL_TEXT}</span>' in page


def test_the_analyst_sets_the_text_raters_see(client, analyst, rater):
    project = ProjectFactory(slug="shop")
    HitFactory(result_list__project=project, rank=1)
    text = "The page is in a language you do not read, or does not load."
    client.force_login(analyst)

    saved = client.post(
        reverse("judgements:project_settings", args=["shop"]),
        project_form_data(project, cant_tell_text=text),
    )

    assert saved.status_code == 302
    assert Project.objects.get(slug="shop").cant_tell_text == text
    client.force_login(rater)
    page = client.get(reverse("judgements:rate", args=["shop"])).content.decode()
    assert text in page and CANT_TELL_TEXT not in page


def test_a_text_too_long_is_refused_with_a_message(client, analyst):
    project = ProjectFactory(slug="shop")
    client.force_login(analyst)

    refused = client.post(
        reverse("judgements:project_settings", args=["shop"]),
        project_form_data(project, cant_tell_text="x" * 301),
    )

    assert refused.status_code in (200, 400)
    assert "at most 300 characters" in refused.content.decode()
