from django.contrib import admin
from django.urls import include, path, register_converter
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from config.ids import IdConverter

# Row ids in paths stop at bigint's end (config.ids); registered before the apps' URLs load.
register_converter(IdConverter, "id")

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("metrics/", include("metrics.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/", include("judgements.api_urls")),
    path("", include("judgements.urls")),
]
