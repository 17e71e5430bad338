"""Projects, their settings, uploads, downloads and background jobs, for analysts.

Who may use these pages: analysts and admins; raters get 403, anonymous visitors the
login page. Every view validates a form, calls one service and renders or redirects.
"""

from django.conf import settings
from django.contrib import messages
from django.db.models import Count
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from config.api.errors import import_errors
from judgements import jobs, leases
from judgements.guidelines import guidelines_html
from judgements.importers import ImportRejected
from judgements.models import Job, Judgement, Project, ResultList
from judgements.roles import Role, role_required
from judgements.uploads import UPLOADS, summary
from judgements.workspace.exports import project_exports
from judgements.workspace.forms import ProjectDeleteForm, ProjectForm, UploadForm

MAX_PREVIEW_CHARACTERS = 100_000
RECENT_JOBS = 10


@role_required(Role.ANALYST)
def project_new(request):
    form = ProjectForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        project = form.save()
        messages.success(request, f"Created {project.name}. Next: upload its queries.")
        return redirect("judgements:uploads", slug=project.slug)
    return render(request, "judgements/project_form.html", {"form": form, "is_analyst": True})


@role_required(Role.ANALYST)
def project_settings(request, slug):
    project = get_object_or_404(Project, slug=slug)
    form = ProjectForm(request.POST or None, instance=project)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "Saved the project's settings.")
        return redirect(project)
    ctx = {"form": form, "project": project, "is_analyst": True}
    return render(request, "judgements/project_form.html", ctx, status=400 if form.errors else 200)


@require_POST
@role_required(Role.ANALYST)
def guidelines_preview(request):
    """The guidelines as raters will see them: the rating page's own Markdown and
    sanitiser, so the preview cannot differ from what raters get."""
    text = request.POST.get("text", "")[:MAX_PREVIEW_CHARACTERS]
    return HttpResponse(guidelines_html(text), content_type="text/html; charset=utf-8")


@role_required(Role.ANALYST)
def project(request, slug):
    project = get_object_or_404(Project, slug=slug)
    result_lists = project.result_lists.annotate(hit_count=Count("hits"))
    # Machine judges' answers have their own page; these count human raters' events.
    events = Judgement.objects.for_project(project).human()
    ctx = {
        "project": project,
        "query_count": project.queries.count(),
        "document_count": project.documents.count(),
        "result_lists": result_lists,
        "judgement_count": events.count(),
        # People: an import's account (inactive, never signed in) is not one.
        "rater_count": events.exclude(rater__is_active=False, rater__last_login=None)
        .values("rater")
        .distinct()
        .count(),
        "exports": project_exports(project, result_lists),
        "jobs": project.jobs.filter(status__in=jobs.ACTIVE),
        "deleting": jobs.deleting(project),
        "is_analyst": True,
    }
    return render(request, "judgements/project.html", ctx)


@role_required(Role.ANALYST)
def project_delete(request, slug):
    project = get_object_or_404(Project, slug=slug)
    form = ProjectDeleteForm(request.POST or None, project=project)
    if request.method == "POST" and form.is_valid():
        job = jobs.deleting(project)
        job = job or jobs.project_delete_start(project=project, user=request.user)
        return redirect(job)
    ctx = {
        "project": project,
        "form": form,
        "counts": {
            "queries": project.queries.count(),
            "documents": project.documents.count(),
            "result lists": project.result_lists.count(),
            "judgement events": Judgement.objects.for_project(project).count(),
        },
        "is_analyst": True,
    }
    status = 400 if form.errors else 200
    return render(request, "judgements/project_delete.html", ctx, status=status)


@role_required(Role.ANALYST)
def result_list_delete(request, slug, pk):
    result_list = get_object_or_404(ResultList, pk=pk, project__slug=slug)
    if request.method == "POST":
        job = jobs.result_list_delete_start(result_list=result_list, user=request.user)
        return redirect(job)
    ctx = {
        "project": result_list.project,
        "result_list": result_list,
        "hit_count": result_list.hits.count(),
        "is_analyst": True,
    }
    return render(request, "judgements/result_list_delete.html", ctx)


@role_required(Role.ANALYST)
def uploads(request, slug):
    project = get_object_or_404(Project, slug=slug)
    return _uploads_page(request, project, {})


def _uploads_page(request, project, forms: dict, errors=None, status=200):
    sections = [
        {
            "upload": upload,
            "form": forms.get(kind) or UploadForm(upload=upload),
            "errors": _in_line_order(import_errors(errors)) if errors and kind in forms else None,
            "file_name": request.FILES["file"].name if errors and kind in forms else "",
            "url": reverse("judgements:upload", args=[project.slug, kind]),
        }
        for kind, upload in UPLOADS.items()
    ]
    ctx = {
        "project": project,
        "sections": sections,
        "recent": project.jobs.exclude(kind__startswith="delete")[:RECENT_JOBS],
        "background_bytes": settings.UPLOAD_BACKGROUND_BYTES,
        "query_count": project.queries.count(),
        "is_analyst": True,
    }
    return render(request, "judgements/uploads.html", ctx, status=status)


@require_POST
@role_required(Role.ANALYST)
def upload(request, slug, kind):
    project = get_object_or_404(Project, slug=slug)
    if kind not in UPLOADS:
        return redirect("judgements:uploads", slug=slug)
    form = UploadForm(request.POST, request.FILES, upload=UPLOADS[kind])
    if not form.is_valid():
        return _uploads_page(request, project, {kind: form}, status=400)
    files = form.files_by_part()
    if sum(file.size for file in files.values()) > settings.UPLOAD_BACKGROUND_BYTES:
        job = jobs.job_start(
            kind=kind,
            label=files["file"].name,
            user=request.user,
            project=project,
            options=form.options(),
            files=files,
        )
        return redirect(job)
    try:
        result = UPLOADS[kind].run(
            project=project,
            files={part: file.chunks(jobs.BLOCK_BYTES) for part, file in files.items()},
            user=request.user,
            options=form.options(),
        )
    except ImportRejected as rejected:
        return _uploads_page(request, project, {kind: form}, errors=rejected, status=400)
    text = _summary_text(kind, files["file"].name, summary(kind, result))
    messages.success(request, text, extra_tags=kind)
    return redirect(f"{reverse('judgements:uploads', args=[slug])}#{kind}")


def _in_line_order(errors: list[dict]) -> list[dict]:
    """Errors by line, those of no line (the file's, "… and N more") last."""
    return sorted(errors, key=lambda error: (error["line"] is None, error["line"] or 0))


def _summary_text(kind: str, name: str, counts: dict) -> str:
    parts = [
        f"{value} {label}" if isinstance(value, int) else f"{label} {value}"
        for label, value in summary_lines(counts)
    ]
    return f"{UPLOADS[kind].title} from {name}: {', '.join(parts)}."


def summary_lines(counts: dict) -> list[tuple[str, object]]:
    """(label, value) of an import's summary, for people."""
    labels = {
        "rows": "rows read",
        "created": "created",
        "unchanged": "unchanged",
        "updated": "updated",
        "skipped": "skipped (stored already)",
        "unmatched": "unmatched query texts",
        "rater": "as rater",
    }
    lines = [(label, counts[key]) for key, label in labels.items() if key in counts]
    if "result_list" in counts:
        lines.append(("result list", counts["result_list"]["name"]))
    if "deleted" in counts:
        lines.append(("deleted", counts["deleted"]))
    return lines


@role_required(Role.ANALYST)
def job(request, job_id):
    job = get_object_or_404(Job.objects.select_related("project", "created_by"), pk=job_id)
    ctx = {
        "job": job,
        "project": job.project,
        "lines": summary_lines(job.result),
        "worker_lost": job.worker_lost,
        "lease_seconds": leases.lease_seconds(),
        "status_url": reverse("api:job", args=[job.pk]),
        "is_analyst": True,
    }
    return render(request, "judgements/job.html", ctx)
