from django.urls import path, re_path

from config import ids  # noqa: F401 (registers the <id:...> path converter)
from config.api import errors, tokens
from judgements.api import catalogue, judging, projects
from judgements.engines import api_urls as engines_api
from judgements.machine import api as machine_api
from metrics import api_urls as metrics_api
from searchlogs import api_urls as searchlogs_api

app_name = "api"
urlpatterns = [
    path("token/", tokens.token_page, name="token"),
    path("projects/", projects.ProjectListApi.as_view(), name="projects"),
    path("projects/<slug:slug>/", projects.ProjectDetailApi.as_view(), name="project"),
    path("jobs/<uuid:pk>/", projects.JobDetailApi.as_view(), name="job"),
    path("projects/<slug:slug>/queries/", catalogue.QueryListApi.as_view(), name="queries"),
    path(
        "projects/<slug:slug>/queries/import/",
        catalogue.QueryImportApi.as_view(),
        name="queries-import",
    ),
    path("projects/<slug:slug>/documents/", catalogue.DocumentListApi.as_view(), name="documents"),
    path(
        "projects/<slug:slug>/documents/import/",
        catalogue.DocumentImportApi.as_view(),
        name="documents-import",
    ),
    path(
        "projects/<slug:slug>/result-lists/",
        catalogue.ResultListListApi.as_view(),
        name="result-lists",
    ),
    path(
        "projects/<slug:slug>/result-lists/import/",
        catalogue.ResultListImportApi.as_view(),
        name="result-lists-import",
    ),
    path("result-lists/<id:pk>/", catalogue.ResultListDetailApi.as_view(), name="result-list"),
    path("result-lists/<id:pk>/hits/", catalogue.HitListApi.as_view(), name="hits"),
    path(
        "result-lists/<id:pk>/export/",
        catalogue.ResultListExportApi.as_view(),
        name="result-list-export",
    ),
    path("judgements/", judging.JudgementListApi.as_view(), name="judgements"),
    path("judgements/create/", judging.JudgementCreateApi.as_view(), name="judgement-create"),
    path("projects/<slug:slug>/next/", judging.NextPairApi.as_view(), name="next"),
    path("projects/<slug:slug>/grades/", judging.GradeListApi.as_view(), name="grades"),
    path("projects/<slug:slug>/consensus/", judging.ConsensusListApi.as_view(), name="consensus"),
    path(
        "projects/<slug:slug>/judgements/import/",
        judging.JudgementImportApi.as_view(),
        name="judgements-import",
    ),
    path(
        "projects/<slug:slug>/judgements/export/",
        judging.JudgementExportApi.as_view(),
        name="judgements-export",
    ),
    path(
        "projects/<slug:slug>/grades/export/",
        judging.GradeExportApi.as_view(),
        name="grades-export",
    ),
    path(
        "projects/<slug:slug>/consensus/export/",
        judging.ConsensusExportApi.as_view(),
        name="consensus-export",
    ),
    path("projects/<slug:slug>/judges/", machine_api.JudgeListApi.as_view(), name="judges"),
    path("judges/<id:pk>/", machine_api.JudgeDetailApi.as_view(), name="judge"),
    path("judges/<id:pk>/key/", machine_api.JudgeKeyApi.as_view(), name="judge-key"),
    *engines_api.urlpatterns,
    *searchlogs_api.urlpatterns,
    *metrics_api.urlpatterns,
    # Anything else under /api/ answers in the API's error shape, not an HTML page.
    re_path(r"^[\s\S]*$", errors.not_found),
]
