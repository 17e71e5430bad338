"""One error body for every 4xx: ``{"errors": [{"field", "line", "message"}]}``.

``field`` names the input (a dotted path into JSON, a column of an upload) or is
null; ``line`` is the line of an upload, else null.
"""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from config.api.throttles import AnonymousThrottle
from judgements.importers import ImportRejected

GENERAL_KEYS = {"non_field_errors", "detail", "__all__"}
ERROR_STATUSES = {
    "400": "The request or the uploaded file is invalid; every problem is listed.",
    "401": "No valid session or token.",
    "403": "The user's role does not allow this.",
    "404": "No such object, or not one this user may see.",
    "415": "The request body is not of a media type this operation reads.",
    "429": "Too many requests; retry after the Retry-After header's seconds.",
}


def exception_handler(exc, context):
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        exc = _throttled_if_too_many(exc, context)
    if isinstance(exc, ImportRejected):
        return Response({"errors": import_errors(exc)}, status=400)
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else exc.messages
        exc = exceptions.ValidationError(detail)
    response = drf_exception_handler(exc, context)
    if response is not None:
        response.data = {"errors": flatten(response.data)}
    return response


def _throttled_if_too_many(exc, context):
    # DRF checks rate limits after permissions, so refused calls (no token, a wrong
    # token) would never count; counting them here limits guessing tokens too.
    throttle = AnonymousThrottle()
    if throttle.allow_request(context["request"], context["view"]):
        return exc
    return exceptions.Throttled(throttle.wait())


def flatten(detail, field: str | None = None) -> list[dict]:
    """DRF's nested error details as a flat list, each naming its field's path."""
    if isinstance(detail, dict):
        return [
            error
            for key, value in detail.items()
            for error in flatten(value, field if key in GENERAL_KEYS else _path(field, key))
        ]
    if isinstance(detail, list):
        return [
            error
            for index, value in enumerate(detail)
            for error in flatten(
                value, f"{field}[{index}]" if isinstance(value, dict | list) else field
            )
        ]
    return [{"field": field, "line": None, "message": str(detail)}]


def _path(field: str | None, key) -> str:
    return f"{field}.{key}" if field else str(key)


def import_errors(rejected: ImportRejected) -> list[dict]:
    errors = [error._asdict() for error in rejected.errors]
    if (more := rejected.total - len(errors)) > 0:
        message = f"… and {more} more errors ({rejected.total} in all); fix these and retry."
        errors.append({"field": None, "line": None, "message": message})
    return errors


@csrf_exempt
def not_found(request, *args, **kwargs):
    """JSON 404 for any path under /api/ that names no endpoint."""
    error = {"field": None, "line": None, "message": f"No API endpoint at {request.path}."}
    return JsonResponse({"errors": [error]}, status=404)


def schema_error_responses(result, generator, request, public):
    """drf-spectacular hook: document the error body for every operation's 4xx."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Errors"] = {
        "type": "object",
        "required": ["errors"],
        "properties": {"errors": {"type": "array", "items": _ERROR_ITEM}},
    }
    reference = {"application/json": {"schema": {"$ref": "#/components/schemas/Errors"}}}
    for path in result.get("paths", {}).values():
        for operation in path.values():
            for status, description in ERROR_STATUSES.items():
                operation["responses"].setdefault(
                    status, {"description": description, "content": reference}
                )
    return result


_ERROR_ITEM = {
    "type": "object",
    "required": ["field", "line", "message"],
    "properties": {
        "field": {"type": "string", "nullable": True},
        "line": {"type": "integer", "nullable": True},
        "message": {"type": "string"},
    },
}
