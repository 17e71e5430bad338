"""Real UBI files as their projects publish them (tests/data/ubi, with their licences)."""

import json
from pathlib import Path

import pytest

from judgements.importers import ImportRejected
from searchlogs.engines import postgres_online
from searchlogs.models import SearchEvent
from searchlogs.services import search_log_ingest
from searchlogs.ubi import UbiBatch
from searchlogs.ubi_schema import schema_errors

DATA = Path(__file__).resolve().parents[1] / "data" / "ubi"
CHORUS = DATA / "chorus-opensearch-edition" / "ubi_queries_events.ndjson"


def test_the_specification_s_own_sample_event_breaks_its_schema(project):
    # Its position is {} (neither an ordinal nor x/y) and its object has no object_id.
    record = json.loads((DATA / "o19s-ubi" / "event-opensearch.json").read_text())
    with pytest.raises(ImportRejected) as rejected:
        search_log_ingest(project=project, upload=[json.dumps(record).encode()], format="ubi")

    fields = [(error.line, error.field) for error in rejected.value.errors]
    assert fields == [(1, "event_attributes.position"), (1, "event_attributes.object")]
    assert "oneOf" in rejected.value.errors[0].message
    assert "object_id" in rejected.value.errors[1].message


def test_the_specification_s_sample_query_holds_a_valid_record_without_a_time(project):
    # The sample is a query request; its UBI record is ext.ubi, valid under the schema.
    request = json.loads((DATA / "o19s-ubi" / "query-opensearch.json").read_text())
    record = request["ext"]["ubi"]
    assert schema_errors("query", record) == []
    # It has no timestamp (the plugin adds one when it indexes it): we need one.
    with pytest.raises(ImportRejected) as rejected:
        search_log_ingest(project=project, upload=[json.dumps(record).encode()], format="ubi")
    (error,) = rejected.value.errors
    assert (error.line, error.field, error.message) == (1, "timestamp", "is missing.")


def test_chorus_s_sample_data_is_refused_whole_with_every_problem_on_its_line(project):
    with pytest.raises(ImportRejected) as rejected:
        search_log_ingest(project=project, upload=[CHORUS.read_bytes()], format="ubi")
    assert rejected.value.total > 100 and SearchEvent.objects.count() == 0

    # Every problem, uncapped: each on a record's line, never a _bulk action's.
    batch = UbiBatch(project_id=project.pk)
    batch.read([CHORUS.read_bytes()])
    errors = next(iter(batch.blocks()))[1]
    lines = CHORUS.read_text().splitlines()
    assert all(b"_index" not in lines[error.line - 1][:20].encode() for error in errors)

    def count(field, words):
        return sum(error.field == field and words in error.message for error in errors)

    # The synthetic "ubi-demo" events carry epoch milliseconds, not ISO 8601 times.
    assert count("timestamp", 'is not of type "string"') == 429
    # Chorus logs a query record per request under one query id (pagination, facets).
    assert count("query_id", "is the query id of line") > 0
    # Its shop's events name query ids that the sample's ubi_queries do not hold.
    assert count("query_id", "names no query record") > 400
    # Filter and sort events whose object has no object_id; ESCI's ordinals from 0.
    assert count("event_attributes.object", '"object_id" is a required property') > 0
    assert count("event_attributes.position.ordinal", "ordinal base 0") > 0


def test_chorus_s_esci_sample_is_read_with_ordinals_from_zero(project):
    """The sample's ESCI part, its lines taken verbatim (with their _bulk actions)."""
    lines = CHORUS.read_bytes().splitlines(keepends=True)
    esci = b"".join(action + record for action, record in zip(lines[::2], lines[1::2], strict=True)
                    if b'"application": "esci_ubi_sample"' in record)  # fmt: skip

    result = search_log_ingest(project=project, upload=[esci], format="ubi", ordinal_base=0)

    # 200 query records, 60 clicks (no dwell times); 1,000 single-document impressions.
    assert result.kinds == {"impression": 200, "click": 60}
    assert result.other_actions == {"impression": 1000}
    assert SearchEvent.objects.filter(project=project, kind=1, rank=1).exists()
    table = postgres_online(project, by=("day",))
    assert table.impressions.sum() == 200 and table.orphan_clicks.sum() == 0
    assert table.clicks.sum() == 60 and table.successful_sessions.sum() == 0
