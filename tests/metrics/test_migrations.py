"""Data migrations of metrics: 0003 renames the stored names of before mean_over and
negative to what they were; 0004 counts the revisions already in the log."""

import datetime as dt

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from metrics.models import RevisionCount
from metrics.revisions import project_revisions_per_week, revisions_per_week
from tests.factories import HitFactory, JudgementFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

BEFORE = [("metrics", "0002_latest_points_and_stored_intervals")]
AFTER = [("metrics", "0003_mean_over_negative_and_query_coverage")]
OLD_NAME = "ndcg@10 exponential log2 judged cut zero mean"
AS_OF = dt.datetime(2026, 11, 21, tzinfo=dt.UTC)


def migrate(targets=None) -> None:
    """Migrate the metrics app to ``targets``, or forward to its newest migration."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    if targets is None:
        targets = [key for key in executor.loader.graph.leaf_nodes() if key[0] == "metrics"]
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
        migrate()


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
        migrate()


def test_the_revisions_already_in_the_log_are_counted(tent_with_revisions):
    project_id = tent_with_revisions.project_id
    migrate(AFTER)
    try:
        migrate()

        assert revisions_per_week(project_id, as_of=None) == project_revisions_per_week(
            project_id, as_of=None
        )
        assert RevisionCount.objects.count() == 2
    finally:
        migrate()


@pytest.fixture
def tent_with_revisions():
    """One pair graded 3, then 1 (a revision), 1 again, then 2 (another revision)."""
    hit = HitFactory()
    rater = UserFactory(username="ann", roles=["rater"])
    for days, grade in ((0, 2), (1, 1), (1.5, 1), (3, 3)):
        JudgementFactory(
            query=hit.query,
            document=hit.document,
            rater=rater,
            grade=grade,
            created_at=AS_OF - dt.timedelta(days=days),
        )
    return hit.query
