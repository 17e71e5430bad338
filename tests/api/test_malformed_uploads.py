"""A corpus of broken uploads: each is refused with a clear message and writes nothing."""

import json

import pytest

from tests.api.conftest import row_counts, upload
from tests.factories import QueryFactory

QUEPID = "query,docid,rating\n"
GOOD_QUEPID = QUEPID + "tent,SKU-1,3\n"
EVENT = {"query": "tent", "document": "SKU-1", "rater": "alice", "grade": 2}


def jsonl(*objects) -> str:
    return "".join(json.dumps(item) + "\n" for item in objects)


UNKNOWN_QUERY_RUN = json.dumps({"name": "x", "queries": [{"query": "hat", "hits": [{"id": "A"}]}]})
RRE_GAIN_7 = (
    '{"queries": [{"placeholders": {"$query": "tent"},\n'
    '"relevant_documents": {"SKU-1": {"gain": 7}}}]}'
)


def big_documents() -> bytes:
    """About 50 MB of documents with long snippets, broken on the very last line."""
    snippet = "a long description of a very good tent " * 1300
    line = json.dumps({"id": "D", "snippet": snippet})
    lines = [line.replace('"D"', f'"D{number}"', 1) for number in range(1000)]
    return ("\n".join(lines) + '\n{"id": "LAST", "title": }\n').encode()


# (what, endpoint, format, content, line, expected words in that line's error)
CASES = [
    ("queries: empty file", "queries", "csv", b"", None, "empty"),
    ("queries: no text column", "queries", "csv", "name\ntent\n", 1, "needs text or query"),
    ("queries: repeated query", "queries", "csv", "text\nhat\nscarf\nhat\n", 4, "repeats line 2"),
    ("queries: empty text", "queries", "csv", "text,description\nhat,\n,x\n", 3, "is empty"),
    (
        "queries: text too long",
        "queries",
        "csv",
        "text\n" + "x" * 501 + "\n",
        2,
        "longer than 500",
    ),
    ("queries: not JSON", "queries", "json", '["tent",', 1, "not valid JSON"),
    ("queries: JSON of the wrong shape", "queries", "json", '{"items": []}', 1, "Expected a list"),
    ("queries: a number for a query", "queries", "json", '["hat", 7]', 1, "string or an obj"),
    ("queries: Latin-1 text", "queries", "csv", b"text\nhat\nsac \xe0 dos\n", 3, "0xe0"),
    ("queries: UTF-16 file", "queries", "csv", "text\nhat\n".encode("utf-16"), None, "UTF-16"),
    ("queries: NUL character", "queries", "csv", "text\nhat\nha\x00t\n", 3, "NUL byte"),
    ("documents: not JSON", "documents", "jsonl", '{"id": "A"}\n{"id": \n', 2, "not valid JSON"),
    ("documents: a list for a line", "documents", "jsonl", '{"id": "A"}\n[1, 2]\n', 2, "object"),
    ("documents: no id", "documents", "jsonl", '{"id": "A"}\n{"title": "B"}\n', 2, "is empty"),
    ("documents: bad URL", "documents", "jsonl", '{"id": "A", "url": "shop"}\n', 1, "not a URL"),
    ("documents: NaN in a field", "documents", "jsonl", '{"id": 1, "x": NaN}\n', 1, "NaN"),
    ("documents: repeated id", "documents", "jsonl", '{"id": 1}\n{"id": "1"}\n', 2, "repeats"),
    ("documents: a PNG image", "documents", "jsonl", b"\x89PNG\r\n\x1a\n\x00\x00", 3, "NUL"),
    ("documents: a 2 MB line", "documents", "jsonl", "{}\n" + "x" * (2 << 20), 2, "longer than"),
    ("documents: 50 MB, last line broken", "documents", "jsonl", big_documents(), 1001, "JSON"),
    ("run: five columns", "result-lists", "trec", "{qid} Q0 SKU-1 1 2.5\n", 1, "5 columns"),
    ("run: unknown qid", "result-lists", "trec", "999999 Q0 SKU-1 1 1 r\n", 1, "unknown to the"),
    ("run: tag too long", "result-lists", "trec", "{qid} Q0 A 1 1 " + "r" * 201, None, "200"),
    ("run: score not a number", "result-lists", "trec", "{qid} Q0 SKU-1 1 high r\n", 1, "number"),
    (
        "run: repeated document",
        "result-lists",
        "trec",
        "{qid} Q0 A 1 2 r\n{qid} Q0 A 2 1 r\n",
        2,
        "repeats",
    ),
    ("run: JSON without queries", "result-lists", "json", '{"name": "x"}', 1, "Expected"),
    ("run: JSON with unknown query", "result-lists", "json", UNKNOWN_QUERY_RUN, 1, "unknown to"),
    (
        "quepid: grade outside the scale",
        "judgements",
        "quepid",
        GOOD_QUEPID + "tent,SKU-2,4\n",
        3,
        "The project's scale is 0-3, but 1 grades are outside it",
    ),
    (
        "quepid: unknown query",
        "judgements",
        "quepid",
        GOOD_QUEPID + "hat,SKU-2,1\n",
        3,
        '1 queries unknown to the project, e.g. "hat" (line 3)',
    ),
    (
        "quepid: unknown document",
        "judgements",
        "quepid",
        GOOD_QUEPID + "tent,SKU-99,1\n",
        3,
        '1 documents unknown to the project, e.g. "SKU-99"',
    ),
    ("quepid: two columns", "judgements", "quepid", GOOD_QUEPID + "tent,SKU-2\n", 3, "2 columns"),
    (
        "quepid: an empty query",
        "judgements",
        "quepid",
        GOOD_QUEPID + ",SKU-2,1\n",
        3,
        '"" is not a query of this project',
    ),
    ("quepid: no rating column", "judgements", "quepid", "query,docid\ntent,SKU-1\n", 1, "rating"),
    (
        "quepid: repeated pair",
        "judgements",
        "quepid",
        GOOD_QUEPID + "tent,SKU-1,2\n",
        3,
        "repeats line 2",
    ),
    (
        "quepid: half grade",
        "judgements",
        "quepid",
        GOOD_QUEPID + "tent,SKU-2,2.5\n",
        3,
        "whole number",
    ),
    ("qrels: only blank lines", "judgements", "qrels", b"\n\n \n", None, "The file is empty."),
    (
        "qrels: three columns",
        "judgements",
        "qrels",
        "{qid} 0 SKU-1 1\n{qid} SKU-2 1\n",
        2,
        "3 columns",
    ),
    (
        "qrels: unknown qid",
        "judgements",
        "qrels",
        "{qid} 0 SKU-1 1\n0 0 SKU-2 1\n",
        2,
        'query ids unknown to the project, e.g. "0" (line 2)',
    ),
    ("qrels: negative grade", "judgements", "qrels", "{qid} 0 SKU-1 -1\n", 1, "from -1 to -1"),
    ("rre: not JSON", "judgements", "rre", '{"query_groups": [', 1, "not valid JSON"),
    ("rre: no query groups", "judgements", "rre", '{"index": "x"}', 1, "no query groups"),
    ("rre: gain outside the scale", "judgements", "rre", RRE_GAIN_7, 2, "outside it"),
    (
        "opensearch: an empty query",
        "judgements",
        "opensearch",
        '{"judgmentRatings": [\n{"query": "", "ratings": [{"docId": "SKU-1", "rating": "1"}]}]}',
        2,
        '"" is not a query of this project',
    ),
    ("ltr: no comment", "judgements", "ltr", "3 qid:1 1:0.5\n", 1, 'Expected "grade qid:N'),
    (
        "ltr: a qid with two queries",
        "judgements",
        "ltr",
        "3 qid:1 # SKU-1 tent\n1 qid:1 # SKU-2 boots\n",
        2,
        'was "tent"',
    ),
    (
        "events: unknown rater",
        "judgements",
        "jsonl",
        jsonl(EVENT, EVENT | {"rater": "zoe"}),
        2,
        "not a user",
    ),
    (
        "events: time in words",
        "judgements",
        "jsonl",
        jsonl(EVENT | {"created_at": "yesterday"}),
        1,
        "ISO 8601",
    ),
    (
        "events: time without zone",
        "judgements",
        "jsonl",
        jsonl(EVENT | {"created_at": "2026-01-01T10:00"}),
        1,
        "time zone",
    ),
    (
        "events: can't tell with a grade",
        "judgements",
        "jsonl",
        jsonl(EVENT | {"kind": "cant_tell"}),
        1,
        "has no grade",
    ),
    (
        "events: unknown kind",
        "judgements",
        "jsonl",
        jsonl(EVENT | {"kind": "maybe"}),
        1,
        "must be one of",
    ),
    (
        "events: a lone surrogate in a note",
        "judgements",
        "jsonl",
        jsonl(EVENT) + '{"query": "tent", "document": "SKU-2", "rater": "alice", "grade": 1,'
        ' "note": "a\\ud800"}\n',
        2,
        "surrogate",
    ),
    (
        "documents: a lone surrogate in a title",
        "documents",
        "jsonl",
        '{"id": "A"}\n{"id": "B", "title": "\\udfff"}\n',
        2,
        "surrogate",
    ),
    ("queries: a lone surrogate", "queries", "json", '["hat", "te\\ud800nt"]', 1, "surrogate"),
    (
        "run: a lone surrogate in a document id",
        "result-lists",
        "json",
        '{"name": "x", "queries": [{"query": "tent", "hits": [{"id": "\\ud800"}]}]}',
        1,
        "surrogate",
    ),
    (
        "rre: a lone surrogate in a document id",
        "judgements",
        "rre",
        '{"queries": [{"placeholders": {"$query": "tent"},\n'
        '"relevant_documents": {"\\ud800": {"gain": 2}}}]}',
        2,
        "surrogate",
    ),
    (
        "events: repeated line",
        "judgements",
        "csv",
        "query,document,rater,grade\ntent,SKU-1,alice,1\ntent,SKU-1,alice,1\n",
        3,
        "repeats line 2",
    ),
]


@pytest.fixture
def catalogue(query_with_hits, rater):
    QueryFactory(project=query_with_hits.project, text="boots")
    return query_with_hits


@pytest.mark.parametrize(
    ("endpoint", "file_format", "content", "line", "words"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_a_broken_upload_is_refused_and_writes_nothing(
    client_as, analyst, catalogue, endpoint, file_format, content, line, words, settings
):
    # Every case in the request, even the large one: tests/api/test_projects.py checks
    # that a large upload's job reports the same errors.
    settings.UPLOAD_BACKGROUND_BYTES = 1 << 30
    if isinstance(content, str):
        content = content.replace("{qid}", str(catalogue.pk)).encode()
    before = row_counts()
    response = client_as(analyst).post(
        f"/api/projects/outdoor/{endpoint}/import/",
        {"file": upload(content), "format": file_format},
        format="multipart",
    )
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert any(error["line"] == line and words in error["message"] for error in errors), errors
    assert row_counts() == before


def test_the_corpus_has_at_least_thirty_cases():
    assert len(CASES) >= 30


def test_errors_are_capped_at_a_hundred_and_the_rest_counted(client_as, analyst, catalogue):
    content = QUEPID + "tent,SKU-1,x\n" * 150
    response = client_as(analyst).post(
        "/api/projects/outdoor/judgements/import/",
        {"file": upload(content), "format": "quepid"},
        format="multipart",
    )
    errors = response.json()["errors"]
    assert len(errors) == 101
    assert errors[0] == {
        "field": "rating",
        "line": 2,
        "message": '"x" is not a number (digits 0-9 only).',
    }
    assert errors[-1]["message"].startswith("… and 50 more errors (150 in all)")


def test_a_rows_written_before_the_last_line_are_rolled_back(
    client_as, analyst, catalogue, monkeypatch
):
    # Small batches, so that rows reach the database before the broken line is read.
    monkeypatch.setattr("judgements.imports.common.IMPORT_BATCH", 1)
    content = "text\n" + "".join(f"query {number}\n" for number in range(10)) + "query 3\n"
    before = row_counts()
    response = client_as(analyst).post(
        "/api/projects/outdoor/queries/import/",
        {"file": upload(content), "format": "csv"},
        format="multipart",
    )
    assert response.json()["errors"] == [
        {"field": "text", "line": 12, "message": "This query repeats line 5."}
    ]
    assert row_counts() == before


def test_a_missing_file_is_a_field_error(client_as, analyst, catalogue):
    response = client_as(analyst).post(
        "/api/projects/outdoor/judgements/import/", {"format": "quepid"}, format="multipart"
    )
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"field": "file", "line": None, "message": "No file was submitted."}
    ]
