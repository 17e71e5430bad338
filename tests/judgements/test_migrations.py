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


def test_0026_a_statement_recounting_every_pair_grade_rewrites_each_row_in_its_page():
    # An import recounts every pair it grades in one statement: with full pages each
    # new row version moved to another page and into all four indexes.
    query = QueryFactory()
    with connection.cursor() as cursor:
        # Enough rows for dozens of pages, each pair a document of its own.
        cursor.execute(
            """
            INSERT INTO judgements_document (project_id, external_id, title, url, snippet,
                                             image_url, fields)
            SELECT %s, 'filler-' || n, '', '', '', '', '{}' FROM generate_series(1, 4000) n
            """,
            [query.project_id],
        )
        cursor.execute(
            """
            INSERT INTO judgements_pairgrade
                (project_id, query_id, document_id, graded, lowest, highest, grades, raters)
            SELECT %s, %s, id, 1, 2, 2, '{2}', '{1}' FROM judgements_document
            WHERE project_id = %s AND external_id LIKE 'filler-%%'
            """,
            [query.project_id, query.pk, query.project_id],
        )
        counts = (
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables"
            " WHERE relname = 'judgements_pairgrade'"
        )
        # The transaction's counts so far (the test's set-up may have updated rows too).
        cursor.execute(counts)
        updated_before, in_place_before = cursor.fetchone()
        cursor.execute(
            "UPDATE judgements_pairgrade SET graded = 2, highest = 3, grades = '{2,3}',"
            " raters = '{1,2}' WHERE query_id = %s",
            [query.pk],
        )
        cursor.execute(counts)
        updated, in_place = (
            after - before
            for after, before in zip(
                cursor.fetchone(), (updated_before, in_place_before), strict=True
            )
        )

    assert updated == 4000
    assert in_place >= 0.95 * updated
