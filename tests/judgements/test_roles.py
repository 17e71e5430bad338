from django.contrib.auth.models import AnonymousUser, Group

from judgements.roles import Role, can_rate, has_role, is_analyst
from tests.factories import UserFactory


def test_the_roles_exist_as_groups_after_migrating(db):
    assert set(Group.objects.values_list("name", flat=True)) >= {"rater", "analyst", "admin"}


def test_a_rater_may_rate_but_is_not_an_analyst(rater):
    assert can_rate(rater)
    assert not is_analyst(rater)


def test_an_analyst_may_do_everything_a_rater_may(analyst):
    assert can_rate(analyst)
    assert is_analyst(analyst)
    assert not has_role(analyst, Role.ADMIN)


def test_an_admin_holds_every_role(db):
    admin = UserFactory(username="erin", roles=["admin"])
    assert all(has_role(admin, role) for role in Role)


def test_a_user_without_a_group_holds_no_role(outsider):
    assert not any(has_role(outsider, role) for role in Role)


def test_an_inactive_rater_holds_no_role(rater):
    rater.is_active = False
    assert not can_rate(rater)


def test_anonymous_users_hold_no_role():
    assert not can_rate(AnonymousUser())
