"""Dashboards. Who may see them: analysts (and admins); raters get 403, anonymous users
the login page. Every view validates a GET form, calls one selector and renders; invalid
parameters render the form's message with status 400."""

from django.contrib import messages
from django.db.models import Max
from django.http import HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_POST

from judgements.api.catalogue import streamed
from judgements.machine.gate import grades_of
from judgements.models import Project, Query, RankedHits, ResultList
from judgements.queue import queue_request_grades
from judgements.roles import Role, role_required
from judgements.workspace.raters import raters_management
from metrics import dashboards
from metrics.dashboards.agreement import disputed_pairs
from metrics.dashboards.labels import MEASURES, parameter_line
from metrics.exports import (
    COMPARE_COLUMNS,
    QUERY_COLUMNS,
    compare_rows,
    csv_response,
    query_rows,
)
from metrics.exports import series_export as series_export_of
from metrics.forms import (
    ComparePageForm,
    DashboardForm,
    GradeRequestForm,
    QueryTableForm,
    RatersForm,
)
from metrics.sources import GRADES_LABELS
from searchlogs.dashboards import online_for_query, online_overview


def _page(request, template, form, build, **context):
    """Render ``template`` with the data ``build(form)`` returns, or the form's errors."""
    context = {**context, "form": form, "dashboards_nav": True}
    if not form.is_valid():
        return render(request, template, context, status=400)
    spec = form.cleaned_data.get("spec")
    params = parameter_line(spec) if spec else form.parameter_line()
    if "grades" in form.cleaned_data:
        params = [*params, form.chosen_grades.label]
    return render(
        request, template, {**context, "spec": spec, "params": params, "data": build(form)}
    )


@role_required(Role.ANALYST)
def index(request):
    projects = Project.objects.order_by("name")
    return render(request, "metrics/index.html", {"projects": projects, "dashboards_nav": True})


@role_required(Role.ANALYST)
def overview(request, slug):
    project = get_object_or_404(Project, slug=slug)
    form = DashboardForm(request.GET, project=project)

    def build(form):
        return dashboards.project_overview(
            project,
            form.spec,
            as_of=form.moment,
            grades=form.chosen_grades,
            measures=tuple(form.chosen_measures),
        )

    online = online_overview(project)
    return _page(request, "metrics/overview.html", form, build, project=project, online=online)


@role_required(Role.ANALYST)
def queries(request, slug, result_list_id):
    project = get_object_or_404(Project, slug=slug)
    result_list = get_object_or_404(ResultList, pk=result_list_id, project=project)
    form = QueryTableForm(request.GET, project=project)

    def build(form):
        return dashboards.query_table(
            project,
            result_list,
            form.spec,
            as_of=form.moment,
            sort=form.ordering,
            text=form.cleaned_data["q"],
            page=request.GET.get("page"),
            grades=form.chosen_grades,
            measures=tuple(form.chosen_measures),
        )

    context = {"project": project, "result_list": result_list}
    return _page(request, "metrics/query_table.html", form, build, **context)


@role_required(Role.ANALYST)
def queries_export(request, slug, result_list_id):
    """Every query of the per-query table (filtered and sorted as asked) as CSV, with
    every measure beside NDCG whatever the page shows."""
    project = get_object_or_404(Project, slug=slug)
    result_list = get_object_or_404(ResultList, pk=result_list_id, project=project)
    form = QueryTableForm(request.GET, project=project)
    if not form.is_valid():
        return HttpResponseBadRequest(_errors(form), content_type="text/plain")
    table = dashboards.query_table(
        project,
        result_list,
        form.spec,
        as_of=form.moment,
        sort=form.ordering,
        text=form.cleaned_data["q"],
        page=None,
        grades=form.chosen_grades,
        measures=tuple(MEASURES),
        page_size=None,
    )
    filename = f"{project.slug}-{result_list.pk}-queries.csv"
    return csv_response(filename, QUERY_COLUMNS, query_rows(table, form.spec))


def _errors(form) -> str:
    return "; ".join(
        f"{name}: {message}" if name != "__all__" else message
        for name, messages_ in form.errors.items()
        for message in messages_
    )


@role_required(Role.ANALYST)
def query_detail(request, slug, result_list_id, query_id):
    project = get_object_or_404(Project, slug=slug)
    result_list = get_object_or_404(ResultList, pk=result_list_id, project=project)
    query = get_object_or_404(Query, pk=query_id, project=project)
    form = DashboardForm(request.GET, project=project)

    def build(form):
        return dashboards.query_detail(
            project,
            result_list,
            query,
            form.spec,
            as_of=form.moment,
            grades=form.chosen_grades,
            measures=tuple(form.chosen_measures),
        )

    context = {"project": project, "result_list": result_list, "query": query}
    context["online"] = online_for_query(project, query)
    return _page(request, "metrics/query_detail.html", form, build, **context)


@role_required(Role.ANALYST)
def compare(request, slug):
    project = get_object_or_404(Project, slug=slug)
    lists = project.result_lists.count()
    if lists < 2:
        # Nothing to compare yet is a state of the project, not a bad request.
        context = {"project": project, "too_few": lists, "dashboards_nav": True}
        return render(request, "metrics/compare.html", context)
    form = ComparePageForm(request.GET, project=project)

    def build(form):
        lists = project.result_lists.in_bulk([form.cleaned_data["a"], form.cleaned_data["b"]])
        return dashboards.comparison(
            project,
            lists[form.cleaned_data["a"]],
            lists[form.cleaned_data["b"]],
            form.spec,
            as_of=form.moment,
            page=request.GET.get("page"),
            grades=form.chosen_grades,
            measures=tuple(form.chosen_measures),
        )

    return _page(request, "metrics/compare.html", form, build, project=project)


@role_required(Role.ANALYST)
def compare_export(request, slug):
    """Every query the comparison pairs, worst change first, as CSV: A's and B's NDCG
    and every other measure of both."""
    project = get_object_or_404(Project, slug=slug)
    if project.result_lists.count() < 2:
        message = "Comparing needs two result lists."
        return HttpResponseBadRequest(message, content_type="text/plain")
    form = ComparePageForm(request.GET, project=project)
    if not form.is_valid():
        return HttpResponseBadRequest(_errors(form), content_type="text/plain")
    lists = project.result_lists.in_bulk([form.cleaned_data["a"], form.cleaned_data["b"]])
    found = dashboards.comparison(
        project,
        lists[form.cleaned_data["a"]],
        lists[form.cleaned_data["b"]],
        form.spec,
        as_of=form.moment,
        page=None,
        grades=form.chosen_grades,
        measures=tuple(MEASURES),
    )
    filename = f"{project.slug}-compare-{found.a.result_list.pk}-{found.b.result_list.pk}.csv"
    return csv_response(filename, COMPARE_COLUMNS, compare_rows(found, form.spec))


@role_required(Role.ANALYST)
def raters(request, slug):
    """The one raters page: accounts and who may rate (judgements.workspace.raters),
    progress, can't-tell and skip counts, and agreement as of a moment."""
    project = get_object_or_404(Project, slug=slug)
    form = RatersForm(request.GET, project=project)
    report = None
    if form.is_valid():
        policy = form.cleaned_data["consensus"]
        report = dashboards.raters_report(project, policy=policy, as_of=form.moment)
    context = {
        **raters_management(request, project, report),
        "form": form,
        "data": report,
        "params": form.parameter_line() if report else [],
        "dashboards_nav": True,
    }
    if report is not None:
        shown = [pair.query_id for pair in report.disputed] + [q.query_id for q in report.queries]
        links = query_links(project, shown)
        context["disputed"] = [(pair, links.get(pair.query_id)) for pair in report.disputed]
        context["query_rows"] = [(row, links.get(row.query_id)) for row in report.queries]
    response = render(request, "metrics/raters.html", context, status=200 if report else 400)
    if context["invitation"]:
        # The invitation link is a password: no cache may keep the page that shows it.
        add_never_cache_headers(response)
    return response


def query_links(project: Project, query_ids) -> dict[int, str]:
    """The query detail page of each query, in the newest result list that returned it."""
    newest = (
        RankedHits.objects.filter(query_id__in=set(query_ids))
        .values("query_id")
        .annotate(result_list=Max("result_list_id"))
        .values_list("query_id", "result_list")
    )
    return {
        query: reverse("metrics:query", args=[project.slug, result_list, query])
        for query, result_list in newest
    }


@role_required(Role.ANALYST)
def series_export(request, slug):
    """The metric series of every result list, as CSV: stored, or replayed from the log
    for ``?grades=machine`` or ``both``."""
    project = get_object_or_404(Project, slug=slug)
    chosen = request.GET.get("grades") or "human"
    if chosen not in GRADES_LABELS:
        choices = ", ".join(GRADES_LABELS)
        message = f"grades: {chosen!r} is not one of {choices}."
        return HttpResponseBadRequest(message, content_type="text/plain")
    grades = grades_of(project, chosen)
    return streamed(series_export_of(project=project, grades=grades))


@role_required(Role.ANALYST)
@require_POST
def raters_request_grades(request, slug):
    """Send one disputed pair, or every pair disputed now, back to the queue for one more
    grade; then back to the Raters page with a message saying what happened."""
    project = get_object_or_404(Project, slug=slug)
    form = GradeRequestForm(request.POST)
    if not form.is_valid():
        errors = "; ".join(message for field in form.errors.values() for message in field)
        messages.error(request, f"Nothing was sent back: {errors}")
        return redirect("metrics:raters", slug=slug)
    if form.cleaned_data["all"]:
        pairs = disputed_pairs(project)
    else:
        pairs = [(form.cleaned_data["query"], form.cleaned_data["document"])]
    result = queue_request_grades(project=project, pairs=pairs, requested_by=request.user)
    messages.success(request, result.message)
    return redirect("metrics:raters", slug=slug)
