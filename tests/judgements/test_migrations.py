"""Data steps of the judgements migrations, run on rows as they stood before them."""

import importlib

import pytest
from django.db import connection, migrations

from judgements.models import Query
from tests.factories import QueryFactory

pytestmark = pytest.mark.django_db

EXTERNAL_IDS = importlib.import_module(
    "judgements.migrations.0010_query_external_id_and_metric_defaults"
)


def test_0010_gives_queries_stored_before_external_ids_their_own_id():
    old = [QueryFactory(external_id=""), QueryFactory(external_id="")]
    kept = QueryFactory(external_id="T-1")
    [fill] = [
        operation
        for operation in EXTERNAL_IDS.Migration.operations
        if isinstance(operation, migrations.RunSQL)
    ]

    with connection.cursor() as cursor:
        cursor.execute(fill.sql)

    stored = dict(Query.objects.values_list("pk", "external_id"))
    assert stored == {old[0].pk: str(old[0].pk), old[1].pk: str(old[1].pk), kept.pk: "T-1"}
