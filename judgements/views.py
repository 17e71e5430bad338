from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.shortcuts import get_object_or_404, render

from judgements.models import Judgement, Project
from judgements.roles import Role, is_analyst, role_required


@login_required
def home(request):
    projects = Project.objects.annotate(query_count=Count("queries"))
    ctx = {"projects": projects, "is_analyst": is_analyst(request.user)}
    return render(request, "judgements/home.html", ctx)


@role_required(Role.ANALYST)
def project(request, slug):
    project = get_object_or_404(Project, slug=slug)
    ctx = {
        "project": project,
        "query_count": project.queries.count(),
        "document_count": project.documents.count(),
        "result_lists": project.result_lists.annotate(hit_count=Count("hits")),
        "judgement_count": Judgement.objects.for_project(project).count(),
        "rater_count": Judgement.objects.for_project(project).values("rater").distinct().count(),
    }
    return render(request, "judgements/project.html", ctx)
