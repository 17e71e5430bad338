"""Exports: what each dataset looks like in each format, streamed."""

import csv
import io
import json

import pytest
from django.http import StreamingHttpResponse

from judgements import exporters
from judgements.models import Judgement
from tests.factories import JudgementFactory


@pytest.fixture
def charlie(client_as, analyst):
    return client_as(analyst)


def export(client, dataset: str, file_format: str, **params) -> str:
    query = "&".join(f"{key}={value}" for key, value in {"format": file_format, **params}.items())
    response = client.get(f"/api/projects/outdoor/{dataset}/export/?{query}")
    assert response.status_code == 200, response.content
    assert isinstance(response, StreamingHttpResponse)
    return b"".join(response.streaming_content).decode()


def test_events_come_as_json_lines_with_every_column(charlie, judged):
    lines = [json.loads(line) for line in export(charlie, "judgements", "jsonl").splitlines()]
    assert [(line["rater"], line["kind"], line["grade"]) for line in lines] == [
        ("alice", "grade", 1),
        ("alice", "grade", 3),
        ("bob", "grade", 2),
        ("alice", "grade", 0),
        ("bob", "cant_tell", None),
    ]
    assert set(lines[0]) == set(exporters.DATASET["events"].columns)
    assert lines[0]["created_at"].endswith("Z")


def test_events_come_as_csv_with_a_header(charlie, judged):
    rows = list(csv.DictReader(io.StringIO(export(charlie, "judgements", "csv"))))
    assert len(rows) == 5
    assert (rows[-1]["kind"], rows[-1]["grade"], rows[-1]["document"]) == (
        "cant_tell",
        "",
        "SKU-2",
    )


def test_current_grades_leave_out_changed_minds_and_cant_tell(charlie, judged):
    rows = list(csv.DictReader(io.StringIO(export(charlie, "grades", "csv"))))
    assert [(row["document"], row["rater"], row["grade"]) for row in rows] == [
        ("SKU-1", "alice", "3"),
        ("SKU-1", "bob", "2"),
        ("SKU-2", "alice", "0"),
    ]


def test_consensus_is_the_mean_by_default_and_median_on_request(charlie, judged, rater):
    JudgementFactory(query=judged, document=judged.hits.get(rank=1).document, rater=rater, grade=0)
    mean = [json.loads(line) for line in export(charlie, "consensus", "jsonl").splitlines()]
    assert [(row["document"], row["consensus"], row["raters"]) for row in mean] == [
        ("SKU-1", 1.0, 2),
        ("SKU-2", 0.0, 1),
    ]
    median = export(charlie, "consensus", "jsonl", policy="median").splitlines()
    assert json.loads(median[0])["consensus"] == 1.0


def test_pair_formats_round_a_consensus_half_up(charlie, judged):
    qid = judged.pk
    assert export(charlie, "consensus", "qrels") == f"{qid} 0 SKU-1 3\n{qid} 0 SKU-2 0\n"
    assert (
        export(charlie, "consensus", "quepid")
        == "query,docid,rating\ntent,SKU-1,3\ntent,SKU-2,0\n"
    )
    assert (
        export(charlie, "consensus", "ltr")
        == f"3 qid:{qid} # SKU-1 tent\n0 qid:{qid} # SKU-2 tent\n"
    )


def test_rre_export_is_one_json_document(charlie, judged):
    ratings = json.loads(export(charlie, "consensus", "rre"))
    assert ratings["index"] == "outdoor"
    (group,) = ratings["query_groups"]
    assert group["queries"][0]["placeholders"] == {"$query": "tent"}
    assert group["relevant_documents"] == {"SKU-1": {"gain": 3}, "SKU-2": {"gain": 0}}


def test_an_empty_export_is_still_well_formed(charlie, project):
    assert json.loads(export(charlie, "consensus", "rre"))["query_groups"] == []
    assert export(charlie, "judgements", "csv").startswith("id,query_id,qid,query,")
    assert export(charlie, "grades", "qrels") == ""


def test_filters_apply_to_the_events_before_grades_are_derived(charlie, judged):
    assert export(charlie, "grades", "quepid", rater="bob") == "query,docid,rating\ntent,SKU-1,2\n"
    assert export(charlie, "judgements", "qrels", kind="cant_tell") == ""


def test_a_long_export_comes_in_many_blocks_in_order(charlie, judged, monkeypatch):
    monkeypatch.setattr(exporters, "BLOCK_BYTES", 64)
    response = charlie.get("/api/projects/outdoor/judgements/export/?format=jsonl")
    blocks = list(response.streaming_content)
    assert len(blocks) > 5
    ids = [json.loads(line)["id"] for line in b"".join(blocks).decode().splitlines()]
    assert ids == sorted(ids) and len(ids) == 5


def test_many_queries_make_one_valid_rre_document(charlie, project, rater, monkeypatch):
    monkeypatch.setattr(exporters, "BLOCK_BYTES", 16)
    for number in range(5):
        JudgementFactory(query__project=project, query__text=f"q{number}", rater=rater, grade=1)
    ratings = json.loads(export(charlie, "judgements", "rre"))
    assert [group["name"] for group in ratings["query_groups"]] == [f"q{n}" for n in range(5)]


def test_a_client_that_hangs_up_leaves_the_connection_usable(judged, monkeypatch):
    monkeypatch.setattr(exporters, "BLOCK_BYTES", 16)
    monkeypatch.setattr(exporters, "QUEUE_BLOCKS", 1)
    events = Judgement.objects.for_project(judged.project)
    chunks = exporters.judgement_export(
        project=judged.project, events=events, dataset="events", file_format="csv"
    ).chunks
    assert next(chunks).startswith(b"id,query_id")
    assert next(chunks)
    chunks.close()
    assert Judgement.objects.count() == 5


def test_an_export_sees_the_requests_own_uncommitted_rows(analyst, judged):
    # The COPY runs in another thread but on this connection, inside this transaction.
    events = Judgement.objects.for_project(judged.project)
    export = exporters.judgement_export(
        project=judged.project, events=events, dataset="events", file_format="jsonl"
    )
    assert b"".join(export.chunks).count(b"\n") == 5


def test_the_response_names_a_file(charlie, judged):
    response = charlie.get("/api/projects/outdoor/consensus/export/?format=quepid")
    assert response["Content-Type"] == "text/csv"
    assert response["Content-Disposition"] == 'attachment; filename="outdoor-consensus.csv"'


def test_a_result_list_exports_as_a_trec_run(charlie, query_with_hits):
    result_list = query_with_hits.hits.first().result_list
    response = charlie.get(f"/api/result-lists/{result_list.pk}/export/")
    lines = b"".join(response.streaming_content).decode().splitlines()
    qid = query_with_hits.pk
    assert lines[:2] == [f"{qid} Q0 SKU-1 1 -1 bm25", f"{qid} Q0 SKU-2 2 -2 bm25"]
    assert len(lines) == 5


def test_an_unknown_format_is_refused(charlie, project):
    response = charlie.get("/api/projects/outdoor/judgements/export/?format=xlsx")
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "format"
