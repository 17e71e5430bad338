"""The engines' API routes, added to the "api" namespace by judgements.api_urls."""

from django.urls import path

from config import ids  # noqa: F401 (registers the <id:...> path converter)
from judgements.engines import api

urlpatterns = [
    path("projects/<slug:slug>/endpoints/", api.EndpointListApi.as_view(), name="endpoints"),
    path("endpoints/<id:pk>/", api.EndpointDetailApi.as_view(), name="endpoint"),
    path("endpoints/<id:pk>/templates/", api.TemplateSaveApi.as_view(), name="endpoint-templates"),
    path("endpoints/<id:pk>/captures/", api.CaptureStartApi.as_view(), name="endpoint-captures"),
    path("endpoints/<id:pk>/schedules/", api.ScheduleListApi.as_view(), name="endpoint-schedules"),
    path("endpoints/<id:pk>/live/", api.LiveApi.as_view(), name="endpoint-live"),
    path("captures/<id:pk>/", api.CaptureDetailApi.as_view(), name="capture"),
    path("captures/<id:pk>/keep/", api.CaptureKeepApi.as_view(), name="capture-keep"),
    path("schedules/<id:pk>/", api.ScheduleDetailApi.as_view(), name="schedule"),
]
