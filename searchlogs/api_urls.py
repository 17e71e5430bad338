"""The search log's API routes, added to the "api" namespace by judgements.api_urls."""

from django.urls import path

from searchlogs import api

urlpatterns = [
    path(
        "projects/<slug:slug>/search-log/import/",
        api.SearchLogImportApi.as_view(),
        name="search-log-import",
    ),
    path(
        "projects/<slug:slug>/search-log/metrics/",
        api.SearchLogMetricsApi.as_view(),
        name="search-log-metrics",
    ),
    path(
        "projects/<slug:slug>/search-log/metrics/export/",
        api.SearchLogMetricsExportApi.as_view(),
        name="search-log-metrics-export",
    ),
]
