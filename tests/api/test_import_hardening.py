"""Hostile and accidental uploads: a line-numbered 400 and nothing written, never a 500;
the judgement log cannot be rewritten by an import; CSV exports are spreadsheet-safe."""

import csv
import io
import json
import tracemalloc
from datetime import UTC, datetime, timedelta

import pytest

from judgements import importers
from judgements.importers import Vocabulary
from judgements.importers.json_reading import MAX_JSON_BYTES
from judgements.models import Document, Judgement, Query
from tests.api.conftest import row_counts, upload
from tests.factories import QueryFactory, UserFactory

EVENT = {"query": "tent", "document": "SKU-1", "rater": "alice", "grade": 2}


@pytest.fixture
def charlie(client_as, analyst):
    return client_as(analyst)


def refused(client, endpoint: str, content, file_format: str | None, **fields) -> list[dict]:
    """The errors of an upload that must be refused without writing anything."""
    if isinstance(content, str):
        content = content.encode()
    before = row_counts()
    data = {"file": upload(content), **fields}
    if file_format:
        data["format"] = file_format
    response = client.post(f"/api/projects/outdoor/{endpoint}/import/", data, format="multipart")
    assert response.status_code == 400, response.content[:300]
    assert row_counts() == before
    return response.json()["errors"]


def jsonl(*objects) -> str:
    return "".join(json.dumps(item) + "\n" for item in objects)


DEEP = "[" * 500 + "]" * 500
DEEPER = "[" * 100_000 + "]" * 100_000
HUGE = "9" * 5000


@pytest.mark.parametrize(
    ("endpoint", "file_format", "content", "line", "words"),
    [
        ("queries", "json", '{"queries": [\n' + DEEP + "]}", 2, "deeper than 64"),
        ("queries", "json", DEEPER, 1, "deeper than 64"),
        ("result-lists", "json", '{"name": "x", "queries": [' + DEEPER + "]}", 1, "deeper"),
        ("judgements", "rre", '{"query_groups": [\n\n' + DEEP + "]}", 3, "deeper than 64"),
        ("documents", None, '{"id": "A"}\n{"id": "B", "x": ' + DEEP + "}\n", 2, "deeper"),
        ("documents", None, '{"id": "A", "x": ' + DEEPER + "}\n", 1, "not valid JSON"),
        ("judgements", "jsonl", '{"query": ' + DEEPER + "}\n", 1, "not valid JSON"),
        ("queries", "json", '[\n"tent",\n' + HUGE + "]", 3, "too large"),
        ("documents", None, '{"id": "A", "n": ' + HUGE + "}\n", 1, "not valid JSON"),
        ("judgements", "jsonl", jsonl(EVENT) + '{"grade": ' + HUGE + "}", 2, "JSON"),
    ],
    ids=[
        "queries 500 deep", "queries 100k deep", "run 100k deep", "rre 500 deep",
        "documents 500 deep", "documents 100k deep", "events 100k deep", "queries huge int",
        "documents huge int", "events huge int",
    ],
)  # fmt: skip
def test_deep_json_and_huge_integers_are_line_numbered_400s(
    charlie, query_with_hits, rater, endpoint, file_format, content, line, words
):
    errors = refused(charlie, endpoint, content, file_format)
    assert any(error["line"] == line and words in error["message"] for error in errors), errors


@pytest.mark.parametrize(
    ("content", "field", "line"),
    [
        ('{\n"query_groups": 5}', "query_groups", 2),
        ('{"topics": 5}', "topics", 1),
        ('{"queries": "tent"}', "queries", 1),
        ('{"topics": [\n7]}', "topics.item", 2),
        ('{"query_groups": [{"name": "tent",\n"relevant_documents": [{"document_ids": 5}]}]}',
         "relevant_documents", 2),
        ('{"query_groups": [{"name": "tent", "relevant_documents": {"SKU-1": {"gain": [1]}}}]}',
         "gain", 1),
    ],
)  # fmt: skip
def test_rre_parts_of_the_wrong_type_are_named(charlie, query_with_hits, content, field, line):
    errors = refused(charlie, "judgements", content, "rre")
    assert any(error["field"] == field and error["line"] == line for error in errors), errors


def test_a_grade_given_as_a_list_is_refused(charlie, query_with_hits, rater):
    errors = refused(charlie, "judgements", jsonl(EVENT | {"grade": [2]}), "jsonl")
    assert errors[0] == {"field": "grade", "line": 1, "message": "must be a number, not a list."}


def test_an_unclosed_quote_in_a_csv_is_refused(charlie, project):
    errors = refused(charlie, "queries", 'text\ntent\n"boots\nhat\nscarf\n', "csv")
    assert errors[0] == {
        "field": None,
        "line": 3,
        "message": "A quote opened on this line is never closed.",
    }


@pytest.mark.parametrize("text", ["NaN", "nan", "NULL"])
def test_a_spreadsheets_missing_value_is_not_a_query(charlie, project, text):
    errors = refused(charlie, "queries", f"text,id\ntent,1\n{text},2\n", "csv")
    message = f'"{text}" is how spreadsheets write a missing value.'
    assert errors == [{"field": "text", "line": 3, "message": message}]


# Arabic-Indic three, full-width three, and an ASCII 3 followed by an Arabic-Indic 3.
@pytest.mark.parametrize("grade", ["\u0663", "\uff13", "3\u0663"])
def test_grades_in_other_digits_than_ascii_are_refused(charlie, query_with_hits, grade):
    errors = refused(charlie, "judgements", f"query,docid,rating\ntent,SKU-1,{grade}\n", "quepid")
    assert errors[0]["message"] == f'"{grade}" is not a number (digits 0-9 only).'


@pytest.mark.parametrize(
    ("endpoint", "file_format", "content", "field"),
    [
        ("documents", None, jsonl({"id": "SKU 9"}), "id"),
        ("documents", None, jsonl({"id": "SKU\n9"}), "id"),
        ("documents", None, jsonl({"docid": "SKU\t9"}), "docid"),
        ("result-lists", "json",
         json.dumps({"name": "x", "queries": [{"query": "tent", "hits": [{"id": "A B"}]}]}), "id"),
        ("judgements", "quepid", 'query,docid,rating\ntent,"NEW\n1 0 INJECTED 3",1\n', "docid"),
    ],
)  # fmt: skip
def test_document_ids_with_whitespace_are_refused(
    charlie, query_with_hits, endpoint, file_format, content, field
):
    extra = {"create_missing": "true"} if endpoint == "judgements" else {}
    errors = refused(charlie, endpoint, content, file_format, **extra)
    assert any(e["field"] == field and "contains whitespace" in e["message"] for e in errors)


# The judgement log cannot be rewritten by an import.


def test_events_dated_in_the_future_are_refused(charlie, query_with_hits, rater):
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    far = EVENT | {"created_at": "9999-12-31T00:00:00Z"}
    errors = refused(charlie, "judgements", jsonl(far, EVENT | {"created_at": later}), "jsonl")
    assert [(e["line"], e["field"]) for e in errors] == [(1, "created_at"), (2, "created_at")]
    assert "in the future" in errors[0]["message"]


def test_events_a_few_seconds_ahead_are_clock_skew_and_accepted(charlie, query_with_hits, rater):
    soon = (datetime.now(UTC) + timedelta(seconds=30)).isoformat()
    response = charlie.post(
        "/api/projects/outdoor/judgements/import/",
        {"file": upload(jsonl(EVENT | {"created_at": soon})), "format": "jsonl"},
        format="multipart",
    )
    assert response.status_code == 201, response.json()


@pytest.mark.parametrize("who", ["inactive", "no role"])
def test_events_need_an_active_user_with_the_rater_role(charlie, query_with_hits, who):
    if who == "inactive":
        UserFactory(username="alice", roles=["rater"], is_active=False)
    else:
        UserFactory(username="alice")
    errors = refused(charlie, "judgements", jsonl(EVENT), "jsonl")
    assert errors == [
        {
            "field": "rater",
            "line": 1,
            "message": '"alice" is not an active user with the rater role.',
        }
    ]


def test_events_of_the_import_rater_are_accepted(charlie, query_with_hits):
    event = EVENT | {"rater": "import.outdoor"}
    response = charlie.post(
        "/api/projects/outdoor/judgements/import/",
        {"file": upload(jsonl(event)), "format": "jsonl"},
        format="multipart",
    )
    assert response.status_code == 201, response.json()


def test_the_same_events_file_sent_twice_adds_nothing(charlie, query_with_hits, rater):
    events = jsonl(
        EVENT | {"id": "e1", "created_at": "2026-01-01T00:00:00Z"},
        EVENT | {"id": "e2", "grade": 3},  # no time: kept apart by its id alone
    )
    url = "/api/projects/outdoor/judgements/import/"
    first = charlie.post(url, {"file": upload(events), "format": "jsonl"}, format="multipart")
    second = charlie.post(url, {"file": upload(events), "format": "jsonl"}, format="multipart")
    assert (first.json()["created"], second.json()["created"]) == (2, 0)
    assert second.json()["skipped"] == {"already imported": 2}
    assert Judgement.objects.count() == 2


def test_an_exported_event_log_imported_again_adds_nothing(charlie, judged):
    response = charlie.get("/api/projects/outdoor/judgements/export/?format=jsonl")
    content = b"".join(response.streaming_content)
    url = "/api/projects/outdoor/judgements/import/"
    body = charlie.post(url, {"file": upload(content), "format": "jsonl"}, format="multipart")
    assert body.json()["created"] == 0
    assert Judgement.objects.count() == 5


# CSV exports and spreadsheets.

FORMULA = '=HYPERLINK("http://x","click")'


def test_csv_exports_neutralise_cells_that_spreadsheets_would_run(charlie, judged, rater):
    QueryFactory(project=judged.project, text=FORMULA)
    query = Query.objects.get(text=FORMULA)
    document = Document.objects.get(external_id="SKU-1")
    Judgement.objects.create(query=query, document=document, rater=rater, grade=2, note="@SUM(A1)")
    response = charlie.get("/api/projects/outdoor/judgements/export/?format=csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert (rows[-1]["query"], rows[-1]["note"]) == ("'" + FORMULA, "'@SUM(A1)")
    assert rows[0]["query"] == "tent"
    raw = charlie.get("/api/projects/outdoor/judgements/export/?format=csv&raw=true")
    rows = list(csv.DictReader(io.StringIO(b"".join(raw.streaming_content).decode())))
    assert (rows[-1]["query"], rows[-1]["note"]) == (FORMULA, "@SUM(A1)")


def test_a_neutralised_quepid_export_imports_to_the_original_texts(charlie, judged, rater):
    for text in ("-tent", "'=odd"):
        query = QueryFactory(project=judged.project, text=text)
        document = Document.objects.get(external_id="SKU-3")
        Judgement.objects.create(query=query, document=document, rater=rater, grade=1)
    response = charlie.get("/api/projects/outdoor/consensus/export/?format=quepid")
    content = b"".join(response.streaming_content).decode()
    assert "'-tent,SKU-3,1" in content and "''=odd,SKU-3,1" in content
    body = charlie.post(
        "/api/projects/outdoor/judgements/import/",
        {"file": upload(content), "format": "quepid"},
        format="multipart",
    ).json()
    imported = Judgement.objects.filter(import_id=body["import_id"]).values_list("query__text")
    assert sorted(text for (text,) in imported) == ["'=odd", "-tent", "tent", "tent"]


# Memory stays flat on a large JSON upload.


def test_a_32_mb_json_upload_is_parsed_in_flat_memory():
    snippet = "a long description of a very good tent " * 250  # about 10 KB
    entry = json.dumps({"query": "tent", "hits": [{"id": "D", "snippet": snippet}]})
    entries = ",\n".join(entry.replace('"D"', f'"D{n}"', 1) for n in range(3_000))
    data = f'{{"name": "big", "queries": [\n{entries}\n]}}'.encode()
    assert 28 << 20 < len(data) <= MAX_JSON_BYTES
    vocabulary = Vocabulary(queries={"tent": 1})
    chunks = (data[start : start + (1 << 20)] for start in range(0, len(data), 1 << 20))
    tracemalloc.start()
    rows = sum(1 for item in importers.run_json(chunks, vocabulary) if hasattr(item, "rank"))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert rows == 3_000
    # A chunk or two of the file and one query at a time, not the file's text or tree.
    assert peak < 8 << 20, f"{peak / 2**20:.1f} MB"


def test_a_quepid_csv_is_parsed_a_block_of_lines_at_a_time():
    lines = 300_000  # about 7 MB
    text = "".join(f"q{n // 100},D{n},{n % 4}\n" for n in range(lines))
    data = ("query,docid,rating\n" + text).encode()
    vocabulary = Vocabulary(
        grades=frozenset(range(4)),
        queries={f"q{n}": n + 1 for n in range(lines // 100)},
        documents={f"D{n}": n + 1 for n in range(lines)},
    )
    chunks = (data[start : start + (1 << 20)] for start in range(0, len(data), 1 << 20))
    tracemalloc.start()
    rows = sum(map(len, importers.quepid_csv(chunks, vocabulary)))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert rows == lines
    # The pairs kept for the repeat check (16 bytes a line) and a block or two; the
    # file's cells alone would take 50 MB.
    assert peak < 32 << 20, f"{peak / 2**20:.1f} MB"


@pytest.mark.parametrize(
    ("text", "lone"),
    [
        (rb'"\ud83d\ude00"', False),  # a pair: one character
        (rb'"\ud83d"', True),
        (rb'"\ude00"', True),
        (rb'"\ude00\ud83d"', True),  # the halves the wrong way round
        (rb'"\\ud800"', False),  # an escaped backslash, then the text "ud800"
        (rb'"\\\ud800"', True),
        (rb'"\u00e9\n"', False),
        (rb'"a \ud83d', None),  # may be a pair with the next piece
    ],
)
def test_a_lone_escaped_surrogate_is_found_and_a_pair_is_not(text, lone):
    from judgements.importers.json_reading import lone_surrogate

    assert lone_surrogate(text) is lone


def test_a_pair_split_between_two_pieces_is_still_a_pair():
    from judgements.importers.json_reading import lone_surrogate

    assert lone_surrogate(rb'["a \ud83d', False) is None
    assert lone_surrogate(rb'\ude00"]', True) is False
    assert lone_surrogate(rb'x"]', True) is True


def test_escaped_characters_outside_the_basic_plane_are_imported_as_themselves(
    client_as, analyst, query_with_hits
):
    body = b'["hat \\ud83e\\uddf7", "caf\\u00e9"]'
    response = client_as(analyst).post(
        "/api/projects/outdoor/queries/import/",
        {"file": upload(body), "format": "json"},
        format="multipart",
    )

    assert response.status_code == 201, response.json()
    assert set(Query.objects.values_list("text", flat=True)) >= {"hat \U0001f9f7", "café"}
