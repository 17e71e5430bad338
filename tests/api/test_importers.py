"""The parsers alone: rows and line-numbered errors, no database."""

import json

import pytest

from judgements import importers
from judgements.importers import JudgementRow, LineError, Vocabulary
from judgements.importers.json_reading import json_values
from judgements.importers.reading import MAX_LINE_BYTES, Lines

VOCABULARY = Vocabulary(
    grades=frozenset({0, 1, 2, 3}),
    queries={"tent": 1, "boots": 2},
    qids={"1": 1, "2": 2},
    documents={"SKU-1": 10, "SKU-2": 11},
    raters={"alice": 5},
)


def parse(parser, text: str | bytes, chunk: int = 1 << 20):
    data = text.encode() if isinstance(text, str) else text
    chunks = [data[start : start + chunk] for start in range(0, len(data), chunk)]
    return list(importers.one_by_one(parser(chunks, VOCABULARY)))


def errors_of(items) -> list[str]:
    return [str(item) for item in items if isinstance(item, LineError)]


def test_it_reads_quepid_ratings_and_skips_an_unrated_query():
    rows = parse(importers.quepid_csv, "query,docid,rating\ntent,SKU-1,3\nboots\nboots,SKU-2,0\n")
    assert rows == [JudgementRow(2, 1, 10, 3), JudgementRow(4, 2, 11, 0)]


def test_grades_outside_the_scale_are_one_error_at_the_first_of_them():
    text = "query,docid,rating\ntent,SKU-1,3\ntent,SKU-2,4\nboots,SKU-1,-2\n"
    assert errors_of(parse(importers.quepid_csv, text)) == [
        "line 3, column rating: The project's scale is 0-3, but 2 grades are outside it "
        "(from -2 to 4, the first on this line): map the file's grades to the scale, or "
        "change the scale."
    ]


def test_it_reports_every_problem_of_a_line_and_unknown_names_once_at_the_end():
    rows = parse(importers.quepid_csv, "query,docid,rating\nhat,SKU-9,x\nhat,SKU-8,1\n")
    assert errors_of(rows) == [
        'line 2, column rating: "x" is not a number (digits 0-9 only).',
        'line 2, column query: 1 queries unknown to the project, e.g. "hat" (line 2). '
        "Import them first, or import with create_missing to create them.",
        'line 2, column docid: 2 documents unknown to the project, e.g. "SKU-9" (line 2), '
        '"SKU-8" (line 3). Import them first, or import with create_missing to create them.',
    ]


def test_it_reports_a_repeated_pair_with_the_line_it_repeats():
    text = "query,docid,rating\ntent,SKU-1,3\ntent,SKU-2,1\ntent,SKU-1,2\n"
    rows = parse(importers.quepid_csv, text)
    assert errors_of(rows) == [
        "line 4, column docid: This query and document pair repeats line 2."
    ]


def test_quoted_fields_may_hold_commas_and_line_ends():
    vocabulary = Vocabulary(grades=frozenset({0, 1}), queries={'tent, "2 person"\nsale': 7})
    vocabulary.documents["SKU-1"] = 10
    text = 'query,docid,rating\n"tent, ""2 person""\nsale",SKU-1,1\n'
    rows = importers.quepid_csv([text.encode()], vocabulary)
    assert list(importers.one_by_one(rows)) == [JudgementRow(2, 7, 10, 1)]


def test_it_reads_trec_qrels_by_query_id():
    rows = parse(importers.qrels, "1 0 SKU-1 3\n2 Q0 SKU-2 1\n")
    assert rows == [JudgementRow(1, 1, 10, 3), JudgementRow(2, 2, 11, 1)]


def test_it_reads_ltr_lines_by_query_text_and_ignores_features():
    rows = parse(importers.ltr, "3 qid:7 1:0.5 2:1.25 # SKU-1 tent\n1 qid:8 # SKU-2 boots\n")
    assert rows == [JudgementRow(1, 1, 10, 3), JudgementRow(2, 2, 11, 1)]


def test_an_ltr_line_without_query_text_reads_its_qid_as_a_query_id():
    assert parse(importers.ltr, "2 qid:2 # SKU-1\n") == [JudgementRow(1, 2, 10, 2)]


def test_an_ltr_qid_must_keep_its_query_text():
    rows = parse(importers.ltr, "3 qid:7 # SKU-1 tent\n1 qid:7 # SKU-2 boots\n")
    assert errors_of(rows) == [
        'line 2, column qid: qid:7 was "tent" on line 1. Name its query in a '
        '"# qid:7: <query>" header line, or give the project a query with the id 7.'
    ]


@pytest.mark.parametrize(
    "ratings",
    [
        {"SKU-1": {"gain": 3}, "SKU-2": {"gain": 0}},  # RRE, classic
        [{"document_ids": ["SKU-1"], "gain": 3}, {"document_ids": ["SKU-2"], "gain": 0}],
        {"3": ["SKU-1"], "0": ["SKU-2"]},  # Quepid's export
    ],
)
def test_it_reads_every_shape_of_rre_ratings(ratings):
    group = {
        "name": "g",
        "queries": [{"template": "q.json", "placeholders": {"$query": "tent"}}],
        "relevant_documents": ratings,
    }
    rows = parse(importers.rre_json, json.dumps({"topics": [{"query_groups": [group]}]}))
    assert sorted((row.document_id, row.grade) for row in rows) == [(10, 3), (11, 0)]


def test_it_reads_events_with_raters_kinds_and_times():
    text = (
        '{"query": "tent", "document": "SKU-1", "rater": "alice", "grade": 0,'
        ' "created_at": "2026-01-02T03:04:05Z"}\n'
        '{"query": "tent", "document": "SKU-1", "rater": "alice", "kind": "cant_tell"}\n'
    )
    first, second = parse(importers.events_jsonl, text)
    assert (first.rater_id, first.grade, first.created_at.isoformat()) == (
        5,
        0,
        "2026-01-02T03:04:05+00:00",
    )
    assert (second.kind, second.grade, second.created_at) == ("cant_tell", None, None)


def test_it_reads_a_trec_run_and_its_tag():
    items = parse(importers.run_trec, "1 Q0 SKU-1 1 12.5 bm25\n1 Q0 SKU-9 2 3 bm25\n")
    info, first, second = items
    assert info.name == "bm25"
    assert (first.query_id, first.external_id, first.rank, first.score) == (1, "SKU-1", 1, 12.5)
    assert second.external_id == "SKU-9"


def test_it_finds_repeated_documents_in_a_run_but_not_repeated_ranks():
    # trec_eval ignores the rank column, and so does the importer.
    text = "1 Q0 SKU-1 1 2 r\n1 Q0 SKU-2 1 1 r\n1 Q0 SKU-1 3 0 r\n"
    assert errors_of(parse(importers.run_trec, text)) == [
        "line 3, column docid: This document for this query repeats line 1.",
    ]


def test_queries_keep_their_ids_for_mapping_trec_files():
    rows = parse(importers.queries_csv, "id,text,description\nq7,tent,A shelter\n")
    assert [(row.key, row.text, row.description) for row in rows] == [("q7", "tent", "A shelter")]


def test_documents_keep_unknown_keys_as_fields():
    (row,) = parse(importers.documents_jsonl, '{"id": 7, "title": "Tent", "author": "x"}\n')
    assert (row.external_id, row.title, row.fields) == ("7", "Tent", {"author": "x"})


def test_a_line_that_is_not_utf8_is_named_and_the_others_still_read():
    rows = parse(importers.quepid_csv, b"query,docid,rating\ntent,SKU-\xe9,3\ntent,SKU-2,1\n")
    assert errors_of(rows) == ["line 2: Byte 0xe9 at column 10 is not UTF-8; save as UTF-8."]
    assert rows[-1] == JudgementRow(3, 1, 11, 1)


def test_lines_split_across_chunks_keep_their_numbers_and_characters():
    text = "query,docid,rating\n" + "tent,SKU-1,3\n" + "tënt,SKU-2,1\r\n"
    chunked = parse(importers.quepid_csv, text.encode(), chunk=3)
    assert errors_of(chunked) == [
        'line 3, column query: 1 queries unknown to the project, e.g. "tënt" (line 3). '
        "Import them first, or import with create_missing to create them."
    ]


def test_an_overlong_line_is_an_error_without_being_kept():
    data = b"1 0 SKU-1 3\n" + b"x" * (MAX_LINE_BYTES + 10) + b"\n2 0 SKU-2 1\n"
    rows = parse(importers.qrels, data, chunk=1 << 16)
    assert errors_of(rows) == ["line 2: The line is longer than 1024 KB."]
    assert [row.line for row in rows if isinstance(row, JudgementRow)] == [1, 3]


def test_lines_know_their_numbers_with_or_without_a_final_line_end():
    assert list(Lines([b"a\nb"])) == ["a\n", "b"]
    assert list(Lines([b"a\r\n", b"\r\nb\n"])) == ["a\r\n", "\r\n", "b\n"]


def test_json_objects_know_the_line_they_start_on():
    (found,) = json_values([b'{"a": [\n  {"b": 1},\n\n  {"c": 2}\n]}'], "".__eq__)
    data = found.value
    assert [data.line, data["a"][0].line, data["a"][1].line] == [1, 2, 4]


def test_json_values_stream_only_the_wanted_places_each_with_its_line():
    text = b'{"name": "x",\n "items": [\n  {"b": 1},\n  {"c": [2, {"d": 3}]}\n]}'
    found = list(json_values([text[:7], text[7:]], {"name", "items.item"}.__contains__))
    assert [(item.prefix, item.line, item.value) for item in found] == [
        ("name", 1, "x"),
        ("items.item", 3, {"b": 1}),
        ("items.item", 4, {"c": [2, {"d": 3}]}),
    ]
    assert found[2].value["c"][1].line == 4


def test_an_empty_file_is_one_error():
    assert errors_of(parse(importers.qrels, b"")) == ["The file is empty."]
    assert errors_of(parse(importers.quepid_csv, b"\n")) == [
        "line 1: The header needs query, docid, rating; it has: none."
    ]


def test_a_file_of_another_format_is_one_line_saying_what_it_looks_like():
    qrels = b"1 0 184 2\n1 0 29 2\n"
    assert errors_of(parse(importers.quepid_csv, qrels)) == [
        "line 1: This looks like a TREC qrels file (query id, iteration, doc id, grade), "
        "not CSV with query, docid, rating columns."
    ]
    run = b"1 Q0 184 1 12.5 bm25\n"
    assert "a TREC run file" in errors_of(parse(importers.quepid_csv, run))[0]
    jsonl = b'{"query": "tent", "docid": "a", "rating": 1}\n'
    assert "a JSON or JSON Lines file" in errors_of(parse(importers.quepid_csv, jsonl))[0]
    # A CSV whose header only misses a column still lists the columns it has.
    assert errors_of(parse(importers.quepid_csv, b"query,doc,rating\n")) == [
        "line 1: The header needs docid; it has: query, doc, rating."
    ]
