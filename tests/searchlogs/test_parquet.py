"""Parquet logs that cannot be read: each problem names the file, the row and the column,
and nothing is computed."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from searchlogs.engines import duckdb_online
from searchlogs.parquet import OURS, ParquetLogError, parquet_log
from tests.searchlogs.generated import generated_log, log_table


@pytest.fixture
def table():
    return log_table(generated_log(300, ["tent", "stove"], seed=3))


def problems(error) -> list[tuple]:
    return [(file.rsplit("/", 1)[-1] if file else file, row, column, message)
            for file, row, column, message in error.value.problems]  # fmt: skip


def test_a_glob_that_matches_nothing(tmp_path):
    with pytest.raises(ParquetLogError) as error:
        parquet_log("ours", str(tmp_path / "*.parquet"))

    assert problems(error) == [
        ("*.parquet", None, None, "No Parquet file matches this path or glob.")
    ]


def test_missing_and_wrongly_typed_columns_name_their_file(tmp_path, table):
    pq.write_table(table, tmp_path / "good.parquet")
    bad = table.drop_columns(["session"]).set_column(
        table.schema.get_field_index("time") - 1, "time", pa.array(
            [str(t) for t in table.column("time").to_pylist()]))  # fmt: skip
    pq.write_table(bad, tmp_path / "bad.parquet")
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")

    with pytest.raises(ParquetLogError) as error:
        parquet_log("ours", str(tmp_path))

    found = problems(error)
    assert ("bad.parquet", None, "session", "is missing.") in found
    assert (
        "bad.parquet",
        None,
        "time",
        "is string, not a timestamp with a time zone (UTC).",
    ) in found
    assert found[-1][0] == "broken.parquet" and "Not a readable Parquet file" in found[-1][3]
    assert not any(file == "good.parquet" for file, *_ in found)


def test_a_timestamp_without_a_zone_is_refused(tmp_path, table):
    index = table.schema.get_field_index("time")
    naive = table.set_column(index, "time", table.column("time").cast(pa.timestamp("us")))
    pq.write_table(naive, tmp_path / "naive.parquet")

    with pytest.raises(ParquetLogError) as error:
        parquet_log("ours", str(tmp_path / "naive.parquet"))

    assert problems(error) == [
        (
            "naive.parquet",
            None,
            "time",
            "is timestamp[us], not a timestamp with a time zone (UTC).",
        )
    ]


def test_bad_rows_name_their_file_and_row_and_nothing_is_computed(tmp_path, table):
    sessions = table.column("session").to_pylist()
    sessions[4] = None
    broken = table.set_column(table.schema.get_field_index("session"), "session",
                              pa.array(sessions, pa.string()))  # fmt: skip
    pq.write_table(broken, tmp_path / "log.parquet")
    log = parquet_log("ours", str(tmp_path / "log.parquet"))

    with pytest.raises(ParquetLogError) as error:
        duckdb_online(log)

    assert problems(error) == [("log.parquet", 5, "session", "is empty.")]


def test_a_ubi_click_naming_no_query_record(tmp_path):
    moment = pa.scalar(1_795_168_800_000_000, pa.timestamp("us", tz="UTC"))
    queries = pa.table({"query_id": ["q1"], "user_query": ["tent"], "timestamp": [moment]})
    pq.write_table(queries, tmp_path / "q.parquet")
    pq.write_table(pa.table({
        "action_name": ["click", "click"], "query_id": ["q1", "q2"],
        "timestamp": pa.array([moment, moment]),
        "event_attributes": [{"object": {"object_id": "D1"}}, {"object": {"object_id": "D2"}}],
    }), tmp_path / "e.parquet")  # fmt: skip
    log = parquet_log("ubi", str(tmp_path / "e.parquet"), str(tmp_path / "q.parquet"))

    with pytest.raises(ParquetLogError) as error:
        duckdb_online(log)

    assert problems(error) == [("e.parquet", 2, "query_id", "names no query record.")]


def test_the_layout_s_columns_are_documented_in_one_place():
    assert {"type", "id", "session", "time"} <= set(OURS)


def test_a_project_pointing_at_parquet_files_shows_them_and_says_when_they_break(
    project, tmp_path, table
):
    from searchlogs.dashboards import online_overview
    from searchlogs.models import ParquetLog

    pq.write_table(table, tmp_path / "log.parquet")
    ParquetLog.objects.create(project=project, events=str(tmp_path / "*.parquet"))
    project.refresh_from_db()
    panel = online_overview(project)
    assert panel.rows and sum(row.impressions for row in panel.rows) == sum(
        kind == "impression" for kind in table.column("type").to_pylist()
    )
    (tmp_path / "log.parquet").unlink()
    (tmp_path / "late.parquet").write_bytes(b"not parquet")
    broken = online_overview(project)
    assert broken.rows == [] and "Not a readable Parquet file" in broken.problem
