import functools
from dataclasses import dataclass

import markdown
import nh3
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from config.ids import page_number
from judgements.forms import (
    AnswerForm,
    BulkAnswerForm,
    BulkFilterForm,
    PairForm,
    ProjectRatersForm,
    answer_choices,
)
from judgements.models import Document, Judgement, Project
from judgements.queue import (
    bulk_pairs,
    lease_release,
    pool_summary,
    project_rater_progress,
    query_neighbours,
    queue_next_pair,
    rateable_project,
    rateable_projects,
    rating_page,
)
from judgements.roles import Role, can_rate, is_analyst, role_required
from judgements.services import judgement_bulk_submit, judgement_submit, judgement_undo

PAGE_SIZE = 25
RATE_ACTIONS = ("answer", "skip", "undo")
# Older skips are forgotten: the session stays small, and those pairs are long overdue.
MAX_SKIPPED = 500


@login_required
def home(request):
    analyst = is_analyst(request.user)
    rateable = rateable_projects(request.user)
    # Analysts manage every project; raters see only the projects they may rate.
    projects = Project.objects.all() if analyst else rateable
    ctx = {
        "projects": projects.annotate(query_count=Count("queries")),
        "is_analyst": analyst,
        "rateable": set(rateable.values_list("pk", flat=True)),
    }
    return render(request, "judgements/home.html", ctx)


@role_required(Role.ANALYST)
def project(request, slug):
    project = get_object_or_404(Project, slug=slug)
    ctx = {
        "project": project,
        "query_count": project.queries.count(),
        "document_count": project.documents.count(),
        "result_lists": project.result_lists.annotate(hit_count=Count("hits")),
        "judgement_count": Judgement.objects.for_project(project).human().count(),
        "rater_count": Judgement.objects.for_project(project)
        .human()
        .order_by()
        .values("rater")
        .distinct()
        .count(),
    }
    return render(request, "judgements/project.html", ctx)


def _rateable_project(request, slug) -> Project:
    project = rateable_project(request.user, slug)
    if project is None:
        # A project the user may not rate answers 404, so that it stays out of sight.
        raise Http404("No such project to rate.")
    return project


@functools.lru_cache(maxsize=64)
def _guidelines_html(text: str) -> SafeString:
    # nh3 removes scripts, event handlers and javascript: links that the Markdown
    # (which passes raw HTML through) may carry; only then is the result safe.
    return mark_safe(nh3.clean(markdown.markdown(text)))


def _skipped(request, project: Project) -> list[tuple[int, int]]:
    return [tuple(pair) for pair in request.session.get(f"queue:{project.pk}:skipped", [])]


def _answer_label(project: Project, judgement: Judgement) -> str:
    if judgement.kind == Judgement.Kind.RETRACT:
        return "Retracted"
    prefix = "" if judgement.grade is None else f"{judgement.grade} "
    return prefix + project.grade_label(judgement.grade)


def _remember_last_answer(request, project: Project, judgement: Judgement) -> None:
    # The summary is kept with the id so that showing it costs the page no query.
    summary = f"{judgement.query} · {judgement.document} → {_answer_label(project, judgement)}"
    request.session[f"queue:{project.pk}:last"] = {"id": judgement.pk, "summary": summary}


def _last_summary(request, project: Project) -> dict | None:
    last = request.session.get(f"queue:{project.pk}:last")
    return last if isinstance(last, dict) else None


def _last_answer(request, project: Project) -> Judgement | None:
    last = _last_summary(request, project)
    if last is None:
        return None
    events = Judgement.objects.select_related("query", "document")
    return events.filter(pk=last["id"], rater=request.user).first()


# The page changes with every visit (it leases the next pair), and the same address
# answers htmx with a fragment: neither may come back from a cache.
@never_cache
@vary_on_headers("HX-Request")
def rate(request, slug):
    # role_required(Role.RATER), with the roles read by the page's first statement.
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    page = rating_page(request.user, slug)
    if not can_rate(request.user):
        raise PermissionDenied(f"This page is for the {Role.RATER} role.")
    if page.project is None:
        raise Http404("No such project to rate.")
    project = page.project
    skipped = _skipped(request, project)
    pair = queue_next_pair(rater=request.user, project=project, skipped=skipped)
    partial = request.headers.get("HX-Request") == "true"
    last = _last_summary(request, project)
    ctx = {
        "project": project,
        "pair": pair,
        "progress": page.progress,
        "last_summary": last["summary"] if last else "",
        "partial": partial,
        "is_analyst": is_analyst(request.user),
        # Each form names its address twice (action and hx-post): reverse it once.
        "urls": {name: reverse(f"judgements:rate_{name}", args=[slug]) for name in RATE_ACTIONS},
    }
    if partial:
        return render(request, "judgements/partials/_rating.html", ctx)
    ctx["guidelines"] = _guidelines_html(project.guidelines)
    return render(request, "judgements/rate.html", ctx)


@require_POST
@role_required(Role.RATER)
def rate_answer(request, slug):
    project = _rateable_project(request, slug)
    form = AnswerForm(request.POST, project=project)
    if not form.is_valid():
        messages.error(request, f"Not saved: {form.error_text()}")
        return redirect("judgements:rate", slug=slug)
    try:
        judgement, _ = judgement_submit(rater=request.user, project=project, **form.submission())
    except ValidationError as error:
        messages.error(request, f"Not saved: {' '.join(error.messages)}")
        return redirect("judgements:rate", slug=slug)
    _remember_last_answer(request, project, judgement)
    return redirect("judgements:rate", slug=slug)


@require_POST
@role_required(Role.RATER)
def rate_skip(request, slug):
    project = _rateable_project(request, slug)
    form = PairForm(request.POST)
    if form.is_valid():
        pair = (form.cleaned_data["query"], form.cleaned_data["document"])
        key = f"queue:{project.pk}:skipped"
        # Skipped pairs return after every other pair, in the order they were skipped.
        skipped = [*(p for p in _skipped(request, project) if p != pair), pair]
        request.session[key] = skipped[-MAX_SKIPPED:]
        lease_release(rater=request.user, query_id=pair[0], document_id=pair[1])
    return redirect("judgements:rate", slug=slug)


@require_POST
@role_required(Role.RATER)
def rate_undo(request, slug):
    project = _rateable_project(request, slug)
    last = _last_answer(request, project)
    if last is None:
        messages.info(request, "Nothing to undo.")
        return redirect("judgements:rate", slug=slug)
    try:
        judgement_undo(rater=request.user, judgement=last)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, f"Undone: {last.query} · {last.document}.")
    request.session.pop(f"queue:{project.pk}:last", None)
    return redirect("judgements:rate", slug=slug)


@dataclass(frozen=True)
class Window:
    """A page of a list whose length is not counted: counting a long history is slow."""

    number: int
    has_next: bool

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_other_pages(self) -> bool:
        return self.has_previous or self.has_next

    @property
    def previous_page_number(self) -> int:
        return self.number - 1

    @property
    def next_page_number(self) -> int:
        return self.number + 1


@role_required(Role.RATER)
def my_judgements(request, slug):
    project = _rateable_project(request, slug)
    if request.method == "POST":
        return _revise(request, project)
    number = page_number(request.GET.get("page"), per_page=PAGE_SIZE)
    answers = (
        Judgement.objects.for_project(project)
        .filter(rater=request.user)
        .exclude(kind=Judgement.Kind.RETRACT)
        .still_current()
        .select_related("query", "document")
        # created_at alone keeps the rater index's order, so a page is read, not sorted.
        .order_by("-created_at")
    )
    rows = list(answers[(number - 1) * PAGE_SIZE : number * PAGE_SIZE + 1])
    ctx = {
        "project": project,
        "page": Window(number=number, has_next=len(rows) > PAGE_SIZE),
        "rows": [(answer, _answer_label(project, answer)) for answer in rows[:PAGE_SIZE]],
        "choices": answer_choices(project),
        "is_analyst": is_analyst(request.user),
    }
    return render(request, "judgements/my_judgements.html", ctx)


def _revise(request, project: Project):
    form = AnswerForm(request.POST, project=project)
    try:
        if not form.is_valid():
            raise ValidationError(form.error_text())
        judgement_submit(rater=request.user, project=project, **form.submission())
    except ValidationError as error:
        messages.error(request, f"Not saved: {' '.join(error.messages)}")
    else:
        messages.success(request, "Saved. Your earlier answer stays in the history.")
    return redirect("judgements:my_judgements", slug=project.slug)


@role_required(Role.ANALYST)
def bulk(request, slug):
    project = _rateable_project(request, slug)
    filters = BulkFilterForm(request.GET or None, project=project)
    chosen = filters.cleaned_data if filters.is_valid() else {}
    query = chosen.get("query") or project.queries.order_by("text").first()
    if query is None:
        return render(request, "judgements/bulk.html", {"project": project, "filters": filters})
    depth = chosen.get("depth") or project.pool_depth
    rows = bulk_pairs(
        rater=request.user, query=query, depth=depth, unjudged=chosen.get("unjudged")
    )
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    ids = [row.document_id for row in page]
    initial = {f"answer-{row.document_id}": row.answer for row in page}
    form = BulkAnswerForm(request.POST or None, project=project, document_ids=ids, initial=initial)
    if request.method == "POST" and form.is_valid():
        return _bulk_save(request, project, query, form)
    documents = Document.objects.in_bulk(ids)
    ctx = {"project": project, "filters": filters, "query": query, "page": page, "form": form}
    ctx["is_analyst"] = True
    ctx["query_string"] = _without_page(request.GET)
    ctx["previous_query"], ctx["next_query"] = query_neighbours(query)
    ctx["rows"] = [
        (row, documents[row.document_id], form[f"answer-{row.document_id}"]) for row in page
    ]
    return render(request, "judgements/bulk.html", ctx)


def _without_page(params) -> str:
    params = params.copy()
    params.pop("page", None)
    return params.urlencode()


def _bulk_save(request, project: Project, query, form: BulkAnswerForm):
    try:
        written = judgement_bulk_submit(
            rater=request.user, project=project, query=query, answers=form.answers()
        )
    except ValidationError as error:
        messages.error(request, f"Nothing saved: {' '.join(error.messages)}")
    else:
        messages.success(request, f"Saved {written} answer{'s' if written != 1 else ''}.")
    return redirect(request.get_full_path())


@role_required(Role.ANALYST)
def raters(request, slug):
    project = get_object_or_404(Project, slug=slug)
    form = ProjectRatersForm(request.POST or None, instance=project)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "Saved who may rate this project.")
        return redirect("judgements:raters", slug=slug)
    ctx = {
        "project": project,
        "form": form,
        "progress": project_rater_progress(project),
        "pool": pool_summary(project),
        "is_analyst": True,
    }
    return render(request, "judgements/raters.html", ctx)
