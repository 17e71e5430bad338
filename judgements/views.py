from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from config.ids import page_number
from judgements.forms import (
    CANT_TELL,
    AnswerForm,
    BulkAnswerForm,
    BulkFilterForm,
    LeaseForm,
    PairForm,
    answer_choices,
)
from judgements.guidelines import guidelines_html
from judgements.jobs import projects_being_deleted
from judgements.models import Document, Judgement, Project
from judgements.queue import (
    bulk_pairs,
    lease_release,
    query_neighbours,
    queue_next_pair,
    queue_restore_pair,
    queue_skip_pair,
    queue_wait,
    rateable_project,
    rateable_projects,
    rating_page,
)
from judgements.roles import Role, can_rate, is_analyst, role_required
from judgements.services import judgement_bulk_submit, judgement_submit, judgement_undo

PAGE_SIZE = 25
# My judgements counts a rater's pairs up to this many, and says "more than" past it.
TOTAL_BOUND = 10_000
RATE_ACTIONS = ("answer", "skip", "undo", "release")
# How many answers undo can take back, newest first; the session keeps no more.
UNDO_STEPS = 50


@login_required
def home(request):
    analyst = is_analyst(request.user)
    rateable = rateable_projects(request.user)
    # Analysts manage every project; raters see only the projects they may rate.
    projects = Project.objects.all() if analyst else rateable
    # A project being deleted is gone as far as its users are concerned.
    projects = projects.exclude(pk__in=projects_being_deleted())
    ctx = {
        "projects": projects.annotate(query_count=Count("queries")),
        "is_analyst": analyst,
        "rateable": set(rateable.values_list("pk", flat=True)),
    }
    return render(request, "judgements/home.html", ctx)


@login_required
def start(request):
    """Where a login lands: a rater of a single project goes straight to its queue."""
    if not is_analyst(request.user):
        rateable = list(rateable_projects(request.user).values_list("slug", flat=True)[:2])
        if len(rateable) == 1:
            return redirect("judgements:rate", slug=rateable[0])
    return redirect("judgements:home")


def _rateable_project(request, slug) -> Project:
    project = rateable_project(request.user, slug)
    if project is None:
        # A project the user may not rate answers 404, so that it stays out of sight.
        raise Http404("No such project to rate.")
    return project


def _answer_label(project: Project, judgement: Judgement) -> str:
    if judgement.kind == Judgement.Kind.RETRACT:
        return "Retracted"
    prefix = "" if judgement.grade is None else f"{judgement.grade} "
    return prefix + project.grade_label(judgement.grade)


def _answer_value(judgement: Judgement) -> str:
    """The answer choice (a grade's digits, or "cant_tell") an event gave."""
    return CANT_TELL if judgement.grade is None else str(judgement.grade)


# The session remembers, per project, the rater's latest answers on the rating page
# (newest last), so that undo can go back step by step, and the pair an undo gave back.
# Each entry keeps its summary, so that showing the newest costs the page no query.
def _answers_key(project: Project) -> str:
    return f"queue:{project.pk}:answers"


def _restore_key(project: Project) -> str:
    return f"queue:{project.pk}:restore"


def _answers(request, project: Project) -> list[dict]:
    answers = request.session.get(_answers_key(project))
    return answers if isinstance(answers, list) else []


def _remember_answer(request, project: Project, judgement: Judgement) -> None:
    summary = f"{judgement.query} · {judgement.document} → {_answer_label(project, judgement)}"
    entry = {"id": judgement.pk, "summary": summary}
    answers = [*_answers(request, project), entry][-UNDO_STEPS:]
    request.session[_answers_key(project)] = answers


def _restored(request, project: Project) -> dict | None:
    restored = request.session.get(_restore_key(project))
    return restored if isinstance(restored, dict) else None


def _pair_for(request, project: Project):
    """The pair an undo gave back while it is still the rater's to answer, else the next
    pair of the queue; and what the given-back pair had, or None."""
    restored = _restored(request, project)
    if restored is not None:
        pair = queue_restore_pair(
            rater=request.user,
            project=project,
            query_id=restored["query"],
            document_id=restored["document"],
        )
        if pair is not None:
            return pair, restored
        request.session.pop(_restore_key(project), None)
    return queue_next_pair(rater=request.user, project=project), None


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
    pair, restored = _pair_for(request, project)
    partial = request.headers.get("HX-Request") == "true"
    answers = _answers(request, project)
    ctx = {
        "project": project,
        "pair": pair,
        "restored": restored,
        "progress": page.progress,
        "last_summary": answers[-1]["summary"] if answers else "",
        "undo_steps": len(answers),
        "partial": partial,
        "is_analyst": is_analyst(request.user),
        # Each form names its address twice (action and hx-post): reverse it once.
        "urls": {
            "page": reverse("judgements:rate", args=[slug]),
            **{name: reverse(f"judgements:rate_{name}", args=[slug]) for name in RATE_ACTIONS},
        },
    }
    if pair is None:
        ctx.update(_why_nothing_to_rate(request.user, project, page.progress))
    if partial:
        return render(request, "judgements/partials/_rating.html", ctx)
    ctx["guidelines"] = guidelines_html(project.guidelines)
    return render(request, "judgements/rate.html", ctx)


def _why_nothing_to_rate(user, project: Project, progress) -> dict:
    """What the page says when it has no pair: an empty project, an empty pool, pairs
    held by other raters, or every pair done."""
    if progress.total == 0:
        return {"empty": "no_queries" if not project.queries.exists() else "no_pool"}
    return {"wait": queue_wait(rater=user, project=project)}


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
    _remember_answer(request, project, judgement)
    request.session.pop(_restore_key(project), None)
    return redirect("judgements:rate", slug=slug)


@require_POST
@role_required(Role.RATER)
def rate_skip(request, slug):
    project = _rateable_project(request, slug)
    form = PairForm(request.POST)
    try:
        if not form.is_valid():
            raise ValidationError(form.error_text())
        queue_skip_pair(rater=request.user, project=project, **form.pair())
    except ValidationError as error:
        # Only a changed page posts a pair that is not in the pool: nothing is stored.
        return _refused(request, slug, f"Not skipped: {' '.join(error.messages)}")
    request.session.pop(_restore_key(project), None)
    return redirect("judgements:rate", slug=slug)


def _refused(request, slug: str, message: str):
    back = reverse("judgements:rate", args=[slug])
    return render(
        request, "judgements/refused.html", {"message": message, "back": back}, status=400
    )


@require_POST
@role_required(Role.RATER)
def rate_release(request, slug):
    """Give back the lease of the pair a rating page showed, when the page is left."""
    _rateable_project(request, slug)
    form = LeaseForm(request.POST)
    if not form.is_valid():
        return _refused(request, slug, f"Not released: {form.error_text()}")
    lease_release(rater=request.user, expires_at=form.cleaned_data["lease"], **form.pair())
    return HttpResponse(status=204)


@require_POST
@role_required(Role.RATER)
def rate_undo(request, slug):
    project = _rateable_project(request, slug)
    answers = _answers(request, project)
    if not answers:
        messages.info(request, "Nothing to undo.")
        return redirect("judgements:rate", slug=slug)
    # The step is used up whatever happens: an answer changed since cannot be undone.
    request.session[_answers_key(project)] = answers[:-1]
    events = Judgement.objects.select_related("query", "document")
    last = events.filter(pk=answers[-1]["id"], rater=request.user).first()
    try:
        if last is None:
            raise ValidationError("That answer is no longer in the log.")
        now = judgement_undo(rater=request.user, judgement=last)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect("judgements:rate", slug=slug)
    # Tagged, so that the rating panel leaves it out where its own note says the same.
    messages.success(request, f"Undone: {last.query} · {last.document}.", extra_tags="undo")
    request.session[_restore_key(project)] = {
        "query": last.query_id,
        "document": last.document_id,
        "answer": _answer_value(last),
        "had": _answer_label(project, last),
        "now": "" if now.kind == Judgement.Kind.RETRACT else _answer_label(project, now),
    }
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
    # A query's text, or its id as the team writes it (an exact match).
    needle = request.GET.get("q", "").strip()[:200]
    answers = (
        Judgement.objects.for_project(project)
        .filter(rater=request.user)
        .exclude(kind=Judgement.Kind.RETRACT)
        .still_current()
        .select_related("query", "document")
        # created_at alone keeps the rater index's order, so a page is read, not sorted.
        .order_by("-created_at")
    )
    if needle:
        answers = answers.filter(Q(query__text__icontains=needle) | Q(query__external_id=needle))
    rows = list(answers[(number - 1) * PAGE_SIZE : number * PAGE_SIZE + 1])
    has_next, rows = len(rows) > PAGE_SIZE, rows[:PAGE_SIZE]
    _attach_histories(project, request.user, rows)
    ctx = {
        "project": project,
        "page": Window(number=number, has_next=has_next),
        "rows": [(answer, _answer_label(project, answer)) for answer in rows],
        # Counted up to a bound: a long history is slow to count whole (see Window).
        "total": answers[: TOTAL_BOUND + 1].count(),
        "total_bound": TOTAL_BOUND,
        "q": needle,
        "query_string": urlencode({"q": needle}) if needle else "",
        "choices": answer_choices(project),
        "is_analyst": is_analyst(request.user),
    }
    return render(request, "judgements/my_judgements.html", ctx)


def _attach_histories(project: Project, rater, answers: list[Judgement]) -> None:
    """Give each answer the rater's every event on its pair, oldest first, as
    ``history``: (when, what, note) rows, so that the page shows how it came to be."""
    if not answers:
        return
    pairs = Q()
    for answer in answers:
        pairs |= Q(query_id=answer.query_id, document_id=answer.document_id)
    events = Judgement.objects.filter(pairs, rater=rater).order_by("created_at", "id")
    found: dict[tuple[int, int], list] = {}
    for event in events:
        row = (event.created_at, _answer_label(project, event), event.note)
        found.setdefault((event.query_id, event.document_id), []).append(row)
    for answer in answers:
        answer.history = found.get((answer.query_id, answer.document_id), [])


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
    # Without a choice, the page shows what its unticked, blank-depth form says.
    depth = chosen.get("depth") or project.pool_depth
    unjudged = bool(chosen.get("unjudged"))
    rows = bulk_pairs(rater=request.user, query=query, depth=depth, unjudged=unjudged)
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    ids = [row.document_id for row in page]
    initial = {f"answer-{row.document_id}": row.answer for row in page}
    form = BulkAnswerForm(request.POST or None, project=project, document_ids=ids, initial=initial)
    if request.method == "POST" and form.is_valid():
        return _bulk_save(request, project, query, form)
    documents = Document.objects.in_bulk(ids)
    for document_id, document in documents.items():
        # Each select is named by its document, as a screen reader reads it out of the row.
        field = form.fields[f"answer-{document_id}"]
        field.widget.attrs["aria-label"] = f"Your answer for {document}"
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
