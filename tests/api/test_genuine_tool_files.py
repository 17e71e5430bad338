"""Genuine files written by RankLib/Elasticsearch-LTR, anserini and pyserini, imported
through the API as a user uploads them.

The files in ``tests/data/tool_files/`` are copied byte for byte from the tools' own
repositories (see the README there for where each comes from and its licence); these
tests check what was stored, what was skipped and what the summary said, and that NDCG
through the app equals ``python -m metrics.core`` on the same run and qrels.
"""

from pathlib import Path

import pytest

from judgements.models import Document, Hit, Judgement, Query, ResultList
from judgements.models import default_scale as four_grades
from metrics.registry import project_spec
from tests.api.conftest import row_counts, upload
from tests.api.test_metrics_cli import command
from tests.factories import ProjectFactory, QueryFactory

FILES = Path(__file__).resolve().parents[1] / "data" / "tool_files"
ES_LTR = FILES / "es-ltr-sample_judgments.txt"
ES_LTR_FEATURES = FILES / "es-ltr-rocky_wfeatures.txt"
HELLO_LTR = FILES / "hello-ltr-three_example_queries.txt"
ANSERINI_RUN = FILES / "anserini-cacm-bm25.txt"
ANSERINI_QRELS = FILES / "anserini-qrels.cacm.txt"

# Elasticsearch-LTR's demo grades 0-4 ("# grade (0-4)" is the file's first line).
FIVE_GRADES = [*four_grades(), {"value": 4, "label": "Exact", "description": "The very item."}]


@pytest.fixture
def ltr_project(db):
    return ProjectFactory(name="Movies", slug="movies", scale=FIVE_GRADES)


def imported(client, slug: str, target: str, path: Path, status: int = 201, **fields) -> dict:
    url = f"/api/projects/{slug}/{target}/import/"
    response = client.post(
        url, {"file": upload(path.read_bytes(), path.name), **fields}, format="multipart"
    )
    assert response.status_code == status, response.json()
    return response.json()


def ltr_import(client, slug: str, path: Path, status: int = 201) -> dict:
    return imported(client, slug, "judgements", path, status, format="ltr", create_missing="true")


def anserini_run(client) -> dict:
    return imported(
        client, "outdoor", "result-lists", ANSERINI_RUN, format="trec", create_missing="true"
    )


def anserini_qrels(client) -> dict:
    return imported(
        client, "outdoor", "judgements", ANSERINI_QRELS, format="qrels", create_missing="true"
    )


def grades(project) -> dict[tuple[str, str], int]:
    events = Judgement.objects.filter(query__project=project).select_related("query", "document")
    return {(e.query.text, e.document.external_id): e.grade for e in events}


def test_the_files_are_as_the_tools_wrote_them():
    """The copies keep the tools' bytes: tabs, comment headers, missing final newlines."""
    assert len(ES_LTR.read_bytes()) == 1019
    assert ES_LTR.read_bytes().startswith(b"# grade (0-4)\tqueryid\tdocId\ttitle\n# \n")
    assert len(HELLO_LTR.read_bytes()) == 2987
    assert not HELLO_LTR.read_bytes().endswith(b"\n")
    assert b"4\tqid:1\t # 7555\trambo\n" in HELLO_LTR.read_bytes()


# RankLib / Elasticsearch-LTR judgement lists.
def test_the_elasticsearch_ltr_demo_judgements_import(charlie, ltr_project):
    body = ltr_import(charlie, "movies", ES_LTR)
    assert body["skipped"] == {"comment lines": 12}
    assert (body["rows"], body["created"]) == (25, 25)
    # Queries come from the "# qid:N: keywords" header, not from the movie titles the
    # lines carry after the docid; the qid is kept as the external id.
    queries = dict(Query.objects.filter(project=ltr_project).values_list("text", "external_id"))
    assert queries == {"rambo": "1", "rocky": "2", "bullwinkle": "3"}
    stored = grades(ltr_project)
    assert len(stored) == 25
    assert stored["rambo", "7555"] == 4
    assert stored["rambo", "1369"] == 3  # "Rambo: First Blood Part II": a colon in the title
    assert stored["rocky", "17711"] == 0
    assert stored["bullwinkle", "17711"] == 4  # the same movie, another query, another grade
    assert sorted(stored.values()).count(4) == 3


def test_the_elasticsearch_ltr_demo_exports_with_its_qids_and_reimports(charlie, ltr_project):
    ltr_import(charlie, "movies", ES_LTR)
    response = charlie.get("/api/projects/movies/consensus/export/?format=ltr")
    exported = b"".join(response.streaming_content)
    keywords = {"qid:1": "rambo", "qid:2": "rocky", "qid:3": "bullwinkle"}  # the header's
    expected = set()
    for line in ES_LTR.read_text().splitlines():
        if not line.startswith("#"):
            grade, qid, docid = line.split("\t")[0], line.split()[1], line.split("\t")[2]
            expected.add(f"{grade} {qid} # {docid} {keywords[qid]}")
    assert set(exported.decode().splitlines()) == expected

    again = ProjectFactory(name="Movies again", slug="movies-again", scale=FIVE_GRADES)
    response = charlie.post(
        "/api/projects/movies-again/judgements/import/",
        {"file": upload(exported, "movies-consensus.txt"), "format": "ltr",
         "create_missing": "true"},
        format="multipart",
    )  # fmt: skip
    assert response.json()["created"] == 25
    assert grades(again) == grades(ltr_project)
    queries = dict(again.queries.values_list("external_id", "text"))
    assert queries == {"1": "rambo", "2": "rocky", "3": "bullwinkle"}


def test_the_elasticsearch_ltr_demo_on_a_four_grade_scale_is_one_error(charlie, project):
    before = row_counts()
    body = ltr_import(charlie, "outdoor", ES_LTR, 400)
    assert body["errors"] == [
        {
            "line": 13,
            "field": "grade",
            "message": "The project's scale is 0-3, but 3 grades are outside it (from 4 to 4, "
            "the first on this line): map the file's grades to the scale, or change the scale.",
        }
    ]
    assert row_counts() == before


def test_hello_ltr_judgements_match_the_teams_queries_by_qid(charlie, ltr_project):
    """hello-ltr writes ``# qid:1: rambo*1`` headers, a blank line, then
    ``4<TAB>qid:1<TAB> # 7555<TAB>rambo`` rows, with no newline after the last row."""
    for qid, text in (("1", "rambo"), ("2", "rocky"), ("3", "war games")):
        QueryFactory(project=ltr_project, text=text, external_id=qid)
    body = ltr_import(charlie, "movies", HELLO_LTR)
    assert body["skipped"] == {"comment lines": 3}
    assert (body["rows"], body["created"]) == (121, 121)
    assert Query.objects.filter(project=ltr_project).count() == 3
    stored = grades(ltr_project)
    by_query = {text: sum(1 for q, _ in stored if q == text) for text in ("rambo", "rocky")}
    assert by_query == {"rambo": 41, "rocky": 41}
    assert stored["rambo", "1368"] == 4
    assert stored["war games", "860"] == 4
    assert stored["war games", "144910"] == 0  # the last row, without a final newline
    assert stored["rocky", "70"] == 1 and stored["rambo", "70"] == 0


def test_hello_ltr_judgements_name_queries_by_the_header_text_without_ids(charlie, ltr_project):
    QueryFactory(project=ltr_project, text="war games")  # the team's query, no external id
    body = ltr_import(charlie, "movies", HELLO_LTR)
    assert body["created"] == 121
    war_games = Query.objects.get(project=ltr_project, text="war games")
    assert war_games.judgements.count() == 39
    assert body["notes"][-1] == "Created 2 queries the project lacked (the id as text)."


def test_the_elasticsearch_ltr_training_file_names_queries_by_qid(charlie, ltr_project):
    """The demo's training file has no header and a title after each docid
    ("rocky@Rambo III"); the qid names the team's query, as RankLib and ES-LTR read it."""
    QueryFactory(project=ltr_project, text="rocky", external_id="1")
    body = ltr_import(charlie, "movies", ES_LTR_FEATURES)
    assert (body["rows"], body["created"], body["skipped"]) == (39, 39, {})
    assert body["notes"] == [
        "qid:1: the text after the document id differs from line to line (a title per "
        "document, as Elasticsearch-LTR's demo writes), so the qid named the query.",
        "Created 39 documents the project lacked (id only).",
    ]
    stored = grades(ltr_project)
    assert {query for query, _ in stored} == {"rocky"}
    assert (stored["rocky", "1366"], stored["rocky", "1370"], stored["rocky", "31362"]) == (
        4,
        2,
        1,
    )
    assert Query.objects.filter(project=ltr_project).count() == 1


def test_the_training_file_for_an_unknown_qid_is_one_error_saying_what_to_do(charlie, ltr_project):
    before = row_counts()
    errors = ltr_import(charlie, "movies", ES_LTR_FEATURES, 400)["errors"]
    assert errors == [
        {
            "line": 2,
            "field": "qid",
            "message": 'qid:1 was "rocky@Rambo III" on line 1. Name its query in a '
            '"# qid:1: <query>" header line, or give the project a query with the id 1.',
        }
    ]
    assert row_counts() == before


# anserini: a run and its qrels.
def test_an_anserini_run_is_stored_in_its_own_order(charlie, project):
    body = anserini_run(charlie)
    assert (body["rows"], body["skipped"]) == (120, {})
    # Scores are strictly descending in the file (4.258300 then 4.258299 is no tie), so
    # trec_eval's order is the file's and nothing needs saying about ties.
    assert not [note for note in body["notes"] if "tied" in note or "rank column" in note]
    run = ResultList.objects.get(project=project)
    lines = [line.split() for line in ANSERINI_RUN.read_text().splitlines()]
    stored = Hit.objects.filter(result_list=run).select_related("query", "document")
    assert sorted(
        (h.query.external_id, h.rank, h.document.external_id, h.score) for h in stored
    ) == sorted((qid, int(rank), docno, float(score)) for qid, _, docno, rank, score, _ in lines)
    assert set(Query.objects.values_list("external_id", flat=True)) == {"1", "2", "3", "4"}


def test_anserini_qrels_with_q0_in_the_iteration_column_import(charlie, project):
    anserini_run(charlie)
    body = anserini_qrels(charlie)
    assert (body["rows"], body["created"], body["skipped"]) == (26, 26, {})
    returned = {line.split()[2] for line in ANSERINI_RUN.read_text().splitlines()}
    judged = {line.split()[2] for line in ANSERINI_QRELS.read_text().splitlines()}
    # Judged documents no hit returned are created with their id only.
    assert (
        f"Created {len(judged - returned)} documents the project lacked (id only)."
        in (body["notes"])
    )
    assert set(Document.objects.values_list("external_id", flat=True)) == returned | judged
    per_query = dict(Query.objects.filter(project=project).values_list("external_id", "text"))
    assert per_query == {"1": "1", "2": "2", "3": "3", "4": "4"}
    assert set(grades(project).values()) == {1}


def test_ndcg_of_the_anserini_run_equals_metrics_core(charlie, project):
    run = anserini_run(charlie)["result_list"]["id"]
    anserini_qrels(charlie)
    spec = project_spec(project).with_changes(k=10, gain="linear")
    params = {name: "" if value is None else value for name, value in spec.as_dict().items()}
    body = charlie.get(f"/api/result-lists/{run}/metrics/", params).json()
    expected = command(ANSERINI_QRELS, ANSERINI_RUN, spec, all_queries=False)

    found = {row["external_id"]: row["ndcg"] for row in body["results"]}
    assert found.keys() == {"1", "2", "3", "4"}
    for qid, value in found.items():
        assert value == pytest.approx(expected["ndcg", qid], abs=1e-12), qid
    assert body["mean"] == pytest.approx(expected["ndcg", "all"], abs=1e-12)
    assert 0 < body["mean"] < 1


# pyserini / anserini JSON documents: the text is under "contents" or "text".
def test_pyserini_jsonl_documents_show_contents_as_the_snippet(charlie, project):
    body = imported(charlie, "outdoor", "documents", FILES / "pyserini-documents.jsonl")
    assert body["created"] == 3
    snippets = dict(Document.objects.values_list("external_id", "snippet"))
    assert snippets == {
        "doc1": "contents of doc one.",
        "doc2": "contents of document two.",
        "doc3": "here's some text in document three.",
    }


def test_a_pyserini_corpus_without_a_final_newline_imports_every_line(charlie, project):
    body = imported(charlie, "outdoor", "documents", FILES / "pyserini-sample_corpus.jsonl")
    assert body["created"] == 4
    assert Document.objects.get(external_id="doc4").snippet == "Stefan is the best URA."


def test_an_anserini_json_collection_of_pretty_printed_objects_imports(charlie, project):
    """anserini's JsonCollection reads documents printed over several lines, one object
    after another; each keeps the line it starts on."""
    body = imported(
        charlie, "outdoor", "documents", FILES / "anserini-json-collection4-segment1.json"
    )
    assert body["created"] == 2
    doc3, doc4 = Document.objects.order_by("external_id")
    assert (doc3.external_id, doc3.snippet) == ("doc3", "third document contains C")
    assert doc3.fields == {"field1": "three field1", "field2": "3 field2"}
    assert (doc4.external_id, doc4.snippet) == ("doc4", "fourth doc goes D")


def test_an_anserini_json_array_of_documents_imports(charlie, project):
    path = FILES / "anserini-json-collection_tokenized-segment1.json"
    body = imported(charlie, "outdoor", "documents", path)
    assert body["created"] == 2
    snippets = dict(Document.objects.values_list("external_id", "snippet"))
    assert snippets == {
        "2000000": "this is ##a simple pretokeinzed test",
        "2000001": "some time extra ##vert ##ing and some time intro ##vert ##ing",
    }


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (
            b'[\n  {"id": "d1", "contents": "one"},\n  {"contents": "no id"}\n]\n',
            {"line": 3, "field": "id", "message": "is empty."},
        ),
        (
            b'{\n  "id": "d1"\n}\n{\n  "id": "d2",\n  "contents": \n}\n',
            {"line": 7, "field": None, "message": "This is not valid JSON: parse error: "
             "unallowed token at this point in JSON text."},
        ),
        (b'[\n  "d1",\n  {"id": "d2"}\n]', {"line": 2, "field": None,
         "message": "Each document must be a JSON object."}),
    ],
)  # fmt: skip
def test_a_json_collection_with_a_broken_document_names_its_line(charlie, project, content, error):
    before = row_counts()
    response = charlie.post(
        "/api/projects/outdoor/documents/import/", {"file": upload(content, "c.json")},
        format="multipart",
    )  # fmt: skip
    assert response.status_code == 400
    assert response.json()["errors"][0] == error
    assert row_counts() == before
