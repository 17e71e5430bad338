"""Spark (local mode, a real JVM) gives the numbers PostgreSQL and DuckDB give, by the same
SQL. Few tests, since each Spark start costs seconds: run with ``-m spark`` too."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import call_command

from searchlogs.engines import duckdb_online, postgres_online, query_matcher, spark_online
from searchlogs.parquet import parquet_log
from searchlogs.services import search_log_ingest
from tests.factories import ProjectFactory, QueryFactory
from tests.searchlogs.generated import generated_log, jsonl, log_table
from tests.searchlogs.test_engines import GROUPINGS, assert_equal
from tests.searchlogs.test_ubi import EVENTS, QUERIES, ndjson

pytestmark = pytest.mark.spark


def test_spark_postgresql_and_duckdb_give_equal_numbers_on_our_layout(db, tmp_path):
    project = ProjectFactory()
    texts = ["tent", "stove", "lamp", "unknown text"]
    for text in texts[:3]:
        QueryFactory(project=project, text=text)
    log = generated_log(5_000, texts, seed=4)
    search_log_ingest(project=project, upload=[jsonl(log)])
    table = log_table(log)
    pq.write_table(table.slice(0, 2_000), tmp_path / "a.parquet")
    pq.write_table(table.slice(2_000), tmp_path / "b.parquet")
    files = parquet_log("ours", str(tmp_path))
    matcher = query_matcher(project)
    for by in GROUPINGS:
        stored = postgres_online(project, by=by)
        assert_equal(stored, spark_online(files, by=by, query_of=matcher))
        assert_equal(stored, duckdb_online(files, by=by, query_of=matcher))


def test_spark_reads_ubi_parquet_and_the_command_prints_its_numbers(db, tmp_path, capsys):
    project = ProjectFactory(slug="spark-ubi")
    QueryFactory(project=project, text="tent")
    search_log_ingest(project=project, upload=[ndjson(*QUERIES, *EVENTS)], format="ubi")
    moments = pa.array([1_795_168_800_000_000, 1_795_168_860_000_000],
                       pa.timestamp("us", tz="UTC"))  # fmt: skip
    pq.write_table(pa.table({"query_id": ["q1", "q2"], "user_query": ["Tent", "stove"],
                             "client_id": ["c1", "c1"], "timestamp": moments}),
                   tmp_path / "queries.parquet")  # fmt: skip
    pq.write_table(pa.table({
        "action_name": ["click", "add_to_cart", "click"], "query_id": ["q1", "q1", "q2"],
        "session_id": ["s1", "s1", "s1"],
        "timestamp": pa.array([1_795_168_805_250_000, 1_795_168_830_000_000,
                               1_795_168_870_000_000], pa.timestamp("us", tz="UTC")),
        "event_attributes": [
            {"object": {"object_id": "SKU-2"}, "position": {"ordinal": 2}, "dwell_time": 45.0},
            {"object": {"object_id": "SKU-2"}, "position": {"ordinal": 2}, "dwell_time": None},
            {"object": {"object_id": "17"}, "position": {"ordinal": 1}, "dwell_time": None},
        ],
    }), tmp_path / "events.parquet")  # fmt: skip
    log = parquet_log("ubi", str(tmp_path / "events.parquet"), str(tmp_path / "queries.parquet"))
    for by in GROUPINGS:
        assert_equal(postgres_online(project, by=by),
                     spark_online(log, by=by, query_of=query_matcher(project)))  # fmt: skip

    call_command("online_metrics", project.slug, "--engine", "spark", "--layout", "ubi",
                 "--events", str(tmp_path / "events.parquet"),
                 "--queries", str(tmp_path / "queries.parquet"))  # fmt: skip
    spark_lines = capsys.readouterr().out.splitlines()
    call_command("online_metrics", project.slug, "--engine", "postgresql")
    assert spark_lines == capsys.readouterr().out.splitlines()
    assert spark_lines[0].startswith("day,query,impressions") and len(spark_lines) == 2
