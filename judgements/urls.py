from django.urls import path

from judgements import views

app_name = "judgements"
urlpatterns = [
    path("", views.home, name="home"),
    path("projects/<slug:slug>/", views.project, name="project"),
]
