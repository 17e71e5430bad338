""" "Who may rate" lists raters only, and an import's account is not counted as a person
(issue 42, point 7).

Who may see what: charlie (analyst) opens the project and its raters page; alice is a
rater, dave an analyst who does not rate.
"""

import pytest
from django.urls import reverse

from judgements.imports import import_rater
from tests.factories import JudgementFactory, UserFactory


@pytest.fixture
def charlie(client, analyst):
    client.force_login(analyst)
    return client


def test_who_may_rate_offers_raters_only(charlie, project, rater):
    UserFactory(username="dave", roles=["analyst"])
    import_rater(project)

    form = charlie.get(reverse("metrics:raters", args=[project.slug])).context["access_form"]

    assert [user.username for user in form.fields["raters"].queryset] == [rater.username]


def test_a_rater_named_before_keeps_their_box(charlie, project, rater):
    dave = UserFactory(username="dave", roles=["analyst"])
    project.raters.add(dave)

    form = charlie.get(reverse("metrics:raters", args=[project.slug])).context["access_form"]

    assert {user.username for user in form.fields["raters"].queryset} == {"dave", rater.username}


def test_the_import_rater_is_not_counted_as_a_person(charlie, query_with_hits, rater):
    document = query_with_hits.hits.first().document
    JudgementFactory(query=query_with_hits, document=document, rater=rater, grade=2)
    imported = import_rater(query_with_hits.project)
    JudgementFactory(query=query_with_hits, document=document, rater=imported, grade=1)

    page = charlie.get(reverse("judgements:project", args=["outdoor"]))

    assert page.context["rater_count"] == 1
