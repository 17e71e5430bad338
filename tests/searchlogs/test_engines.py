"""PostgreSQL over the ingested log, DuckDB over Parquet files: equal numbers, by one SQL.

The Spark path is held to the same numbers in test_spark.py (marked ``spark``).
"""

import io

import numpy as np
import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.db import connection

from judgements.models import Project
from metrics.core.online import OnlineTable
from searchlogs import demo
from searchlogs.engines import duckdb_online, postgres_online, query_matcher
from searchlogs.parquet import parquet_log
from searchlogs.services import COLUMNS, search_log_ingest
from tests.factories import ProjectFactory, QueryFactory
from tests.searchlogs.generated import copy_rows, events_table, generated_log, jsonl, log_table

GROUPINGS = [("day",), ("query",), ("day", "query")]
FIELDS = (
    "day", "query", "impressions", "clicks", "orphan_clicks", "sessions",
    "successful_sessions", "zero_click_successes", "seconds_to_success",
    "queries_to_success", "queries_per_session",
)  # fmt: skip


def assert_equal(one: OnlineTable, other: OnlineTable) -> None:
    """Every column equal to the last bit (nan where nan)."""
    for name in FIELDS:
        a, b = getattr(one, name), getattr(other, name)
        if a is None or b is None:
            assert a is None and b is None, name
            continue
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), name


def test_the_demo_log_gives_equal_numbers_in_postgresql_and_in_duckdb(db, tmp_path):
    call_command("load_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    project = Project.objects.get(slug="outdoor-gear")
    # The very events the demo ingested (its generator is seeded), as Parquet files.
    events = list(demo._events(demo._pages(project), np.random.default_rng(demo.SEED)))
    table = events_table(events)
    half = len(events) // 2
    pq.write_table(table.slice(0, half), tmp_path / "part-0.parquet")
    pq.write_table(table.slice(half), tmp_path / "part-1.parquet")
    log = parquet_log("ours", str(tmp_path))
    for by in GROUPINGS:
        stored = postgres_online(project, by=by)
        read = duckdb_online(log, by=by, query_of=query_matcher(project))
        assert len(stored) > 0
        assert_equal(stored, read)
    # The demo has texts that match no query, and they come out as one unmatched row.
    by_query = postgres_online(project, by=("query",))
    assert by_query.query[0] == -1 and by_query.impressions[0] > 0


def test_a_generated_million_events_give_equal_numbers(db, tmp_path):
    project = ProjectFactory()
    texts = [f"query {n}" for n in range(500)]
    for text in texts[:450]:  # The last 50 texts match no query.
        QueryFactory(project=project, text=text)
    log = generated_log(1_000_000, texts, seed=1)
    assert 900_000 < len(log) < 1_100_000
    # The rows search_log_ingest would write (test_the_threshold_is_applied_alike goes
    # through the ingest itself), loaded by COPY: a million JSON lines would take longer.
    ids = dict(project.queries.values_list("text", "id"))
    with connection.cursor() as cursor:
        cursor.cursor.copy_expert(f"COPY searchlogs_searchevent ({', '.join(COLUMNS)}) FROM STDIN",
                                  io.BytesIO(copy_rows(log, project.pk, ids)))  # fmt: skip
    pq.write_table(log_table(log), tmp_path / "log.parquet", row_group_size=100_000)
    files = parquet_log("ours", str(tmp_path / "*.parquet"))
    # By day and query, the finest grouping: the others are its sums.
    by = ("day", "query")
    stored = postgres_online(project, by=by)
    assert_equal(stored, duckdb_online(files, by=by, query_of=query_matcher(project)))
    assert stored.impressions.sum() == (log.type == 0).sum() and len(stored) > 10_000


@pytest.mark.parametrize("success_dwell", [0.0, 10.0, 45.5])
def test_the_threshold_is_applied_alike(db, tmp_path, success_dwell):
    project = ProjectFactory()
    texts = ["tent", "stove", "unknown"]
    for text in texts[:2]:
        QueryFactory(project=project, text=text)
    log = generated_log(3_000, texts, seed=2)
    search_log_ingest(project=project, upload=[jsonl(log)])
    pq.write_table(log_table(log), tmp_path / "log.parquet")
    files = parquet_log("ours", str(tmp_path / "log.parquet"))
    stored = postgres_online(project, by=("day", "query"), success_dwell=success_dwell)
    read = duckdb_online(files, by=("day", "query"), success_dwell=success_dwell,
                         query_of=query_matcher(project))  # fmt: skip
    assert_equal(stored, read)
    assert stored.successful_sessions.sum() > 0
