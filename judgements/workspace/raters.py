"""The raters of a project: accounts, invitations, the rater role, who may rate it, and
one line per rater joining progress, agreement and can't-tell and skip counts.

The page itself is the Raters dashboard (metrics.views.raters), which adds agreement;
the actions here (analysts and admins only, POST with the CSRF token) go back to it.
"""

import datetime as dt
from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.models import User
from django.contrib.auth.views import PasswordResetConfirmView
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse, reverse_lazy
from django.utils import timezone
from django.views.decorators.http import require_POST

from judgements import accounts
from judgements.forms import ProjectRatersForm
from judgements.models import Project
from judgements.queue import pool_summary, project_rater_progress
from judgements.roles import Role, role_required
from judgements.workspace.forms import AccountForm, RaterAccountForm
from metrics.dashboards.agreement import rater_answer_counts

INVITATION_KEY = "raters:invitation"


@dataclass
class RaterLine:
    """One rater's line of the raters page; numbers are None where there is nothing."""

    username: str
    name: str = ""
    user_id: int | None = None
    is_rater: bool = False
    is_active: bool = True
    joined: bool = True  # Has a password or has signed in.
    manageable: bool = False
    invitable: bool = False
    may_rate: bool = False
    answered: int | None = None
    waiting: int | None = None
    today: int | None = None
    last_event: dt.datetime | None = None
    cant_tell: int | None = None
    skips: int | None = None
    grades: int | None = None
    compared: int | None = None
    mean_absolute_deviation: float | None = None


def rater_lines(project: Project, report=None) -> list[RaterLine]:
    """Everyone who rates or may rate ``project``, and everyone who answered in it."""
    as_of = report.as_of if report is not None else timezone.now()
    progress = {row.username: row for row in project_rater_progress(project)}
    agreement = {row.username: row for row in report.raters} if report is not None else {}
    # Skips and can't-tell answers: the raters dashboard's counts (one query for both).
    answers = (
        report.answer_counts if report is not None else rater_answer_counts(project, as_of=as_of)
    )
    counts = {row.username: row for row in answers}
    named = set(project.raters.values_list("pk", flat=True))
    users = User.objects.filter(
        Q(groups__name=Role.RATER.value)
        | Q(pk__in=named)
        | Q(username__in=counts)
        | Q(username__in=[*progress, *agreement])
    ).distinct()
    lines = [_line(user, named) for user in users.prefetch_related("groups")]
    for line in lines:
        _fill(line, progress.get(line.username), agreement.get(line.username))
        answered = counts.get(line.username)
        line.cant_tell = answered.cant_tell if answered else 0
        line.skips = answered.skips if answered else 0
    return sorted(lines, key=lambda line: line.username.lower())


def _line(user: User, named: set[int]) -> RaterLine:
    roles = accounts.roles_of_any(user)
    return RaterLine(
        username=user.get_username(),
        name=user.get_full_name(),
        user_id=user.pk,
        is_rater=bool(roles & {Role.RATER, Role.ANALYST, Role.ADMIN}) or user.is_superuser,
        is_active=user.is_active,
        joined=user.has_usable_password() or user.last_login is not None,
        manageable=accounts.managed_by_analysts(user),
        invitable=accounts.invitable(user),
        may_rate=user.pk in named or not named,
    )


def _fill(line: RaterLine, progress, agreement) -> None:
    if progress is not None:
        line.answered, line.waiting = progress.answered, progress.waiting
        line.today, line.last_event = progress.today, progress.last_event
    if agreement is not None:
        line.grades, line.compared = agreement.grades, agreement.compared
        line.mean_absolute_deviation = agreement.mean_absolute_deviation


def raters_management(request, project: Project, report=None) -> dict:
    """What the raters page shows besides agreement: the lines, the forms, the pool."""
    return {
        "project": project,
        "lines": rater_lines(project, report),
        "pool": pool_summary(project),
        "account_form": RaterAccountForm(auto_id="id_account_%s"),
        "access_form": ProjectRatersForm(instance=project),
        "names_raters": project.raters.exists(),
        # Shown once: it is taken out of the session as the page shows it.
        "invitation": request.session.pop(INVITATION_KEY, None),
    }


def _back(project: Project, anchor: str = "accounts"):
    return redirect(f"{reverse('metrics:raters', args=[project.slug])}#{anchor}")


@role_required(Role.ANALYST)
def raters(request, slug):
    """The raters page lives with the dashboards; this address leads there."""
    project = get_object_or_404(Project, slug=slug)
    return redirect("metrics:raters", slug=project.slug)


@require_POST
@role_required(Role.ANALYST)
def rater_new(request, slug):
    project = get_object_or_404(Project, slug=slug)
    form = RaterAccountForm(request.POST)
    if not form.is_valid():
        errors = " ".join(message for field in form.errors.values() for message in field)
        messages.error(request, f"No account was created: {errors}")
        return _back(project)
    data = form.cleaned_data
    invite = data["how"] == "invite"
    user = accounts.rater_create(
        username=data["username"],
        first_name=data["first_name"],
        password=None if invite else data["password"],
        project=project,
    )
    if invite:
        _remember_invitation(request, user)
    messages.success(request, f"Created the rater {user.get_username()}.")
    return _back(project)


def _remember_invitation(request, user: User) -> None:
    url = request.build_absolute_uri(accounts.invitation_path(user))
    request.session[INVITATION_KEY] = {"username": user.get_username(), "url": url}


def _account(request, slug: str) -> tuple[Project, User | None, bool]:
    """The project, the account an action names (None, with a message, if none) and
    whether the rater box was ticked."""
    project = get_object_or_404(Project, slug=slug)
    form = AccountForm(request.POST)
    user = User.objects.filter(pk=form.cleaned_data["user"]).first() if form.is_valid() else None
    if user is None:
        messages.error(request, "No such account.")
    return project, user, form.is_valid() and form.cleaned_data["rater"]


@require_POST
@role_required(Role.ANALYST)
def rater_invite(request, slug):
    """A new invitation link for a rater who has not signed in yet."""
    project, user, _ = _account(request, slug)
    if user is not None:
        try:
            _remember_invitation(request, user)
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
    return _back(project)


@require_POST
@role_required(Role.ANALYST)
def rater_role(request, slug):
    project, user, rater = _account(request, slug)
    if user is None:
        return _back(project, "raters")
    try:
        accounts.rater_role_set(user=user, rater=rater)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        done = "now has" if rater else "no longer has"
        messages.success(request, f"{user.get_username()} {done} the rater role.")
    return _back(project, "raters")


@require_POST
@role_required(Role.ANALYST)
def raters_access(request, slug):
    """Who may rate the project: the raters named, or (none named) every rater."""
    project = get_object_or_404(Project, slug=slug)
    form = ProjectRatersForm(request.POST, instance=project)
    if form.is_valid():
        form.save()
        messages.success(request, "Saved who may rate this project.")
    else:
        messages.error(request, "Not saved: choose raters from the list.")
    return _back(project, "access")


class InvitationView(PasswordResetConfirmView):
    """An invitation link: the person chooses a password and is signed in."""

    template_name = "registration/invitation.html"
    post_reset_login = True
    # Two backends (django-axes first) are configured: the sign-in after the password is
    # set names the one that holds accounts.
    post_reset_login_backend = "django.contrib.auth.backends.ModelBackend"
    # Where a sign-in lands: a rater of one project goes straight to its queue.
    success_url = reverse_lazy("judgements:start")

    def form_valid(self, form):
        response = super().form_valid(form)
        messages.success(self.request, "Welcome: your password is set and you are signed in.")
        return response
