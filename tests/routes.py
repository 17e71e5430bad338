"""Every URL the app routes, for tests that sweep all pages and endpoints."""

import re

from django.urls import URLPattern, URLResolver, get_resolver

PARAMETER = re.compile(r"<(?:(\w+):)?(\w+)>")

# Values for the parameters that name no row a sweep's fixture makes (an id that need
# not exist: the page answers 404, which a sweep accepts).
PLACEHOLDERS = {
    "app_label": "judgements",
    "uidb64": "MQ",
    "token": "set-password",
    "content_type_id": "1",
    "url": "x",
    "kind": "queries",
    "job_id": "6f1c2a3e-0000-4000-8000-000000000000",
    "judge_id": "1",
    "run_id": "1",
    "endpoint_id": "1",
    "capture_id": "1",
    "schedule_id": "1",
}


def routes() -> list[str]:
    """Each route's pattern text (``api/result-lists/<id:pk>/``), without the regex
    catch-alls."""
    return list(_routes(get_resolver().url_patterns, ""))


def _routes(patterns, prefix: str):
    for pattern in patterns:
        route = str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + route)
        elif isinstance(pattern, URLPattern) and not route.startswith("^"):
            yield prefix + route


def filled(route: str, values: dict[str, str]) -> str:
    """The route as a path, each ``<converter:name>`` replaced by ``values[name]``."""
    return "/" + PARAMETER.sub(lambda match: str(values[match[2]]), route)


def parameters(route: str) -> list[tuple[str, str]]:
    """(converter, name) of each of the route's parameters; the converter is "str" when
    none is named."""
    return [(converter or "str", name) for converter, name in PARAMETER.findall(route)]
