from django.urls import path

from judgements import views

app_name = "judgements"
urlpatterns = [
    path("", views.home, name="home"),
    path("start/", views.start, name="start"),
    # Analyst pages live under projects/; the rater's pages under rate/.
    path("projects/<slug:slug>/", views.project, name="project"),
    path("projects/<slug:slug>/bulk/", views.bulk, name="bulk"),
    path("projects/<slug:slug>/raters/", views.raters, name="raters"),
    path("rate/<slug:slug>/", views.rate, name="rate"),
    path("rate/<slug:slug>/answer/", views.rate_answer, name="rate_answer"),
    path("rate/<slug:slug>/skip/", views.rate_skip, name="rate_skip"),
    path("rate/<slug:slug>/undo/", views.rate_undo, name="rate_undo"),
    path("rate/<slug:slug>/release/", views.rate_release, name="rate_release"),
    path("rate/<slug:slug>/mine/", views.my_judgements, name="my_judgements"),
]
