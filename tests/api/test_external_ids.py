"""The team's own query ids: kept on import, matched by qrels, runs and LTR files, written
by every export that has a qid, and accepted by the API wherever a query is."""

import json
from pathlib import Path

import pytest

from judgements import importers
from judgements.api.judging import JudgementImportApi
from judgements.management.commands import import_judgements
from judgements.models import Hit, Judgement, Query
from tests.api.conftest import upload
from tests.factories import DocumentFactory, JudgementFactory, ProjectFactory, QueryFactory


@pytest.fixture
def charlie(client_as, analyst):
    return client_as(analyst)


def post(client, path: str, content, status: int = 201, **fields) -> dict:
    response = client.post(
        f"/api/projects/outdoor/{path}/import/", {"file": upload(content), **fields}, "multipart"
    )
    assert response.status_code == status, response.json()
    return response.json()


def export(client, path: str) -> str:
    response = client.get(f"/api/projects/outdoor/{path}")
    assert response.status_code == 200
    return b"".join(response.streaming_content).decode()


@pytest.fixture
def catalogue(charlie, project):
    """Two queries with the team's ids 301 and T-7, and three documents."""
    post(charlie, "queries", "id,text\n301,tent\nT-7,boots\n", format="csv")
    for sku in ("SKU-1", "SKU-2", "SKU-3"):
        DocumentFactory(project=project, external_id=sku)
    return project


def test_queries_keep_their_ids_from_csv_and_json(charlie, catalogue):
    post(charlie, "queries", json.dumps([{"text": "hat", "id": "H1"}, "scarf"]), format="json")
    ids = dict(Query.objects.values_list("text", "external_id"))
    assert ids == {"tent": "301", "boots": "T-7", "hat": "H1", "scarf": ""}


def test_a_known_query_takes_an_id_once_and_keeps_it(charlie, catalogue):
    QueryFactory(project=catalogue, text="hat")
    body = post(charlie, "queries", "id,text\nH1,hat\n301,tent\n", format="csv")
    assert (body["created"], body["updated"]) == (0, 1)
    errors = post(charlie, "queries", "id,text\n302,tent\n", 400, format="csv")["errors"]
    assert errors == [
        {
            "field": "id",
            "line": 2,
            "message": 'The query has the id "301" already; the file gives "302".',
        }
    ]


def test_qrels_and_runs_name_queries_by_external_id(charlie, catalogue):
    post(charlie, "judgements", "301 0 SKU-1 2\nT-7 0 SKU-2 1\n", format="qrels")
    graded = Judgement.objects.values_list("query__text", "document__external_id", "grade")
    assert sorted(graded) == [("boots", "SKU-2", 1), ("tent", "SKU-1", 2)]
    post(charlie, "result-lists", "T-7 Q0 SKU-3 1 2.5 bm25\n", format="trec")
    assert Hit.objects.get().query.text == "boots"


def test_ltr_matches_by_external_id_then_by_text(charlie, catalogue):
    content = "3 qid:301 # SKU-1\n2 qid:T-7 # SKU-2 boots\n1 qid:99 # SKU-3 tent\n"
    post(charlie, "judgements", content, format="ltr")
    graded = Judgement.objects.values_list("query__text", "document__external_id", "grade")
    assert sorted(graded) == [("boots", "SKU-2", 2), ("tent", "SKU-1", 3), ("tent", "SKU-3", 1)]


def test_an_ltr_qid_naming_another_query_falls_back_to_the_text(charlie, catalogue):
    # Quepid writes its own query ids: 301 here is Quepid's id of "boots".
    post(charlie, "judgements", "3 qid:301 # SKU-1 boots\n", format="ltr")
    assert Judgement.objects.get().query.text == "boots"


def test_exports_write_the_external_id_as_the_qid(charlie, catalogue, rater):
    tent = Query.objects.get(text="tent")
    JudgementFactory(query=tent, document=catalogue.documents.get(external_id="SKU-1"), grade=2)
    assert export(charlie, "consensus/export/?format=qrels") == "301 0 SKU-1 2\n"
    assert export(charlie, "consensus/export/?format=ltr") == "2 qid:301 # SKU-1 tent\n"
    post(charlie, "result-lists", "301 Q0 SKU-3 1 2.5 bm25\n", format="trec")
    run = charlie.get(f"/api/result-lists/{Hit.objects.get().result_list_id}/export/")
    assert b"".join(run.streaming_content) == b"301 Q0 SKU-3 1 2.5 bm25\n"


def test_a_query_without_an_external_id_is_named_by_its_database_id(charlie, catalogue):
    scarf = QueryFactory(project=catalogue, text="scarf")
    JudgementFactory(query=scarf, document=catalogue.documents.get(external_id="SKU-2"), grade=1)
    assert export(charlie, "consensus/export/?format=qrels") == f"{scarf.pk} 0 SKU-2 1\n"
    post(charlie, "judgements", f"{scarf.pk} 0 SKU-3 3\n", format="qrels")
    assert Judgement.objects.filter(query=scarf).count() == 2


def test_exported_qrels_reimport_to_the_same_pairs_and_ids(charlie, catalogue, rater, other_rater):
    tent, boots = (Query.objects.get(text=text) for text in ("tent", "boots"))
    sku = {document.external_id: document for document in catalogue.documents.all()}
    for rater_, grade in ((rater, 3), (other_rater, 1)):
        JudgementFactory(query=tent, document=sku["SKU-1"], rater=rater_, grade=grade)
    JudgementFactory(query=boots, document=sku["SKU-3"], rater=rater, grade=0)
    qrels = export(charlie, "judgements/export/?format=qrels")
    target = ProjectFactory(slug="target")
    for document in sku:
        DocumentFactory(project=target, external_id=document)
    client, url = charlie, "/api/projects/target"
    queries = upload("id,text\n301,tent\nT-7,boots\n")
    assert (
        client.post(f"{url}/queries/import/", {"file": queries, "format": "csv"}).status_code
        == 201
    )
    response = client.post(f"{url}/judgements/import/", {"file": upload(qrels), "format": "qrels"})
    assert response.status_code == 201
    moved = Judgement.objects.filter(query__project=target).values_list(
        "query__external_id", "document__external_id", "grade"
    )
    assert sorted(moved) == [("301", "SKU-1", 2), ("T-7", "SKU-3", 0)]


# The API takes the external id wherever it takes a query.


def test_the_api_lists_and_filters_queries_by_external_id(charlie, catalogue):
    body = charlie.get("/api/projects/outdoor/queries/?external_id=T-7").json()
    assert [(query["text"], query["external_id"]) for query in body["results"]] == [
        ("boots", "T-7")
    ]


def test_a_grade_can_be_posted_by_project_and_external_id(client_as, rater, catalogue):
    boots = Query.objects.get(text="boots")
    document = catalogue.documents.get(external_id="SKU-1")
    Hit.objects.create(
        result_list=catalogue.result_lists.create(name="r", captured_at="2026-01-01T00:00Z"),
        query=boots,
        document=document,
        rank=1,
    )
    alice = client_as(rater)
    data = {"project": "outdoor", "query_external_id": "T-7", "document": document.pk, "grade": 2}
    response = alice.post("/api/judgements/create/", data, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["query_external_id"] == "T-7"
    assert Judgement.objects.get().query == boots
    missing = alice.post("/api/judgements/create/", data | {"query_external_id": "nope"})
    assert missing.status_code == 400
    assert missing.json()["errors"][0]["field"] == "query_external_id"


def test_judgements_and_hits_filter_by_external_id(charlie, catalogue, rater):
    post(charlie, "result-lists", "301 Q0 SKU-1 1 2 r\nT-7 Q0 SKU-2 1 2 r\n", format="trec")
    post(charlie, "judgements", "301 0 SKU-1 2\nT-7 0 SKU-2 1\n", format="qrels")
    events = charlie.get("/api/judgements/?project=outdoor&query_external_id=T-7").json()
    assert [event["query_text"] for event in events["results"]] == ["boots"]
    run = Hit.objects.first().result_list_id
    hits = charlie.get(f"/api/result-lists/{run}/hits/?query_external_id=301").json()
    assert [(hit["query_external_id"], hit["external_id"]) for hit in hits["results"]] == [
        ("301", "SKU-1")
    ]


# Exports with one grade per pair never repeat a pair.


def test_pair_formats_write_each_pairs_consensus_from_any_dataset(charlie, judged, other_rater):
    qrels = export(charlie, "judgements/export/?format=qrels")
    assert qrels == f"{judged.pk} 0 SKU-1 3\n{judged.pk} 0 SKU-2 0\n"  # 1 line per pair
    response = charlie.get("/api/projects/outdoor/grades/export/?format=quepid")
    assert response["Content-Disposition"] == 'attachment; filename="outdoor-consensus.csv"'
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert lines == ["query,docid,rating", "tent,SKU-1,3", "tent,SKU-2,0"]
    rre = json.loads(export(charlie, "judgements/export/?format=rre"))
    assert rre["ratings"] == "mean consensus"


def test_every_registered_format_is_offered_by_the_api_and_the_commands_and_documented():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## Imports and exports", 1)[1].split("\n## ", 1)[0]
    parser = import_judgements.Command().create_parser("manage.py", "import_judgements")
    offered = next(a for a in parser._actions if a.dest == "format").choices
    api = JudgementImportApi.InputSerializer().fields["format"].choices
    assert set(offered) == set(api) == set(importers.JUDGEMENT_FORMATS)
    for spec in importers.FORMATS:
        assert f"`{spec.name}`" in section, spec.name
