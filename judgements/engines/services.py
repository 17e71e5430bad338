"""Writing endpoints and their template versions (the pages and the API both end here)."""

import math

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max

from config.encryption import SecretsUnavailable, seal
from judgements.engines.safety import endpoint_url_problem
from judgements.engines.templates import TemplateError, template_parse
from judgements.models import Project, SearchEndpoint, SearchTemplate

ENDPOINT_FIELDS = (
    "name",
    "kind",
    "base_url",
    "index",
    "method",
    "id_field",
    "title_field",
    "url_field",
    "snippet_field",
    "kept_fields",
    "hits_path",
    "auth",
    "username",
    "timeout_seconds",
    "concurrency",
    "depth",
)


@transaction.atomic
def endpoint_create(
    *, project: Project, user, template: str, secret: str = "", **fields
) -> SearchEndpoint:
    """A new endpoint with its first template version; raises ValidationError."""
    endpoint = SearchEndpoint(project=project, created_by=_user(user), **fields)
    _check(endpoint, secret=secret, new=True)
    endpoint.save()
    template_save(endpoint=endpoint, body=template, user=user, current=True)
    return endpoint


@transaction.atomic
def endpoint_update(*, endpoint: SearchEndpoint, secret: str | None = None, **fields) -> None:
    """Change an endpoint's settings; a ``secret`` of None (or empty) keeps the stored one,
    unless authentication is turned off, which forgets it."""
    for name, value in fields.items():
        setattr(endpoint, name, value)
    _check(endpoint, secret=secret or "", new=False)
    endpoint.save()


def _check(endpoint: SearchEndpoint, *, secret: str, new: bool) -> None:
    errors = {}
    try:
        endpoint.full_clean(exclude=["project", "created_by"])
    except ValidationError as error:
        errors.update(error.message_dict)
    if not math.isfinite(endpoint.timeout_seconds or 0):
        errors.setdefault("timeout_seconds", []).append("A number of seconds.")
    if problem := endpoint_url_problem(endpoint.base_url):
        errors.setdefault("base_url", []).append(problem)
    if endpoint.kind != SearchEndpoint.Kind.JSON and endpoint.hits_path:
        endpoint.hits_path = ""
    if not isinstance(endpoint.kept_fields, list) or not all(
        isinstance(name, str) and name for name in endpoint.kept_fields
    ):
        errors.setdefault("kept_fields", []).append("A list of field names.")
    if endpoint.auth == SearchEndpoint.Auth.NONE:
        endpoint.secret_encrypted, endpoint.username = "", ""
    elif secret:
        try:
            endpoint.secret_encrypted = seal(secret)
        except SecretsUnavailable as error:
            errors.setdefault("secret", []).append(str(error))
    elif new or not endpoint.secret_encrypted:
        errors.setdefault("secret", []).append("This authentication needs a secret.")
    if endpoint.auth == SearchEndpoint.Auth.BASIC and not endpoint.username:
        errors.setdefault("username", []).append("Basic authentication needs a user name.")
    if errors:
        raise ValidationError(errors)


def template_save(
    *, endpoint: SearchEndpoint, body: str, user, note: str = "", current: bool = False
) -> SearchTemplate:
    """The version holding ``body``: an existing one with the same text, else a new one.
    Raises ValidationError (field ``template``) for a template that cannot be used."""
    try:
        template_parse(body, kind=endpoint.kind)
    except TemplateError as error:
        raise ValidationError({"template": [str(error)]}) from None
    digest = SearchTemplate.digest_of(body)
    with transaction.atomic():
        # One version number at a time per endpoint: the endpoint's row is the lock.
        SearchEndpoint.objects.select_for_update().filter(pk=endpoint.pk).first()
        found = endpoint.templates.filter(digest=digest).first()
        if found is None:
            newest = endpoint.templates.aggregate(newest=Max("version"))["newest"] or 0
            found = SearchTemplate.objects.create(
                endpoint=endpoint,
                version=newest + 1,
                body=body,
                digest=digest,
                note=note[:200],
                created_by=_user(user),
            )
        if current:
            template_make_current(endpoint=endpoint, template=found)
    return found


def template_make_current(*, endpoint: SearchEndpoint, template: SearchTemplate) -> None:
    """Captures and schedules send ``template`` from now on."""
    endpoint.current_version = template.version
    endpoint.save(update_fields=["current_version"])


def _user(user):
    return user if user is not None and user.is_authenticated else None


def query_ids_named(project: Project, text: str) -> list[int]:
    """The ids of the queries named one a line (external id, else text); raises
    ValidationError naming those the project lacks. Empty text: no restriction."""
    names = [line.strip() for line in text.splitlines() if line.strip()]
    if not names:
        return []
    by_key = dict(project.queries.exclude(external_id="").values_list("external_id", "id"))
    by_text = dict(project.queries.filter(text__in=names).values_list("text", "id"))
    found = [by_key.get(name) or by_text.get(name) for name in names]
    missing = [name for name, pk in zip(names, found, strict=True) if pk is None]
    if missing:
        shown = ", ".join(f'"{name[:60]}"' for name in missing[:5])
        raise ValidationError({"queries": [f"{len(missing)} not in the project: {shown}."]})
    return sorted(set(found))
