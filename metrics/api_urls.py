"""The metrics endpoints, included in the API's URLs (judgements/api_urls.py)."""

from django.urls import path

from config import ids  # noqa: F401 (registers the <id:...> path converter)
from metrics.api import series, views

urlpatterns = [
    path(
        "result-lists/<id:pk>/metrics/",
        views.ResultListMetricsApi.as_view(),
        name="result-list-metrics",
    ),
    path(
        "result-lists/<id:pk>/series/",
        series.ResultListSeriesApi.as_view(),
        name="result-list-series",
    ),
    path(
        "result-lists/<id:pk>/queries/<id:query_id>/series/",
        series.QuerySeriesApi.as_view(),
        name="query-series",
    ),
    path(
        "result-lists/<id:pk>/queries/<id:query_id>/working/",
        series.QueryWorkingApi.as_view(),
        name="query-working",
    ),
    path(
        "result-lists/<id:pk>/unjudged/",
        views.ResultListUnjudgedApi.as_view(),
        name="result-list-unjudged",
    ),
    path("projects/<slug:slug>/compare/", views.CompareApi.as_view(), name="compare"),
]
