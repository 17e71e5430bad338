"""The engines' pages, added to the "judgements" namespace by judgements.urls."""

from django.urls import path

from config import ids  # noqa: F401 (registers the <id:...> path converter)
from judgements.engines import views

ENDPOINT = "projects/<slug:slug>/engines/<id:endpoint_id>/"
CAPTURE = "projects/<slug:slug>/captures/<id:capture_id>/"

urlpatterns = [
    path("projects/<slug:slug>/engines/", views.endpoints, name="engines"),
    path(ENDPOINT, views.endpoint, name="engine"),
    path(ENDPOINT + "capture/", views.capture_new, name="engine_capture"),
    path(ENDPOINT + "try/", views.try_page, name="engine_try"),
    path(ENDPOINT + "templates/", views.templates_compare, name="engine_templates"),
    path(ENDPOINT + "templates/current/", views.template_current, name="engine_template_current"),
    path(ENDPOINT + "schedules/", views.schedule_new, name="engine_schedule"),
    path(
        ENDPOINT + "schedules/<id:schedule_id>/toggle/",
        views.schedule_toggle,
        name="engine_schedule_toggle",
    ),
    path(ENDPOINT + "live/<id:query_id>/", views.live, name="engine_live"),
    path(CAPTURE, views.capture, name="capture"),
    path(CAPTURE + "progress/", views.capture_progress, name="capture_progress"),
    path(CAPTURE + "keep/", views.capture_keep, name="capture_keep"),
]
