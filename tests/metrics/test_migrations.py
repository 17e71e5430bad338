"""Migration 0003 of metrics: stored names of before mean_over and negative say what they were."""

import datetime as dt

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.factories import HitFactory

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

BEFORE = [("metrics", "0002_latest_points_and_stored_intervals")]
AFTER = [("metrics", "0003_mean_over_negative_and_query_coverage")]
OLD_NAME = "ndcg@10 exponential log2 judged cut zero mean"
AS_OF = dt.datetime(2026, 11, 21, tzinfo=dt.UTC)


def migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def names(table: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT metric FROM {table} ORDER BY metric")
        return [row[0] for row in cursor.fetchall()]


def insert_points(hit, metric: str) -> None:
    """A per-query point, its latest copy and an overall point, as 0002 stored them."""
    with connection.cursor() as cursor:
        for query_id in (hit.query_id, None):
            cursor.execute(
                """INSERT INTO metrics_metricpoint (result_list_id, query_id, metric, as_of,
                       value, judged, retrieved, judgements, queries, zero_idcg, computed_at)
                   VALUES (%s, %s, %s, %s, 0.5, 1, 2, 1, 1, 0, %s)""",
                [hit.result_list_id, query_id, metric, AS_OF, AS_OF],
            )
        cursor.execute(
            """INSERT INTO metrics_latestmetricpoint (result_list_id, query_id, metric, as_of,
                   value, judged, retrieved, judgements, zero_idcg)
               VALUES (%s, %s, %s, %s, 0.5, 1, 2, 1, 0)""",
            [hit.result_list_id, hit.query_id, metric, AS_OF],
        )


def test_seven_word_names_become_means_over_all_queries_with_negative_grades_at_zero():
    hit = HitFactory()
    migrate(BEFORE)
    try:
        insert_points(hit, OLD_NAME)

        migrate(AFTER)

        renamed = f"{OLD_NAME} zero all"
        assert names("metrics_metricpoint") == [renamed, renamed]
        assert names("metrics_latestmetricpoint") == [renamed]
    finally:
        migrate(AFTER)


def test_going_back_restores_the_old_names_and_drops_series_they_cannot_name():
    hit = HitFactory()
    migrate(AFTER)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM metrics_metricpoint")
    insert_points(hit, f"{OLD_NAME} zero all")
    insert_points(hit, f"{OLD_NAME} zero judged")
    try:
        migrate(BEFORE)

        assert names("metrics_metricpoint") == [OLD_NAME, OLD_NAME]
        assert names("metrics_latestmetricpoint") == [OLD_NAME]
    finally:
        migrate(AFTER)
