from django.urls import path

from config import ids  # noqa: F401 (registers the <id:...> path converter)
from judgements import views
from judgements.engines import urls as engines
from judgements.machine import views as machine
from judgements.workspace import raters as workspace_raters
from judgements.workspace import views as workspace

app_name = "judgements"
urlpatterns = [
    path("", views.home, name="home"),
    path("start/", views.start, name="start"),
    # Analyst pages live under projects/; the rater's pages under rate/.
    path("projects/new/", workspace.project_new, name="project_new"),
    path("projects/guidelines-preview/", workspace.guidelines_preview, name="guidelines_preview"),
    path("projects/<slug:slug>/", workspace.project, name="project"),
    path("projects/<slug:slug>/settings/", workspace.project_settings, name="project_settings"),
    path("projects/<slug:slug>/delete/", workspace.project_delete, name="project_delete"),
    path("projects/<slug:slug>/uploads/", workspace.uploads, name="uploads"),
    path("projects/<slug:slug>/uploads/<str:kind>/", workspace.upload, name="upload"),
    path(
        "projects/<slug:slug>/result-lists/<id:pk>/delete/",
        workspace.result_list_delete,
        name="result_list_delete",
    ),
    path("projects/<slug:slug>/bulk/", views.bulk, name="bulk"),
    path("projects/<slug:slug>/raters/", workspace_raters.raters, name="raters"),
    path("projects/<slug:slug>/raters/new/", workspace_raters.rater_new, name="rater_new"),
    path(
        "projects/<slug:slug>/raters/invite/", workspace_raters.rater_invite, name="rater_invite"
    ),
    path("projects/<slug:slug>/raters/role/", workspace_raters.rater_role, name="rater_role"),
    path(
        "projects/<slug:slug>/raters/access/", workspace_raters.raters_access, name="raters_access"
    ),
    path("projects/<slug:slug>/judges/", machine.judges, name="machine_judges"),
    path("projects/<slug:slug>/judges/gate/", machine.gate_settings, name="machine_gate"),
    path("projects/<slug:slug>/judges/<id:judge_id>/", machine.judge, name="machine_judge"),
    path(
        "projects/<slug:slug>/judges/<id:judge_id>/key/",
        machine.key_settings,
        name="machine_key",
    ),
    path(
        "projects/<slug:slug>/judges/<id:judge_id>/progress/",
        machine.run_progress,
        name="machine_progress",
    ),
    path("projects/<slug:slug>/judges/<id:judge_id>/runs/", machine.run_start, name="machine_run"),
    path(
        "projects/<slug:slug>/judges/<id:judge_id>/runs/<id:run_id>/pause/",
        machine.run_pause,
        name="machine_pause",
    ),
    path(
        "projects/<slug:slug>/judges/<id:judge_id>/runs/<id:run_id>/resume/",
        machine.run_resume,
        name="machine_resume",
    ),
    path(
        "projects/<slug:slug>/judges/<id:judge_id>/overrule/",
        machine.overrule,
        name="machine_overrule",
    ),
    path(
        "projects/<slug:slug>/judges/<id:judge_id>/certification/",
        machine.certification_page,
        name="machine_certification",
    ),
    path(
        "projects/<slug:slug>/judges/<id:judge_id>/canaries/",
        machine.canaries_run,
        name="machine_canaries",
    ),
    *engines.urlpatterns,
    path("jobs/<uuid:job_id>/", workspace.job, name="job"),
    path(
        "invitation/<uidb64>/<token>/",
        workspace_raters.InvitationView.as_view(),
        name="invitation",
    ),
    path("rate/<slug:slug>/", views.rate, name="rate"),
    path("rate/<slug:slug>/answer/", views.rate_answer, name="rate_answer"),
    path("rate/<slug:slug>/skip/", views.rate_skip, name="rate_skip"),
    path("rate/<slug:slug>/undo/", views.rate_undo, name="rate_undo"),
    path("rate/<slug:slug>/release/", views.rate_release, name="rate_release"),
    path("rate/<slug:slug>/mine/", views.my_judgements, name="my_judgements"),
]
