"""The one raters page: accounts, invitations, the rater role, who may rate, and one line
per rater with progress, agreement, can't-tell and skip counts.

charlie (analyst) manages raters; alice and bob (raters) grade; erin is a new rater
charlie invites. An analyst may never change an analyst's or an admin's account.
"""

import datetime as dt
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from judgements.models import Hit, QueueSkip
from tests.factories import JudgementFactory, UserFactory

pytestmark = pytest.mark.django_db

RATERS = reverse("metrics:raters", args=["outdoor"])


@pytest.fixture
def charlie(client, analyst):
    client.force_login(analyst)
    return client


def action(name):
    return reverse(f"judgements:{name}", args=["outdoor"])


def lines(client) -> dict:
    return {line.username: line for line in client.get(RATERS).context["lines"]}


def test_an_invitation_is_shown_once_and_never_cached(charlie, project):
    response = charlie.post(action("rater_new"), {"username": "erin", "how": "invite"})
    assert response.url == RATERS + "#accounts"
    page = charlie.get(RATERS)
    invitation = page.context["invitation"]
    assert invitation["username"] == "erin"
    assert invitation["url"].startswith("http://testserver/invitation/")
    assert "no-store" in page["Cache-Control"]
    assert invitation["url"] in page.content.decode()
    again = charlie.get(RATERS)
    assert again.context["invitation"] is None
    assert invitation["url"] not in again.content.decode()
    erin = User.objects.get(username="erin")
    assert not erin.has_usable_password()
    assert list(erin.groups.values_list("name", flat=True)) == ["rater"]
    assert lines(charlie)["erin"].joined is False


def test_the_invitation_lets_the_rater_choose_a_password_and_lands_them_in_the_queue(
    charlie, project
):
    charlie.post(action("rater_new"), {"username": "erin", "first_name": "Erin", "how": "invite"})
    link = charlie.get(RATERS).context["invitation"]["url"].removeprefix("http://testserver")
    erin = Client()
    form = erin.get(link, follow=True)
    assert b"Choose a password for" in form.content
    password = {"new_password1": "a long pass phrase", "new_password2": "a long pass phrase"}
    done = erin.post(form.redirect_chain[-1][0], password, follow=True)
    # Signed in, in the queue of the one project they may rate.
    assert done.redirect_chain[-1][0] == f"/rate/{project.slug}/"
    assert done.context["user"].username == "erin"
    assert b"Welcome: your password is set" in done.content
    # The link works once.
    assert b"This invitation has expired" in Client().get(link, follow=True).content


def test_a_rater_with_a_password_now_is_created_and_may_sign_in(charlie, project):
    charlie.post(
        action("rater_new"), {"username": "erin", "how": "password", "password": "rate all day 9"}
    )
    assert charlie.get(RATERS).context["invitation"] is None
    # Through the login page: django-axes, which guards it, needs the request.
    erin = Client()
    response = erin.post("/accounts/login/", {"username": "erin", "password": "rate all day 9"})
    assert response.status_code == 302
    assert erin.session["_auth_user_id"] == str(User.objects.get(username="erin").pk)


def test_a_weak_password_or_a_taken_name_creates_nothing(charlie, project, rater):
    for form in (
        {"username": "erin", "how": "password", "password": "123"},
        {"username": "ALICE", "how": "invite"},
    ):
        response = charlie.post(action("rater_new"), form, follow=True)
        assert "No account was created" in response.content.decode()
    assert not User.objects.filter(username="erin").exists()


def test_a_new_rater_joins_a_project_that_names_its_raters(charlie, project, rater):
    project.raters.add(rater)
    charlie.post(action("rater_new"), {"username": "erin", "how": "invite"})
    assert set(project.raters.values_list("username", flat=True)) == {"alice", "erin"}
    assert lines(charlie)["erin"].may_rate


def test_a_new_link_is_made_only_for_a_rater_who_never_signed_in(charlie, project, rater):
    charlie.post(action("rater_new"), {"username": "erin", "how": "invite"})
    charlie.get(RATERS)  # the first link, shown and gone
    erin = User.objects.get(username="erin")
    charlie.post(action("rater_invite"), {"user": erin.pk})
    assert charlie.get(RATERS).context["invitation"]["username"] == "erin"
    rater.last_login = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    rater.save()
    response = charlie.post(action("rater_invite"), {"user": rater.pk}, follow=True)
    assert response.context["invitation"] is None
    assert "cannot be invited" in response.content.decode()


def test_an_analyst_gives_and_takes_the_rater_role(charlie, project, rater, outsider):
    charlie.post(action("rater_role"), {"user": outsider.pk, "rater": "on"})
    assert lines(charlie)["dave"].is_rater
    charlie.post(action("rater_role"), {"user": rater.pk})
    assert not rater.groups.filter(name="rater").exists()
    assert "alice" not in lines(charlie)  # no role, no answers: not a rater of anything


@pytest.mark.parametrize("roles", [["analyst"], ["admin"]])
def test_an_analyst_cannot_change_an_analysts_or_admins_account(charlie, project, roles):
    other = UserFactory(username="olga", roles=roles)
    response = charlie.post(action("rater_role"), {"user": other.pk}, follow=True)
    assert "ask an admin" in response.content.decode()
    assert set(other.groups.values_list("name", flat=True)) == set(roles)
    response = charlie.post(action("rater_invite"), {"user": other.pk}, follow=True)
    assert response.context["invitation"] is None


def test_each_raters_line_joins_progress_agreement_and_cant_tell(
    charlie, query_with_hits, rater, other_rater
):
    hits = list(Hit.objects.order_by("rank"))
    for hit, alice, bob in zip(hits, (3, 2, None), (1, 2, 2), strict=False):
        JudgementFactory(query=hit.query, document=hit.document, rater=other_rater, grade=bob)
        if alice is None:
            JudgementFactory(
                query=hit.query, document=hit.document, rater=rater, grade=None, kind="cant_tell"
            )
        else:
            JudgementFactory(query=hit.query, document=hit.document, rater=rater, grade=alice)
    # Alice put the third pair off twice before answering can't tell: two presses of Skip.
    for _ in range(2):
        QueueSkip.objects.create(
            project=hits[2].query.project,
            query=hits[2].query,
            document=hits[2].document,
            rater=rater,
        )
    found = lines(charlie)
    alice, bob = found["alice"], found["bob"]
    assert (alice.answered, alice.cant_tell, alice.grades, alice.compared) == (3, 1, 2, 2)
    assert (bob.answered, bob.cant_tell, bob.grades, bob.compared) == (3, 0, 3, 2)
    # Pair 1: 3 and 1, consensus 2; pair 2: both 2. Alice is off by 1 and 0.
    assert alice.mean_absolute_deviation == pytest.approx(0.5)
    assert (alice.skips, bob.skips) == (2, 0)
    assert [cell.strip() for cell in _cells(charlie, "skips")] == ["2", "0"]


def _cells(client, testid: str) -> list[str]:
    html = client.get(RATERS).content.decode()
    return re.findall(rf'data-testid="{testid}">([^<]*)<', html)


def test_who_may_rate_is_saved_from_the_raters_page(charlie, project, rater, other_rater):
    response = charlie.post(action("raters_access"), {"raters": [other_rater.pk]})
    assert response.url == RATERS + "#access"
    assert list(project.raters.all()) == [other_rater]
    found = lines(charlie)
    assert found["bob"].may_rate and not found["alice"].may_rate


def test_the_old_raters_address_leads_to_the_one_raters_page(charlie, project):
    response = charlie.get(reverse("judgements:raters", args=["outdoor"]))
    assert response.url == RATERS


def test_the_import_rater_is_listed_but_cannot_be_managed(charlie, query_with_hits, analyst):
    from judgements.imports import import_rater

    user = import_rater(query_with_hits.project)
    JudgementFactory(
        query=query_with_hits, document=query_with_hits.hits.first().document, rater=user
    )
    line = lines(charlie)[user.username]
    assert not line.manageable and not line.invitable
