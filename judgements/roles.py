"""The three roles and the checks views and services make against them.

rater:   grades pairs from their own queue; sees their own history and progress.
analyst: everything a rater may, plus projects, imports, dashboards, exports, API.
admin:   everything, plus users and roles (Django admin).
"""

from enum import StrEnum

from django.contrib.auth.decorators import user_passes_test
from django.core.exceptions import PermissionDenied


class Role(StrEnum):
    RATER = "rater"
    ANALYST = "analyst"
    ADMIN = "admin"


# Each role may do everything the roles listed after it may do.
IMPLIED_BY = {
    Role.RATER: {Role.RATER, Role.ANALYST, Role.ADMIN},
    Role.ANALYST: {Role.ANALYST, Role.ADMIN},
    Role.ADMIN: {Role.ADMIN},
}


def roles_of(user) -> set[Role]:
    if not user.is_authenticated or not user.is_active:
        return set()
    if user.is_superuser:
        return set(Role)
    # Cached on the user object so that a page checking roles several times
    # reads the groups once.
    if not hasattr(user, "_role_cache"):
        names = set(user.groups.values_list("name", flat=True))
        user._role_cache = {role for role in Role if role.value in names}
    return user._role_cache


def has_role(user, role: Role) -> bool:
    """True if the user holds ``role`` or a role that includes it."""
    return bool(roles_of(user) & IMPLIED_BY[role])


def can_rate(user) -> bool:
    return has_role(user, Role.RATER)


def is_analyst(user) -> bool:
    return has_role(user, Role.ANALYST)


def role_required(role: Role):
    """View decorator: anonymous users go to the login page, others without the role get 403."""

    def check(user) -> bool:
        if not user.is_authenticated:
            return False
        if not has_role(user, role):
            raise PermissionDenied(f"This page is for the {role} role.")
        return True

    return user_passes_test(check)
