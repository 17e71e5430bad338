"""Integers past PostgreSQL's range, anywhere a request carries one, answer 4xx, never 500.

PostgreSQL's bigint ends at 2**63 - 1; Python's int does not. An id of 2**63 in a
path, a ``?page=400000000000000000`` whose offset overflows, or such a number in a
form or JSON field must be refused (400) or not found (404) by the app, not reach
the database. The sweep below walks every route the app has (pages, API, admin) as
each persona, so that a route added later is swept too.
"""

import django_filters
import pytest
from django import forms
from django.db import transaction
from django.urls import get_resolver
from rest_framework import serializers

from judgements.models import Judgement
from tests import routes
from tests.factories import JudgementFactory, UserFactory

# Past bigint, within bigint but past any offset a page may have, and far past
# anything.
HUGE = ["9223372036854775808", "400000000000000000", "9" * 30]
INTEGER_CONVERTERS = {"int", "id"}
# Query parameters that are integers without a form field of their own.
PAGING = ["page", "page_size", "limit", "offset"]


def _subclasses(cls):
    for subclass in cls.__subclasses__():
        yield subclass
        yield from _subclasses(subclass)


def _ours(cls) -> bool:
    return cls.__module__.split(".")[0] in ("judgements", "metrics", "searchlogs", "config")


INTEGER_FIELDS = (
    forms.IntegerField,
    forms.ModelChoiceField,
    forms.TypedChoiceField,
    serializers.IntegerField,
    serializers.PrimaryKeyRelatedField,
    django_filters.NumberFilter,
)


def integer_field_names() -> set[str]:
    """The names of every integer field of the app's forms, serializers and filters."""
    assert get_resolver().url_patterns  # imports every view, so every form and serializer
    fields = {}
    for form in _subclasses(forms.BaseForm):
        if _ours(form):
            fields.update(form.base_fields)
    for serializer in _subclasses(serializers.Serializer):
        # Output serializers only write responses.
        if _ours(serializer) and "Output" not in serializer.__qualname__:
            fields.update(serializer._declared_fields)
    for filterset in _subclasses(django_filters.FilterSet):
        if _ours(filterset):
            fields.update(filterset.base_filters)
    names = {name for name, field in fields.items() if isinstance(field, INTEGER_FIELDS)}
    assert {"query", "document", "k", "depth", "a", "b", "grade"} <= names, names
    return names | set(PAGING)


@pytest.fixture
def superuser(db):
    return UserFactory(username="root", is_staff=True, is_superuser=True)


@pytest.fixture
def judged(query_with_hits, rater):
    hit = query_with_hits.hits.first()
    JudgementFactory(query=query_with_hits, document=hit.document, rater=rater, grade=2)
    return query_with_hits


@pytest.fixture
def valid_values(judged) -> dict[str, str]:
    project = judged.project
    result_list = project.result_lists.get()
    judgement = Judgement.objects.get(query=judged)
    return {
        "slug": project.slug,
        "pk": str(result_list.pk),
        "result_list_id": str(result_list.pk),
        "query_id": str(judged.pk),
        "object_id": str(judgement.pk),
        **routes.PLACEHOLDERS,
    }


def requests_for(route: str, valid: dict[str, str], field_names: set[str]):
    """(method, path, data, number) carrying out-of-range integers for one route: in each
    integer part of the path in turn, and in every integer field of the query string
    and of a posted body."""
    integer_parts = [
        name
        for converter, name in routes.parameters(route)
        if converter in INTEGER_CONVERTERS or name == "object_id"
    ]
    for huge in HUGE:
        for name in integer_parts:
            yield "get", routes.filled(route, {**valid, name: huge}), None, huge
        path = routes.filled(route, valid)
        fields = dict.fromkeys(field_names, huge)
        yield "get", path, fields, huge
        yield "post", path, fields, huge


def sweep(client, user, route_filter) -> list[str]:
    field_names = integer_field_names()
    failures = []
    for route in routes.routes():
        if not route_filter(route):
            continue
        for method, path, data, huge in requests_for(route, client.valid_values, field_names):
            with transaction.atomic():
                # Signed in afresh each time: one of the routes is the logout.
                client.force_login(user)
                response = getattr(client, method)(path, data)
                if response.status_code >= 500:
                    where = "in every integer field" if data else "in the path"
                    failures.append(f"{method.upper()} {path} with {huge} {where}: 500")
                    # The error may have left the transaction unusable: undo it.
                    transaction.set_rollback(True)
    return failures


@pytest.fixture
def sweeping(client, valid_values):
    client.raise_request_exception = False
    client.valid_values = valid_values
    return client


@pytest.mark.parametrize("persona", ["rater", "analyst"])
def test_no_page_or_endpoint_answers_500_to_an_integer_past_bigint(sweeping, persona, request):
    user = request.getfixturevalue(persona)
    failures = sweep(sweeping, user, lambda route: not route.startswith("admin/"))
    assert not failures, "\n".join(failures[:40])


def test_no_admin_page_answers_500_to_an_integer_past_bigint(sweeping, superuser):
    failures = sweep(sweeping, superuser, lambda route: route.startswith("admin/judgements/"))
    assert not failures, "\n".join(failures[:40])


def test_json_bodies_with_integers_past_bigint_are_400(api_client, rater, judged):
    api_client.force_authenticate(rater)
    document = judged.hits.first().document_id
    for field in ("query", "document", "grade"):
        body = {"query": judged.pk, "document": document, "grade": 1}
        for huge in HUGE:
            body[field] = int(huge)
            response = api_client.post("/api/judgements/create/", body, format="json")
            assert response.status_code == 400, (field, huge, response.status_code)
            assert response.json()["errors"][0]["field"] == field


def test_every_integer_in_a_route_is_an_id_of_bounded_range():
    # <int:...> accepts any length of digits; <id:...> stops at bigint's end.
    unbounded = [route for route in routes.routes() if "<int:" in route]
    assert not unbounded, unbounded
