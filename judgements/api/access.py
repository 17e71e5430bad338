"""Who may call what, and how lists are paged.

Roles (judgements.roles): a rater reads only their own judgements and works their
own queue; an analyst (and an admin) may use every endpoint. Anonymous requests get
401, a role that may not use an endpoint gets 403, never data.
"""

from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination, PageNumberPagination
from rest_framework.permissions import BasePermission

from judgements import queue
from judgements.models import Project
from judgements.roles import can_rate, is_analyst


class IsRater(BasePermission):
    message = "This endpoint is for raters and analysts."

    def has_permission(self, request, view):
        return can_rate(request.user)


class IsAnalyst(BasePermission):
    message = "This endpoint is for analysts."

    def has_permission(self, request, view):
        return is_analyst(request.user)


def visible_projects(user):
    """Every project for an analyst; for a rater, the projects they may rate."""
    return Project.objects.all() if is_analyst(user) else queue.rateable_projects(user)


NOT_RATEABLE = "No such project to rate."


def project_to_rate(user, slug: str) -> Project:
    """The project named by ``slug``, if ``user`` may rate it.

    A project the user may not rate answers 404, as one that does not exist does (and
    as the rating pages do), so that its name and existence stay out of sight.
    """
    project = queue.rateable_project(user, slug)
    if project is None:
        raise NotFound(NOT_RATEABLE)
    return project


class Pages(PageNumberPagination):
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000


class LogPages(CursorPagination):
    """The judgement log in the order it was written; a cursor stays valid as it grows."""

    ordering = "id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000
