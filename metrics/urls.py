from django.urls import path

from config import ids  # noqa: F401 (registers the <id:...> path converter)
from metrics import views

app_name = "metrics"
urlpatterns = [
    path("", views.index, name="index"),
    path("<slug:slug>/", views.overview, name="overview"),
    path("<slug:slug>/compare/", views.compare, name="compare"),
    path("<slug:slug>/compare/export/", views.compare_export, name="compare_export"),
    path("<slug:slug>/raters/", views.raters, name="raters"),
    path("<slug:slug>/series/export/", views.series_export, name="series_export"),
    path(
        "<slug:slug>/raters/request-grades/",
        views.raters_request_grades,
        name="raters_request_grades",
    ),
    path("<slug:slug>/<id:result_list_id>/queries/", views.queries, name="queries"),
    path(
        "<slug:slug>/<id:result_list_id>/queries/export/",
        views.queries_export,
        name="queries_export",
    ),
    path(
        "<slug:slug>/<id:result_list_id>/queries/<id:query_id>/",
        views.query_detail,
        name="query",
    ),
]
