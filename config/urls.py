from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

# Row ids in paths stop at bigint's end: config.ids registers the <id:...> converter.
from config import ids  # noqa: F401

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("metrics/", include("metrics.urls")),
    # The schema and its docs are the same for everyone and read no data: not rate
    # limited, so that loading them needs no database.
    path("api/schema/", SpectacularAPIView.as_view(throttle_classes=[]), name="api-schema"),
    path(
        "api/docs/",
        SpectacularSwaggerSplitView.as_view(
            url_name="api-schema", template_name="api/swagger_ui.html", throttle_classes=[]
        ),
        name="api-docs",
    ),
    path("api/", include("judgements.api_urls")),
    path("", include("judgements.urls")),
]

# A database outage that surfaces outside a view is a 503 too (config.health).
handler500 = "config.health.server_error"
