"""Uploads through the API: what each import writes when the file is good."""

import datetime as dt
import functools
import json
from dataclasses import replace

import pytest

from judgements import importers, imports, staging
from judgements.imports import import_rater
from judgements.models import Document, Hit, Judgement, Query, ResultList
from tests.api.conftest import upload
from tests.factories import DocumentFactory, ProjectFactory
from tests.shared import CRANFIELD


@pytest.fixture
def charlie(client_as, analyst):
    return client_as(analyst)


def post(client, url, content, **fields):
    response = client.post(url, {"file": upload(content), **fields}, format="multipart")
    assert response.status_code == 201, response.json()
    return response.json()


def test_it_adds_new_queries_and_keeps_known_ones(charlie, query_with_hits):
    url = "/api/projects/outdoor/queries/import/"
    body = post(charlie, url, "text,description\ntent,ignored\nboots,For hiking\n", format="csv")
    assert body == {"rows": 2, "created": 1, "updated": 0, "skipped": {}, "notes": []}
    boots = Query.objects.get(text="boots")
    assert (boots.project.slug, boots.description) == ("outdoor", "For hiking")
    assert Query.objects.get(text="tent").description == ""


def test_it_adds_queries_from_json(charlie, project):
    content = json.dumps(["tent", {"text": "boots", "description": "For hiking"}])
    post(charlie, "/api/projects/outdoor/queries/import/", content, format="json")
    assert sorted(project.queries.values_list("text", flat=True)) == ["boots", "tent"]


def test_it_adds_documents_and_updates_known_ones(charlie, query_with_hits):
    content = (
        '{"id": "SKU-1", "title": "Tent, 2 person", "url": "https://shop.example/1"}\n'
        '{"id": "SKU-9", "title": "Boots", "colour": "brown"}\n'
    )
    body = post(charlie, "/api/projects/outdoor/documents/import/", content)
    assert body == {"rows": 2, "created": 1, "updated": 1, "skipped": {}, "notes": []}
    assert Document.objects.get(external_id="SKU-1").title == "Tent, 2 person"
    assert Document.objects.get(external_id="SKU-9").fields == {"colour": "brown"}


def test_a_trec_run_becomes_a_result_list_named_after_its_tag(charlie, query_with_hits, analyst):
    qid = query_with_hits.pk
    content = f"{qid} Q0 SKU-2 1 9.5 bm25-v2\n{qid} Q0 SKU-77 2 7.25 bm25-v2\n"
    body = post(charlie, "/api/projects/outdoor/result-lists/import/", content, format="trec")
    assert (body["rows"], body["created"], body["result_list"]["name"]) == (2, 2, "bm25-v2")
    result_list = ResultList.objects.get(name="bm25-v2")
    assert result_list.created_by == analyst
    hits = result_list.hits.order_by("rank").values_list("document__external_id", "score")
    assert list(hits) == [("SKU-2", 9.5), ("SKU-77", 7.25)]


def test_a_queries_file_maps_the_qids_of_a_run(charlie, query_with_hits):
    fields = {"format": "trec", "name": "prod", "queries": upload("id,text\nT-1,tent\n")}
    post(charlie, "/api/projects/outdoor/result-lists/import/", "T-1 Q0 SKU-3 1 1 x\n", **fields)
    hit = Hit.objects.get(result_list__name="prod")
    assert (hit.query, hit.document.external_id) == (query_with_hits, "SKU-3")


def test_a_json_result_list_brings_its_documents(charlie, query_with_hits):
    content = json.dumps(
        {
            "name": "semantic",
            "engine": "vectors v3",
            "captured_at": "2026-11-08T09:00:00Z",
            "queries": [
                {"query": "tent", "hits": [{"id": "SKU-5"}, {"id": "N-1", "title": "New tent"}]}
            ],
        }
    )
    post(charlie, "/api/projects/outdoor/result-lists/import/", content, format="json")
    result_list = ResultList.objects.get(name="semantic")
    assert (result_list.engine, result_list.captured_at.isoformat()) == (
        "vectors v3",
        "2026-11-08T09:00:00+00:00",
    )
    assert Document.objects.get(external_id="N-1").title == "New tent"
    assert list(result_list.hits.values_list("rank", flat=True)) == [1, 2]


def test_quepid_ratings_become_events_of_the_import_rater(charlie, query_with_hits, project):
    content = "query,docid,rating\ntent,SKU-1,3\ntent,SKU-2,0\n"
    body = post(charlie, "/api/projects/outdoor/judgements/import/", content, format="quepid")
    events = Judgement.objects.order_by("id")
    assert body["rater"] == "import.outdoor" == import_rater(project).username
    assert [(event.document.external_id, event.grade) for event in events] == [
        ("SKU-1", 3),
        ("SKU-2", 0),
    ]
    assert {(event.source, str(event.import_id)) for event in events} == {
        ("import", body["import_id"])
    }
    assert events[0].note == "Imported from quepid by charlie"


def test_quepid_lines_read_in_blocks_are_written_as_lines_read_one_by_one(
    charlie, query_with_hits, monkeypatch, time_machine
):
    # Blocks go to the database in COPY's binary format, lines in its text format: the
    # moment has microseconds, so that both must keep them.
    time_machine.move_to(MOMENT, tick=False)
    content = "query,docid,rating\ntent,SKU-1,3\ntent,SKU-2,\ntent,SKU-3,0\ntent,SKU-4,2\n"
    spec, kinds, written = importers.JUDGEMENT_FORMATS["quepid"], [], []

    def recorded(chunks, vocabulary, *, blocks):
        for item in importers.quepid_csv(chunks, vocabulary, blocks=blocks):
            kinds.append((blocks, type(item).__name__))
            yield item

    for blocks in (True, False):
        parse = functools.partial(recorded, blocks=blocks)
        monkeypatch.setitem(importers.JUDGEMENT_FORMATS, "quepid", replace(spec, parse=parse))
        body = post(charlie, "/api/projects/outdoor/judgements/import/", content, format="quepid")
        events = Judgement.objects.filter(import_id=body.pop("import_id")).order_by("id")
        written.append((body, list(events.values_list(*EVENT_FIELDS))))

    assert (True, "JudgementBlock") in kinds
    assert (False, "JudgementBlock") not in kinds
    assert written[0] == written[1]
    body, events = written[0]
    assert (body["created"], body["skipped"]) == (3, {"unrated (no grade)": 1})
    assert events[0][-4:] == ("Imported from quepid by charlie", MOMENT, "import", "")


EVENT_FIELDS = (
    "query__text", "document__external_id", "rater__username", "kind", "grade", "note",
    "created_at", "source", "source_event_id",
)  # fmt: skip

MOMENT = dt.datetime(2026, 11, 20, 9, 0, 0, 123456, tzinfo=dt.UTC)


def test_the_import_rater_cannot_log_in(query_with_hits, project):
    user = import_rater(project)
    assert not user.is_active
    assert not user.has_usable_password()


def test_each_import_has_its_own_id(charlie, query_with_hits):
    url = "/api/projects/outdoor/judgements/import/"
    first = post(charlie, url, f"{query_with_hits.pk} 0 SKU-1 1\n", format="qrels")
    second = post(charlie, url, f"{query_with_hits.pk} 0 SKU-1 2\n", format="qrels")
    assert first["import_id"] != second["import_id"]
    assert Judgement.objects.current_grades().get().grade == 2


def test_event_files_keep_their_raters_times_and_notes(charlie, query_with_hits, rater):
    pair = {"query": "tent", "document": "SKU-1", "rater": "alice"}
    lines = [
        pair | {"grade": 2, "note": "a\tb", "created_at": "2026-01-01T00:00:00Z"},
        pair | {"kind": "retract", "created_at": "2026-01-02T00:00:00+01:00"},
    ]
    content = "".join(json.dumps(line) + "\n" for line in lines)
    post(charlie, "/api/projects/outdoor/judgements/import/", content, format="jsonl")
    first, second = Judgement.objects.order_by("created_at")
    assert (first.rater, first.grade, first.note, first.source) == (rater, 2, "a\tb", "import")
    assert (second.kind, second.created_at.isoformat()) == ("retract", "2026-01-01T23:00:00+00:00")


def test_it_imports_the_cranfield_collection_as_published(charlie):
    ProjectFactory(slug="cranfield", name="Cranfield")
    base = "/api/projects/cranfield"
    queries = (CRANFIELD / "queries.csv").read_bytes()
    assert post(charlie, f"{base}/queries/import/", queries, format="csv")["created"] == 225
    documents = (CRANFIELD / "documents.jsonl").read_bytes()
    assert post(charlie, f"{base}/documents/import/", documents)["created"] == 1400
    qrels = {"format": "qrels", "queries": upload(queries)}
    qrels_file = (CRANFIELD / "qrels.txt").read_bytes()
    assert post(charlie, f"{base}/judgements/import/", qrels_file, **qrels)["created"] == 1837
    first = Judgement.objects.get(
        query__text__startswith="what similarity laws", document__external_id="184"
    )
    assert first.grade == 2


def test_a_document_deleted_during_the_import_rejects_it(charlie, query_with_hits, monkeypatch):
    doomed = DocumentFactory(project=query_with_hits.project, external_id="DOOMED")
    insert = staging.Staging.insert

    def delete_first(staging, *args):
        # What another transaction could do between reading the file and committing.
        Document.objects.filter(pk=doomed.pk).delete()
        return insert(staging, *args)

    monkeypatch.setattr(staging.Staging, "insert", delete_first)
    content = "query,docid,rating\ntent,SKU-1,3\ntent,DOOMED,1\n"
    response = charlie.post(
        "/api/projects/outdoor/judgements/import/",
        {"file": upload(content), "format": "quepid"},
        format="multipart",
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["message"] == "A document was deleted during the import."
    assert not Judgement.objects.exists()


def test_the_services_take_a_path_or_a_file_as_a_background_task_would(tmp_path, project):
    path = tmp_path / "queries.csv"
    path.write_text("id,text\nQ1,tent\n")
    assert imports.query_import(project=project, upload=str(path), file_format="csv").created == 1
    (tmp_path / "docs.jsonl").write_text('{"id": "SKU-1"}\n')
    with (tmp_path / "docs.jsonl").open("rb") as file:
        assert imports.document_import(project=project, upload=file).created == 1
    (tmp_path / "qrels").write_text("Q1 0 SKU-1 2\n")
    result = imports.judgement_import(
        project=project, upload=tmp_path / "qrels", file_format="qrels", uploaded_by=None
    )
    assert result.created == 1
