"""The search-log endpoints: ingest a batch, read and export the online metrics."""

import csv
import io

import pytest

from searchlogs.models import SearchEvent
from tests.api.conftest import upload
from tests.factories import UserFactory
from tests.searchlogs.conftest import WORKED_LOG, impression, jsonl
from tests.searchlogs.test_ubi_files import CHORUS

IMPORT = "/api/projects/outdoor/search-log/import/"
METRICS = "/api/projects/outdoor/search-log/metrics/"
EXPORT = "/api/projects/outdoor/search-log/metrics/export/"


@pytest.fixture
def charlie(client_as, analyst):
    return client_as(analyst)


def send(client, payload: bytes):
    return client.post(IMPORT, {"file": upload(payload, "log.jsonl")}, format="multipart")


def test_an_analyst_sends_a_batch(charlie, queries):
    response = send(charlie, jsonl(*WORKED_LOG))

    assert response.status_code == 201
    assert response.json() == {
        "rows": 9,
        "created": 9,
        "already_stored": 0,
        "kinds": {"impression": 5, "click": 2, "dwell": 2},
        "unmatched": 2,
        "unmatched_texts": [["sleeping bag", 2]],
    }
    assert SearchEvent.objects.count() == 9


def test_an_admin_may_send_a_batch_and_a_rater_may_not(client_as, rater, queries):
    admin = UserFactory(username="erin", roles=["admin"])
    payload = jsonl(impression("e1", "s1", "2026-11-20T10:00:00Z", "tent"))

    assert send(client_as(rater), payload).status_code == 403
    assert send(client_as(admin), payload).status_code == 201


def test_sending_the_batch_twice_stores_it_once(charlie, queries):
    send(charlie, jsonl(*WORKED_LOG))

    again = send(charlie, jsonl(*WORKED_LOG)).json()

    assert (again["created"], again["already_stored"]) == (0, 9)
    assert SearchEvent.objects.count() == 9


def test_a_bad_batch_lists_every_bad_line_and_writes_nothing(charlie, queries):
    payload = jsonl(WORKED_LOG[0]) + b"not json\n" + jsonl({**WORKED_LOG[1], "time": "noon"})

    response = send(charlie, payload)

    assert response.status_code == 400
    assert response.json() == {
        "errors": [
            {"field": None, "line": 2, "message": "This is not valid JSON: Expecting value."},
            {"field": "time", "line": 3, "message": '"noon" is not an ISO 8601 time.'},
        ]
    }
    assert SearchEvent.objects.count() == 0


def test_the_daily_metrics(charlie, queries):
    send(charlie, jsonl(*WORKED_LOG))

    body = charlie.get(METRICS).json()

    assert (body["by"], body["success_dwell"]) == ("day", 10.0)
    (row,) = body["results"]
    assert row["day"] == "2026-11-20" and row["query"] is None
    assert (row["impressions"], row["clicks"], row["ctr"]) == (5, 2, 0.4)
    assert (row["sessions"], row["successful_sessions"], row["seconds_to_success"]) == (3, 2, 15.0)


def test_the_metrics_per_query_with_another_threshold(charlie, queries):
    send(charlie, jsonl(*WORKED_LOG))

    body = charlie.get(METRICS, {"by": "query", "success_dwell": 60}).json()

    rows = {row["query"]: row for row in body["results"]}
    tent, pegs = queries["tent"].pk, queries["tent pegs"].pk
    assert set(rows) == {tent, pegs, None}
    # At 60 s only s2's answered page succeeds; s1 and s2 began with "tent".
    assert (rows[tent]["sessions"], rows[tent]["successful_sessions"]) == (2, 1)
    assert rows[None]["impressions"] == 2  # "sleeping bag" twice, unmatched
    assert body["success_dwell"] == 60.0


@pytest.mark.parametrize(
    ("params", "field"),
    [({"by": "week"}, "by"), ({"success_dwell": "-1"}, "success_dwell"),
     ({"success_dwell": "nan"}, "success_dwell"), ({"success_dwell": "ten"}, "success_dwell")],
)  # fmt: skip
def test_bad_parameters_are_named(charlie, queries, params, field):
    response = charlie.get(METRICS, params)

    assert response.status_code == 400
    assert [error["field"] for error in response.json()["errors"]] == [field]


def test_the_csv_export_has_the_same_figures(charlie, queries):
    send(charlie, jsonl(*WORKED_LOG))

    response = charlie.get(EXPORT, {"by": "day_query"})

    assert response["Content-Type"] == "text/csv"
    assert "outdoor-online-by-day_query.csv" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    by_query = {row["query"]: row for row in rows}
    tent = by_query[str(queries["tent"].pk)]
    assert (tent["day"], tent["impressions"], tent["clicks"], tent["sessions"]) == (
        "2026-11-20", "2", "1", "2",
    )  # fmt: skip
    assert by_query[""]["impressions"] == "2" and by_query[""]["success_rate"] == "0.0"
    assert tent["success_dwell"] == "10.0"


def test_the_export_of_one_query(charlie, queries):
    send(charlie, jsonl(*WORKED_LOG))
    pegs = queries["tent pegs"].pk

    response = charlie.get(EXPORT, {"by": "day_query", "query": pegs})

    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(row["query"], row["impressions"], row["clicks"]) for row in rows] == [
        (str(pegs), "1", "1")
    ]


def test_an_unknown_project_is_a_404_in_the_error_shape(charlie):
    response = charlie.get("/api/projects/nope/search-log/metrics/")

    assert response.status_code == 404
    assert list(response.json()) == ["errors"]


def chorus_esci() -> bytes:
    """Chorus's ESCI sample (its _bulk lines verbatim), whose ordinals count from 0."""
    lines = CHORUS.read_bytes().splitlines(keepends=True)
    return b"".join(action + record for action, record in zip(lines[::2], lines[1::2], strict=True)
                    if b'"application": "esci_ubi_sample"' in record)  # fmt: skip


def test_ubi_records_are_sent_through_the_api_as_the_command_reads_them(charlie, queries):
    response = charlie.post(
        IMPORT,
        {"file": upload(chorus_esci(), "ubi.ndjson"), "format": "ubi", "ordinal_base": 0},
        format="multipart",
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["kinds"] == {"impression": 200, "click": 60} and body["created"] == 260
    assert SearchEvent.objects.filter(kind=1, rank=1).exists()
    # Sent again: every event is known already.
    again = charlie.post(
        IMPORT,
        {"file": upload(chorus_esci(), "ubi.ndjson"), "format": "ubi", "ordinal_base": 0},
        format="multipart",
    )
    assert again.status_code == 201 and again.json()["created"] == 0


def test_ubi_ordinals_read_from_1_by_default_are_line_numbered_errors(charlie, queries):
    response = charlie.post(
        IMPORT, {"file": upload(chorus_esci(), "ubi.ndjson"), "format": "ubi"}, format="multipart"
    )

    assert response.status_code == 400
    errors = response.json()["errors"]
    assert errors and all(error["line"] for error in errors)
    assert any(error["field"] == "event_attributes.position.ordinal" and "ordinal base 0"
               in error["message"] for error in errors)  # fmt: skip
    assert SearchEvent.objects.count() == 0


@pytest.mark.parametrize(
    "fields, name", [({"format": "parquet"}, "format"), ({"ordinal_base": 2}, "ordinal_base")]
)
def test_an_unknown_format_or_base_is_a_400_naming_it(charlie, queries, fields, name):
    response = charlie.post(
        IMPORT, {"file": upload(jsonl(*WORKED_LOG), "log.jsonl"), **fields}, format="multipart"
    )

    assert response.status_code == 400
    [error] = response.json()["errors"]
    assert error["field"] == name and "not a valid choice" in error["message"]
    assert SearchEvent.objects.count() == 0
