"""The search engines' pages. Who may see them: analysts (and admins); raters get 403,
anonymous users the login page. A secret typed here is never shown again."""

import difflib

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from judgements.engines import schedules, services, tries
from judgements.engines.capture import capture_start
from judgements.engines.forms import CaptureForm, EndpointForm, KeepForm, ScheduleForm, TryForm
from judgements.engines.live import live_query
from judgements.models import Capture, CaptureSchedule, Project, SearchEndpoint
from judgements.roles import Role, role_required

RECENT_CAPTURES = 30


def _endpoint(slug: str, pk: int) -> SearchEndpoint:
    return get_object_or_404(
        SearchEndpoint.objects.select_related("project"), pk=pk, project__slug=slug
    )


def _apply_errors(form, error: ValidationError) -> None:
    for field, problems in error.message_dict.items():
        for problem in problems:
            form.add_error(field if field in form.fields else None, problem)


@role_required(Role.ANALYST)
def endpoints(request, slug):
    project = get_object_or_404(Project, slug=slug)
    form = EndpointForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            endpoint = services.endpoint_create(
                project=project,
                user=request.user,
                template=form.cleaned_data["template"],
                secret=form.cleaned_data["secret"],
                **form.service_fields(),
            )
        except ValidationError as error:
            _apply_errors(form, error)
        else:
            messages.success(request, f"Endpoint {endpoint.name} saved: try it, or capture.")
            return redirect(endpoint)
    rows = [(endpoint, endpoint.captures.first()) for endpoint in project.search_endpoints.all()]
    ctx = {"project": project, "form": form, "rows": rows}
    return render(
        request, "judgements/engines/endpoints.html", ctx, status=400 if form.errors else 200
    )


@role_required(Role.ANALYST)
def endpoint(request, slug, endpoint_id):
    endpoint = _endpoint(slug, endpoint_id)
    form = EndpointForm(request.POST or None, instance=endpoint, new=False)
    if request.method == "POST" and form.is_valid():
        try:
            services.endpoint_update(
                endpoint=endpoint, secret=form.cleaned_data["secret"], **form.service_fields()
            )
        except ValidationError as error:
            _apply_errors(form, error)
        else:
            messages.success(request, "Saved the endpoint's settings.")
            return redirect(endpoint)
    if form.errors:
        endpoint.refresh_from_db()
    ctx = {
        "project": endpoint.project,
        "endpoint": endpoint,
        "form": form,
        "capture_form": CaptureForm(),
        "schedule_form": ScheduleForm(),
        "captures": endpoint.captures.select_related("template", "result_list")[:RECENT_CAPTURES],
        "versions": endpoint.templates.all(),
        "schedules": [(s, schedules.explain(s.expression)) for s in endpoint.schedules.all()],
    }
    return render(
        request, "judgements/engines/endpoint.html", ctx, status=400 if form.errors else 200
    )


@role_required(Role.ANALYST)
@require_POST
def capture_new(request, slug, endpoint_id):
    endpoint = _endpoint(slug, endpoint_id)
    form = CaptureForm(request.POST)
    try:
        if not form.is_valid():
            raise ValidationError("The name is too long.")
        query_ids = services.query_ids_named(endpoint.project, form.cleaned_data["queries"])
        capture = capture_start(
            endpoint=endpoint,
            user=request.user,
            name=form.cleaned_data["name"],
            query_ids=query_ids,
        )
    except ValidationError as error:
        messages.error(request, "Nothing was captured: " + " ".join(error.messages))
        return redirect(endpoint)
    return redirect(capture)


@role_required(Role.ANALYST)
def try_page(request, slug, endpoint_id):
    endpoint = _endpoint(slug, endpoint_id)
    project = endpoint.project
    version = endpoint.templates.filter(version=request.GET.get("version") or 0).first()
    initial = {
        "template": (version or endpoint.template).body if endpoint.template else "",
        "baseline": _default_baseline(endpoint),
    }
    form = TryForm(request.POST or None, project=project, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            template = services.template_save(
                endpoint=endpoint,
                body=form.cleaned_data["template"],
                user=request.user,
                note=form.cleaned_data["note"],
            )
            capture = capture_start(
                endpoint=endpoint,
                user=request.user,
                kind=Capture.Kind.TRY,
                template=template,
                baseline=form.cleaned_data["baseline"],
                query_ids=services.query_ids_named(project, form.cleaned_data["queries"]),
            )
        except ValidationError as error:
            _apply_errors(form, error)
        else:
            return redirect(capture)
    ctx = {
        "project": project,
        "endpoint": endpoint,
        "form": form,
        "versions": endpoint.templates.all(),
    }
    return render(request, "judgements/engines/try.html", ctx, status=400 if form.errors else 200)


def _default_baseline(endpoint: SearchEndpoint):
    """The newest capture of the endpoint, else the project's newest result list."""
    kept = (
        endpoint.captures.filter(result_list__isnull=False).select_related("result_list").first()
    )
    if kept is not None:
        return kept.result_list
    return endpoint.project.result_lists.order_by("-captured_at").first()


def _capture(slug: str, pk: int) -> Capture:
    return get_object_or_404(
        Capture.objects.select_related("endpoint__project", "template", "result_list", "baseline"),
        pk=pk,
        endpoint__project__slug=slug,
    )


@role_required(Role.ANALYST)
def capture(request, slug, capture_id):
    capture = _capture(slug, capture_id)
    report = None
    if capture.is_try and capture.status == Capture.Status.DONE and capture.ranking:
        report = tries.try_evaluate(capture)
    ctx = {
        "project": capture.endpoint.project,
        "endpoint": capture.endpoint,
        "capture": capture,
        "report": report,
        "keep_form": KeepForm(initial={"name": capture.name}),
    }
    return render(request, "judgements/engines/capture.html", ctx)


@role_required(Role.ANALYST)
def capture_progress(request, slug, capture_id):
    capture = _capture(slug, capture_id)
    stage = f"{capture.done:,} of {capture.total:,} queries sent" if capture.total else ""
    return JsonResponse(
        {
            "status": capture.status,
            "percent": capture.percent,
            "stage": stage,
            "failed": capture.failed,
        }
    )


@role_required(Role.ANALYST)
@require_POST
def capture_keep(request, slug, capture_id):
    capture = _capture(slug, capture_id)
    form = KeepForm(request.POST)
    try:
        if not form.is_valid():
            raise ValidationError("The result list needs a name of at most 200 characters.")
        kept = tries.try_keep(capture=capture, name=form.cleaned_data["name"])
    except ValidationError as error:
        messages.error(request, "Not kept: " + " ".join(error.messages))
    else:
        messages.success(
            request, f"Kept as result list {kept.name}; its unjudged hits are queued."
        )
    return redirect(capture)


@role_required(Role.ANALYST)
def templates_compare(request, slug, endpoint_id):
    endpoint = _endpoint(slug, endpoint_id)
    versions = {template.version: template for template in endpoint.templates.all()}
    a = versions.get(_int(request.GET.get("a")))
    b = versions.get(_int(request.GET.get("b")))
    diff = []
    if a is not None and b is not None:
        diff = list(
            difflib.unified_diff(
                a.body.splitlines(),
                b.body.splitlines(),
                f"v{a.version}",
                f"v{b.version}",
                lineterm="",
            )
        )
    runs = {
        version: _latest_mean(template)
        for version, template in versions.items()
        if template in (a, b)
    }
    ctx = {
        "project": endpoint.project,
        "endpoint": endpoint,
        "versions": versions.values(),
        "a": a,
        "b": b,
        "diff": diff,
        "runs": runs,
    }
    return render(request, "judgements/engines/templates_compare.html", ctx)


def _int(value) -> int | None:
    return int(value) if value and str(value).isdigit() else None


def _latest_mean(template):
    """The newest finished try (or capture) of a version, and its mean NDCG now."""
    run = template.captures.filter(status=Capture.Status.DONE).exclude(ranking=[]).first()
    if run is None:
        return None
    return run, tries.try_evaluate(run).mean


@role_required(Role.ANALYST)
@require_POST
def schedule_new(request, slug, endpoint_id):
    endpoint = _endpoint(slug, endpoint_id)
    form = ScheduleForm(request.POST)
    try:
        if not form.is_valid():
            raise ValidationError("Choose daily, weekly or a cron expression.")
        expression = schedules.expression_of(
            form.cleaned_data["every"], form.cleaned_data["expression"]
        )
        schedule = schedules.schedule_create(
            endpoint=endpoint, expression=expression, user=request.user
        )
    except ValidationError as error:
        messages.error(request, "No schedule was added: " + " ".join(error.messages))
    else:
        messages.success(request, f"Scheduled: {schedules.explain(schedule.expression)}.")
    return redirect(endpoint)


@role_required(Role.ANALYST)
@require_POST
def schedule_toggle(request, slug, endpoint_id, schedule_id):
    endpoint = _endpoint(slug, endpoint_id)
    schedule = get_object_or_404(CaptureSchedule, pk=schedule_id, endpoint=endpoint)
    if schedule.paused:
        schedules.schedule_resume(schedule=schedule)
        messages.success(request, "The schedule runs again.")
    else:
        schedules.schedule_pause(schedule=schedule)
        messages.success(request, "The schedule is paused.")
    return redirect(endpoint)


@role_required(Role.ANALYST)
@require_POST
def template_current(request, slug, endpoint_id):
    endpoint = _endpoint(slug, endpoint_id)
    template = get_object_or_404(endpoint.templates, version=_int(request.POST.get("version")))
    services.template_make_current(endpoint=endpoint, template=template)
    messages.success(request, f"Captures and schedules now send template v{template.version}.")
    return redirect(endpoint)


@role_required(Role.ANALYST)
def live(request, slug, endpoint_id, query_id):
    endpoint = _endpoint(slug, endpoint_id)
    project = endpoint.project
    query = get_object_or_404(project.queries, pk=query_id)
    lists = project.result_lists.order_by("-captured_at")
    result_list = lists.filter(pk=_int(request.GET.get("result_list"))).first() or lists.first()
    view = live_query(endpoint=endpoint, query=query, result_list=result_list)
    ctx = {"project": project, "endpoint": endpoint, "view": view, "result_lists": lists[:200]}
    return render(request, "judgements/engines/live.html", ctx)
