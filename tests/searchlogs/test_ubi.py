"""UBI logs in and out: records checked against the published schema, stored as pages and
clicks, the same online metrics as our own format, written back out as UBI."""

import json

import jsonschema_rs
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import call_command

from judgements.importers import ImportRejected
from searchlogs.engines import duckdb_online, postgres_online, query_matcher
from searchlogs.models import SearchEvent
from searchlogs.parquet import parquet_log
from searchlogs.services import search_log_ingest
from searchlogs.ubi import click_id
from searchlogs.ubi_schema import published, schema_errors
from tests.factories import ProjectFactory, QueryFactory
from tests.searchlogs.generated import generated_log, jsonl
from tests.searchlogs.test_engines import assert_equal

QUERIES = [
    {"query_id": "q1", "user_query": "Tent", "client_id": "c1",
     "timestamp": "2026-11-20T10:00:00Z", "query_response_hit_ids": ["SKU-1", "SKU-2"]},
    {"query_id": "q2", "user_query": "stove", "client_id": "c1",
     "timestamp": "2026-11-20T10:01:00+00:00", "query_response_hit_ids": ["SKU-3"]},
]  # fmt: skip
EVENTS = [
    {"action_name": "click", "query_id": "q1", "session_id": "s1", "client_id": "c1",
     "timestamp": "2026-11-20T10:00:05.250Z", "message_type": None,
     "event_attributes": {"object": {"object_id": "SKU-2"}, "position": {"ordinal": 2},
                          "dwell_time": 45}},
    {"action_name": "add_to_cart", "query_id": "q1", "session_id": "s1",
     "timestamp": "2026-11-20T10:00:30Z",
     "event_attributes": {"object": {"object_id": "SKU-2"}, "position": {"ordinal": 2}}},
    {"action_name": "click", "query_id": "q2", "session_id": "s1",
     "timestamp": "2026-11-20T10:01:10Z",
     "event_attributes": {"object": {"object_id": 17}, "position": {"ordinal": 1}}},
]  # fmt: skip


def ndjson(*records) -> bytes:
    return b"".join(json.dumps(record).encode() + b"\n" for record in records)


def bulk(*records) -> bytes:
    lines = []
    for number, record in enumerate(records):
        index = "ubi_events" if "action_name" in record else "ubi_queries"
        lines += [{"index": {"_index": index, "_id": str(number)}}, record]
    return ndjson(*lines)


def search_dump(*records) -> bytes:
    hits = [
        {
            "_index": "ubi_events" if "action_name" in record else "ubi_queries",
            "_id": str(number),
            "_source": record,
        }
        for number, record in enumerate(records)
    ]
    # Two scroll pages, one response a line.
    half = len(hits) // 2
    return ndjson({"took": 1, "hits": {"hits": hits[:half]}}, {"hits": {"hits": hits[half:]}})


STORED = ("kind", "event_id", "session_id", "query_text", "document", "rank", "click_event_id",
          "dwell_seconds")  # fmt: skip


def stored(project):
    events = SearchEvent.objects.filter(project=project).order_by("kind", "event_id")
    return list(events.values_list(*STORED))


def test_the_published_schema_refuses_every_standard_action_so_its_one_of_is_read_as_any_of():
    click = EVENTS[2] | {"event_attributes": {"position": {"ordinal": 1}}}
    # Read literally, "click" is both one of the common names and a string: oneOf fails.
    assert not jsonschema_rs.validator_for(published("event")).is_valid(click)
    assert jsonschema_rs.validator_for(published("event")).is_valid(click | {"action_name": "tap"})
    assert schema_errors("event", click) == []
    assert schema_errors("event", click | {"query_id": 7}) == [
        ("query_id", '7 is not of type "string"')]  # fmt: skip


def test_queries_become_pages_and_clicks_become_clicks_in_their_query_s_session(project):
    result = search_log_ingest(project=project, upload=[ndjson(*QUERIES, *EVENTS)], format="ubi")

    first = click_id("q1", 1_795_168_805_250_000, "SKU-2", 2)
    second = click_id("q2", 1_795_168_870_000_000, "17", 1)
    assert stored(project) == sorted([
        (0, "q1", "s1", "Tent", "", None, "", None),
        (0, "q2", "s1", "stove", "", None, "", None),
        (1, first, "s1", "", "SKU-2", 2, "", None),
        (1, second, "s1", "", "17", 1, "", None),
        (2, f"{first}.dwell", "s1", "", "", None, first, 45.0),
    ])  # fmt: skip
    assert result.other_actions == {"add_to_cart": 1}
    assert result.kinds == {"impression": 2, "click": 2, "dwell": 1}
    # Sent again, it changes nothing: every event keeps its id.
    again = search_log_ingest(project=project, upload=[ndjson(*QUERIES, *EVENTS)], format="ubi")
    assert (again.created, again.already_stored) == (0, 5)


def test_a_page_without_events_is_a_session_of_its_client(project):
    search_log_ingest(project=project, upload=[ndjson(QUERIES[0])], format="ubi")

    assert stored(project) == [(0, "q1", "c1", "Tent", "", None, "", None)]


@pytest.mark.parametrize("form", [bulk, search_dump])
def test_bulk_files_and_search_dumps_give_the_same_events(db, form):
    plain, other = ProjectFactory(), ProjectFactory()
    search_log_ingest(project=plain, upload=[ndjson(*QUERIES, *EVENTS)], format="ubi")
    search_log_ingest(project=other, upload=[form(*QUERIES, *EVENTS)], format="ubi")

    assert stored(other) == stored(plain) and len(stored(plain)) == 5


def test_every_bad_record_is_an_error_of_its_line_and_field_and_nothing_is_stored(project):
    bad = [
        QUERIES[0] | {"query_id": 12},                                    # line 1
        QUERIES[1] | {"timestamp": "2026-11-20T10:01:00"},                # line 2
        EVENTS[0] | {"query_id": "q9"},                                   # line 3
        EVENTS[2] | {"event_attributes": {"position": {"ordinal": 1}}},   # line 4
        QUERIES[0] | {"query_id": "q3"},                                  # line 5: good
        EVENTS[2] | {"query_id": "q3",
                     "event_attributes": {"object": {"object_id": "SKU-1"},
                                          "position": {"ordinal": 0}}},    # line 6
        "not json",                                                       # line 7
    ]  # fmt: skip
    upload = b"".join((line if isinstance(line, str) else json.dumps(line)).encode() + b"\n"
                      for line in bad)  # fmt: skip
    with pytest.raises(ImportRejected) as rejected:
        search_log_ingest(project=project, upload=[upload], format="ubi")

    errors = [(error.line, error.field, error.message) for error in rejected.value.errors]
    assert errors[0] == (1, "query_id", '12 is not of type "string"')
    assert errors[1][:2] == (2, "timestamp") and "no time zone" in errors[1][2]
    assert errors[2] == (3, "query_id", 'names no query record ("q9" is in neither this '
                         "batch nor the log).")  # fmt: skip
    assert errors[3] == (4, "event_attributes.object.object_id", "is missing: a click needs it.")
    assert errors[4][:2] == (6, "event_attributes.position.ordinal")
    assert "ordinal base 0" in errors[4][2]
    assert errors[5][0] == 7 and len(errors) == 6
    assert SearchEvent.objects.filter(project=project).count() == 0


def test_a_query_id_used_twice_is_an_error(project):
    with pytest.raises(ImportRejected) as rejected:
        search_log_ingest(project=project, upload=[ndjson(QUERIES[0], QUERIES[0])], format="ubi")

    (error,) = rejected.value.errors
    assert (error.line, error.field) == (2, "query_id") and "line 1" in error.message


def test_ordinals_from_zero_are_read_with_their_base(project):
    click = EVENTS[2] | {"query_id": "q1",
                         "event_attributes": {"object": {"object_id": "SKU-1"},
                                              "position": {"ordinal": 0}}}  # fmt: skip
    search_log_ingest(project=project, upload=[ndjson(QUERIES[0], click)], format="ubi",
                      ordinal_base=0)  # fmt: skip

    assert SearchEvent.objects.get(project=project, kind=1).rank == 1


def test_a_later_batch_may_click_on_a_stored_page(project):
    search_log_ingest(project=project, upload=[ndjson(QUERIES[0])], format="ubi")
    search_log_ingest(project=project, upload=[ndjson(EVENTS[0])], format="ubi")

    click = SearchEvent.objects.get(project=project, kind=1)
    # The page's session was its client's: the click joins it there.
    assert (click.session_id, click.document) == ("c1", "SKU-2")


def test_our_log_written_as_ubi_and_read_back_gives_the_same_metrics(db, tmp_path):
    texts = ["tent", "stove", "lamp", "nothing like it"]
    ours, back = ProjectFactory(), ProjectFactory()
    for project in (ours, back):
        for text in texts[:3]:
            QueryFactory(project=project, text=text)
    log = generated_log(4_000, texts, seed=5)
    # UBI has no field for an answered page or an end-of-session marker: none here.
    log.answered[:] = False
    ended = log.end_of_session.copy()
    log.end_of_session[:] = False
    log.seconds[ended] = 1.0
    search_log_ingest(project=ours, upload=[jsonl(log)])
    call_command("export_search_log", ours.slug, str(tmp_path), stdout=open("/dev/null", "w"))  # noqa: SIM115
    for name in ("ubi_queries", "ubi_events"):
        search_log_ingest(project=back, upload=[(tmp_path / f"{name}.ndjson").read_bytes()],
                          format="ubi")  # fmt: skip
    # The queries first: the events' batch names stored pages.
    for by in (("day",), ("day", "query")):
        one, other = postgres_online(ours, by=by), postgres_online(back, by=by)
        assert len(one) > 0
        for name in (
            "impressions",
            "clicks",
            "sessions",
            "successful_sessions",
            "seconds_to_success",
            "queries_to_success",
            "queries_per_session",
        ):
            assert np.array_equal(getattr(one, name), getattr(other, name), equal_nan=True), name
        assert one.orphan_clicks.sum() == 0


def test_ubi_parquet_files_read_in_place_equal_the_ingested_records(project, tmp_path):
    QueryFactory(project=project, text="stove")
    search_log_ingest(project=project, upload=[ndjson(*QUERIES, *EVENTS)], format="ubi")
    queries = pa.Table.from_pylist(
        [{k: v for k, v in q.items() if k != "query_response_hit_ids"} for q in QUERIES]
    )
    queries = queries.set_column(
        3,
        "timestamp",
        pa.array(
            [
                pa.scalar(1_795_168_800_000_000, pa.timestamp("us", tz="UTC")),
                pa.scalar(1_795_168_860_000_000, pa.timestamp("us", tz="UTC")),
            ]
        ),
    )
    events = pa.table({
        "action_name": ["click", "add_to_cart", "click"],
        "query_id": ["q1", "q1", "q2"],
        "session_id": ["s1", "s1", "s1"],
        "timestamp": pa.array([1_795_168_805_250_000, 1_795_168_830_000_000,
                               1_795_168_870_000_000], pa.timestamp("us", tz="UTC")),
        "event_attributes": [
            {"object": {"object_id": "SKU-2"}, "position": {"ordinal": 2}, "dwell_time": 45.0},
            {"object": {"object_id": "SKU-2"}, "position": {"ordinal": 2}, "dwell_time": None},
            {"object": {"object_id": "17"}, "position": {"ordinal": 1}, "dwell_time": None},
        ],
    })  # fmt: skip
    pq.write_table(queries, tmp_path / "queries.parquet")
    pq.write_table(events, tmp_path / "events.parquet")
    log = parquet_log("ubi", str(tmp_path / "events.parquet"), str(tmp_path / "queries.parquet"))
    for by in (("day",), ("query",), ("day", "query")):
        assert_equal(postgres_online(project, by=by),
                     duckdb_online(log, by=by, query_of=query_matcher(project)))  # fmt: skip
    table = postgres_online(project, by=("day",))
    assert (table.impressions[0], table.clicks[0], table.successful_sessions[0]) == (2, 2, 1)
