"""Rater accounts an analyst manages: creating them, inviting them, the rater role.

An analyst is not an admin: they may create raters, give or take the rater role and
invite people who have never signed in, but never touch an analyst's or an admin's
account (an invitation link sets a password, so it would hand that account over).
There is no mail server: an invitation is a link the analyst copies, shown once.
"""

from django.contrib.auth.models import Group, User
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from judgements.models import Project
from judgements.roles import Role, roles_of


@transaction.atomic
def rater_create(
    *, username: str, first_name: str = "", password: str | None, project: Project
) -> User:
    """A new account with the rater role; with no ``password``, one they set through an
    invitation (``invitation_path``). If ``project`` names its raters, they join them."""
    user = User(username=username, first_name=first_name)
    if password:
        user.set_password(password)
    else:
        user.set_unusable_password()
    user.save()
    user.groups.add(Group.objects.get(name=Role.RATER.value))
    if project.raters.exists():
        project.raters.add(user)
    return user


def managed_by_analysts(user: User) -> bool:
    """Whether an analyst may change this account: an active one, not an analyst's or
    an admin's (an inactive account, such as a project's import rater, stays as it is)."""
    if not user.is_active or user.is_superuser or user.is_staff:
        return False
    return not roles_of_any(user) & {Role.ANALYST, Role.ADMIN}


def roles_of_any(user: User) -> set[Role]:
    """The roles the account holds, active or not (``roles_of`` ignores inactive users)."""
    if user.is_active:
        return roles_of(user)
    names = set(user.groups.values_list("name", flat=True))
    return {role for role in Role if role.value in names}


def invitable(user: User) -> bool:
    """Whether an invitation may be made for ``user``: a rater who never signed in."""
    return managed_by_analysts(user) and user.last_login is None


def invitation_path(user: User) -> str:
    """The path of a one-time link that lets ``user`` choose a password and sign in.

    Django's password-reset token: it stops working once the password is set (or the
    user signs in) and after ``PASSWORD_RESET_TIMEOUT`` (three days by default).
    """
    if not invitable(user):
        raise ValidationError(f"{user.get_username()} cannot be invited: they signed in already.")
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return reverse("judgements:invitation", args=[uid, default_token_generator.make_token(user)])


@transaction.atomic
def rater_role_set(*, user: User, rater: bool) -> None:
    """Give or take the rater role; refuses analysts' and admins' accounts."""
    if not managed_by_analysts(user):
        raise ValidationError(f"{user.get_username()} is an analyst or admin: ask an admin.")
    group = Group.objects.get(name=Role.RATER.value)
    if rater:
        user.groups.add(group)
    else:
        user.groups.remove(group)
