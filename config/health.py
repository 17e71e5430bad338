"""Health checks and database outages.

``/health/`` answers before any other middleware (no host check, no HTTPS redirect,
no session), so that a container's health check can call it on 127.0.0.1: 200 when a
query reaches the database, 503 when not. While the database is unreachable, any
request that needs it answers 503 with ``Retry-After`` (JSON in the API's error shape
under /api/, a plain page elsewhere) instead of a 500: the outage is the server's
state, not a bug, and clients should come back. A process keeps its connection
between requests, but Django checks it before reuse (``CONN_HEALTH_CHECKS``) and
opens a new one when it broke, so the app recovers by itself once the database is back.
"""

import logging
import sys

from django.db import InterfaceError, OperationalError, connection
from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.views import defaults

HEALTH_PATH = "/health/"
RETRY_AFTER_SECONDS = 10
# Connection refused or lost, the server shutting down or in recovery, a deadlock or
# a statement cancelled: all pass, so all say "retry".
DATABASE_DOWN = (OperationalError, InterfaceError)
logger = logging.getLogger(__name__)


class DatabaseHealthMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path == HEALTH_PATH:
            return health(request)
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, DATABASE_DOWN):
            return unavailable(request, exception)
        return None


def health(request) -> JsonResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DATABASE_DOWN as error:
        logger.warning("Health check: the database is unavailable: %s", error)
        return JsonResponse({"status": "unavailable", "database": "unavailable"}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})


def unavailable(request, exception) -> HttpResponse:
    """503 for a request that could not reach the database."""
    logger.warning("Database unavailable for %s: %s", request.path, exception)
    message = f"The database is unavailable; retry in {RETRY_AFTER_SECONDS} seconds."
    if request.path.startswith("/api/"):
        error = {"field": None, "line": None, "message": message}
        response = JsonResponse({"errors": [error]}, status=503)
    else:
        # Rendered without the request: the context processors would read the database.
        page = render_to_string("503.html", {"message": message})
        response = HttpResponse(page, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def server_error(request, *args, **kwargs):
    """handler500: an outage that surfaced outside a view is still a 503."""
    exception = sys.exc_info()[1]
    if isinstance(exception, DATABASE_DOWN):
        return unavailable(request, exception)
    return defaults.server_error(request, *args, **kwargs)
