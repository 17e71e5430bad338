"""Request templates: JSON with ``{{query}}`` where the query goes, checked when saved
and filled in for each query.

A template is JSON whatever the engine: an Elasticsearch or OpenSearch query DSL body,
Solr's request parameters as an object (``{"q": "{{query}}", "defType": "edismax"}``),
or a JSON search API's parameters (GET) or body (POST). Placeholders are replaced
inside the parsed JSON's strings, never in its text, so that a query with quotes or
backslashes cannot break the request or change its shape.
"""

import json
import re
from dataclasses import dataclass

PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")
# What a template may name: the query's text, its description, its external id, and
# the endpoint's depth (alone in a string, it becomes a number).
PLACEHOLDERS = ("query", "description", "external_id", "depth")
MAX_TEMPLATE_BYTES = 64 << 10

DEFAULT_TEMPLATES = {
    "elasticsearch": {"query": {"match": {"text": "{{query}}"}}},
    "opensearch": {"query": {"match": {"text": "{{query}}"}}},
    "solr": {"q": "{{query}}", "defType": "edismax", "qf": "title text"},
    "json": {"q": "{{query}}", "size": "{{depth}}"},
}


class TemplateError(ValueError):
    """The template cannot be used; the message says where and why."""


@dataclass(frozen=True)
class QueryValues:
    """What a template's placeholders are filled with, for one query."""

    query: str
    description: str = ""
    external_id: str = ""


def default_template(kind: str) -> str:
    return json.dumps(DEFAULT_TEMPLATES[kind], indent=2)


def template_parse(text: str, *, kind: str) -> dict:
    """The template as JSON, checked: an object that names ``{{query}}`` and no unknown
    placeholder; for Solr and GET requests, values that are text, numbers or lists
    of them. Raises TemplateError naming the line and column of a JSON error."""
    if len(text.encode()) > MAX_TEMPLATE_BYTES:
        raise TemplateError(f"The template is over {MAX_TEMPLATE_BYTES >> 10} KB.")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise TemplateError(
            f"The template is not valid JSON: {error.msg} (line {error.lineno}, "
            f"column {error.colno})."
        ) from None
    if not isinstance(value, dict):
        raise TemplateError("The template must be a JSON object ({...}).")
    names = set(_placeholders(value))
    if unknown := sorted(names - set(PLACEHOLDERS)):
        known = ", ".join(f"{{{{{name}}}}}" for name in PLACEHOLDERS)
        raise TemplateError(
            f"Unknown placeholder {', '.join(f'{{{{{n}}}}}' for n in unknown)}; "
            f"a template may name {known}."
        )
    if "query" not in names:
        raise TemplateError("The template does not name {{query}}: every query would be the same.")
    return value


def _placeholders(value):
    if isinstance(value, str):
        yield from PLACEHOLDER.findall(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _placeholders(key)
            yield from _placeholders(item)
    elif isinstance(value, list):
        for item in value:
            yield from _placeholders(item)


def flat_parameters(value: dict) -> list[tuple[str, str]]:
    """A parsed template as URL parameters (Solr, GET search APIs): each key once, or
    once per item of a list (Solr's repeated ``fq``)."""
    pairs = []
    for key, item in value.items():
        for one in item if isinstance(item, list) else [item]:
            if isinstance(one, dict | list) or one is None:
                raise TemplateError(
                    f'"{key}" must be text, a number or a list of them: they are URL parameters.'
                )
            pairs.append((key, _parameter(one)))
    return pairs


def _parameter(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def template_fill(value, values: QueryValues, *, depth: int):
    """A copy of the parsed template with the placeholders replaced."""
    if isinstance(value, str):
        if PLACEHOLDER.fullmatch(value.strip()) and PLACEHOLDER.match(value.strip())[1] == "depth":
            return depth
        return PLACEHOLDER.sub(lambda match: _value_of(match[1], values, depth), value)
    if isinstance(value, dict):
        return {
            template_fill(key, values, depth=depth): template_fill(item, values, depth=depth)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [template_fill(item, values, depth=depth) for item in value]
    return value


def _value_of(name: str, values: QueryValues, depth: int) -> str:
    if name == "depth":
        return str(depth)
    return getattr(values, name)
