"""Files as Quepid, RRE, RankLib/ES-LTR, trec_eval, pyserini and OpenSearch write them.

Each test builds a file the way the tool writes it (from the tool's own code or test
files) and checks what is stored, what is skipped and what the summary says.
"""

import io
import json
import zipfile

import pytest
from django.contrib.auth.models import User

from judgements.models import Document, Hit, Judgement, Query, ResultList
from tests.api.conftest import row_counts, upload
from tests.factories import DocumentFactory, QueryFactory, UserFactory
from tests.shared import TREC_EVAL


@pytest.fixture
def charlie(client_as, analyst):
    return client_as(analyst)


def post(client, url: str, content, status: int = 201, **fields) -> dict:
    response = client.post(url, {"file": upload(content), **fields}, format="multipart")
    assert response.status_code == status, response.json()
    return response.json()


def judgements_post(client, content, file_format: str, status: int = 201, **fields) -> dict:
    url = "/api/projects/outdoor/judgements/import/"
    return post(client, url, content, status, format=file_format, **fields)


def run_post(client, content, file_format: str = "trec", status: int = 201, **fields) -> dict:
    url = "/api/projects/outdoor/result-lists/import/"
    return post(client, url, content, status, format=file_format, **fields)


def stored(query=None) -> list[tuple[str, str, int | None]]:
    events = Judgement.objects.order_by("id").select_related("query", "document")
    return [(e.query.text, e.document.external_id, e.grade) for e in events]


# 1. Quepid pads every row to three columns: an unrated query is "two,,".
def test_quepid_rows_of_unrated_queries_are_skipped_and_counted(charlie, query_with_hits):
    QueryFactory(project=query_with_hits.project, text="I like, commas!")
    content = (
        "query,docid,rating\r\n"
        "tent,SKU-1,3\r\n"
        "two,,\r\n"
        '"I like, commas!",,\r\n'
        "tent,SKU-2,\r\n"
        " -tent,SKU-3,1\r\n"  # Quepid's make_csv_safe would write " -..." for a query "-..."
    )
    QueryFactory(project=query_with_hits.project, text="-tent")
    body = judgements_post(charlie, content, "quepid")
    assert body["skipped"] == {"unrated (no grade)": 3}
    assert (body["rows"], body["created"]) == (2, 2)
    assert stored() == [("tent", "SKU-1", 3), ("-tent", "SKU-3", 1)]


# 2. RRE's own repository ships relevant_documents as a list of {document_id, gain}.
def test_rre_list_of_document_ids_and_gains_is_read(charlie, query_with_hits):
    ratings = {
        "index": "my_index_name",
        "id_field": "id",
        "query_placeholder": "query",
        "query_groups": [
            {
                "name": "a group",
                "queries": [{"template": "match_query.json", "placeholders": {"query": "tent"}}],
                "relevant_documents": [
                    {"document_id": "SKU-1", "gain": 2},
                    {"document_id": "SKU-2", "gain": 1},
                    {"document_id": "SKU-5", "gain": 0},
                ],
            }
        ],
    }
    body = judgements_post(charlie, json.dumps(ratings, indent=2), "rre")
    assert body["created"] == 3
    assert stored() == [("tent", "SKU-1", 2), ("tent", "SKU-2", 1), ("tent", "SKU-5", 0)]


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ('{"index": "x", "query_groups": []}', "no query groups"),
        ('{"query_groups": [{"name": "tent", "relevant_documents": 5}]}', "must be an object"),
        (
            '{"query_groups": [{"name": "tent", "relevant_documents": [{"doc": "SKU-1"}]}]}',
            '"document_id"',
        ),
        ('{"query_groups": 7}', "must be a list, not a number"),
        ('{"topics": [{"query_groups": "x"}]}', "must be a list, not a string"),
        ('{"queries": [{"relevant_documents": {"SKU-1": {"gain": 1}}}]}', "names no query"),
        (
            '{"query_groups": [{"name": "tent", "relevant_documents": {"SKU-1": {"g": 1}}}]}',
            'no "gain"',
        ),
    ],
)
def test_an_rre_file_not_understood_is_an_error_naming_the_part(
    charlie, query_with_hits, content, words
):
    before = row_counts()
    errors = judgements_post(charlie, content, "rre", status=400)["errors"]
    assert any(words in error["message"] for error in errors), errors
    assert row_counts() == before


def test_a_file_with_no_judgements_is_refused_not_imported_as_zero(charlie, query_with_hits):
    errors = judgements_post(charlie, "query,docid,rating\ntent,,\n", "quepid", 400)["errors"]
    assert errors[0]["message"] == "The file holds no judgements (skipped: 1 unrated (no grade))."


# 3. Elasticsearch-LTR's judgement lists: a header naming each qid's keywords.
def test_ltr_header_lines_name_the_queries_and_are_skipped(charlie, query_with_hits):
    QueryFactory(project=query_with_hits.project, text="rambo")
    for sku in ("7555", "1370"):
        DocumentFactory(project=query_with_hits.project, external_id=sku)
    content = (
        "# grade (0-4)\tqueryid\tdocId\ttitle\n"
        "# \n"
        "# qid:1: rambo*1\n"
        "# qid:2: tent\n"
        "#\n"
        "3 qid:1 # 7555 Rambo\n"
        "2\tqid:1 1:0.5 2:3.25 # 1370\tRambo III\n"
        "1 qid:2 # SKU-1\n"
    )
    body = judgements_post(charlie, content, "ltr")
    assert body["skipped"] == {"comment lines": 5}
    assert sorted(stored()) == [("rambo", "1370", 2), ("rambo", "7555", 3), ("tent", "SKU-1", 1)]


def test_grades_above_the_scale_are_one_error_naming_the_scale_and_the_range(
    charlie, query_with_hits
):
    lines = "".join(f"4 qid:1 # SKU-{n} tent\n" for n in range(1, 6))
    errors = judgements_post(charlie, "# qid:1: tent\n" + lines, "ltr", 400)["errors"]
    assert errors == [
        {
            "field": "grade",
            "line": 2,
            "message": "The project's scale is 0-3, but 5 grades are outside it (from 4 to 4, "
            "the first on this line): map the file's grades to the scale, or change the scale.",
        }
    ]


# 4. trec_eval's own qrels.test.with-comments.
def test_qrels_comment_lines_are_skipped_as_trec_eval_skips_them(charlie, project):
    QueryFactory(project=project, text="topic 301", external_id="301")
    text = (TREC_EVAL / "qrels.test").read_text().splitlines()[:6]
    content = f"# comment here\n{text[0]}\n{text[1]}\n# and comment here\n" + "\n".join(text[2:])
    content = content.replace("CR93E-1850", "CR#93E-1850")  # a # inside a docno is no comment
    body = judgements_post(charlie, content, "qrels", create_missing="true")
    assert body["skipped"] == {"comment lines": 2}
    assert body["created"] == 6
    assert Document.objects.filter(external_id="CR#93E-1850").exists()


# 5-7. TREC runs: any rank numbering, trailing columns, trec_eval's order.
def test_a_run_is_ranked_as_trec_eval_ranks_whatever_its_rank_column(charlie, query_with_hits):
    qid = query_with_hits.pk
    content = (
        f"{qid} Q0 B 0 2.5 run reserved for future expansion\n"
        f"{qid} Q0 A 1 2.50 run\n"  # tied with B: docno descending puts B first
        f"{qid} Q0 10 2 7 run\n"
        f"{qid} Q0 9 3 7 run\n"  # tied with "10": "9" > "10" byte-wise
        f"# a comment\n"
        f"{qid} Q0 C 4 -1e-3 run\n"
    )
    body = run_post(charlie, content)
    hits = Hit.objects.filter(result_list__name="run").order_by("rank")
    assert [hit.document.external_id for hit in hits] == ["9", "10", "B", "A", "C"]
    assert [hit.rank for hit in hits] == [1, 2, 3, 4, 5]
    assert body["skipped"] == {"comment lines": 1}
    assert body["notes"] == [
        "1 queries have tied scores; hits ordered as trec_eval orders them (score, then "
        "document id, both descending); upload JSON to keep your own ranks."
    ]


def test_ranks_counted_from_zero_in_score_order_need_no_note(charlie, query_with_hits):
    qid = query_with_hits.pk
    content = "".join(f"{qid} Q0 SKU-{n} {n - 1} {10 - n} r\n" for n in range(1, 5))
    body = run_post(charlie, content)
    assert body["notes"] == []
    ranks = Hit.objects.filter(result_list__name="r").order_by("rank")
    assert [hit.document.external_id for hit in ranks] == ["SKU-1", "SKU-2", "SKU-3", "SKU-4"]


def test_a_rank_column_against_the_scores_is_noted(charlie, query_with_hits):
    qid = query_with_hits.pk
    content = f"{qid} Q0 SKU-1 1 1.0 r\n{qid} Q0 SKU-2 2 2.0 r\n"
    assert "rank column disagrees" in run_post(charlie, content)["notes"][0]
    assert Hit.objects.get(result_list__name="r", rank=1).document.external_id == "SKU-2"


def test_trec_eval_results_trunc_imports_with_its_trailing_columns(charlie, project):
    content = (TREC_EVAL / "results.trunc").read_bytes()
    body = run_post(charlie, content, create_missing="true")
    assert body["rows"] == len(content.splitlines())
    qids = {line.split()[0] for line in content.decode().splitlines()}
    assert set(Query.objects.values_list("external_id", flat=True)) == qids == {"301", "303"}


def test_a_json_result_list_keeps_its_own_ranks(charlie, query_with_hits):
    hits = [{"id": "SKU-2", "score": 1}, {"id": "SKU-1", "score": 1}, {"id": "SKU-3", "score": 9}]
    body = run_post(
        charlie, json.dumps({"name": "j", "queries": [{"query": "tent", "hits": hits}]}), "json"
    )
    ranked = Hit.objects.filter(result_list__name="j").order_by("rank")
    assert [hit.document.external_id for hit in ranked] == ["SKU-2", "SKU-1", "SKU-3"]
    assert body["notes"] == []


# 9. Judgements for documents no run returned.
def test_unknown_documents_are_one_summary_error_without_the_option(charlie, query_with_hits):
    qid = query_with_hits.pk
    content = "".join(f"{qid} 0 NEW-{n} 1\n" for n in range(3000))
    errors = judgements_post(charlie, content, "qrels", status=400)["errors"]
    assert len(errors) == 1
    assert errors[0]["message"].startswith(
        '3,000 documents unknown to the project, e.g. "NEW-0" (line 1), "NEW-1" (line 2)'
    )


def test_unknown_documents_and_qids_are_created_with_the_option(charlie, query_with_hits):
    qid = query_with_hits.pk
    content = f"{qid} 0 SKU-1 2\n{qid} 0 NEW-1 1\nT-9 0 NEW-2 3\n"
    body = judgements_post(charlie, content, "qrels", create_missing="true")
    assert body["notes"] == [
        "Created 2 documents the project lacked (id only).",
        "Created 1 queries the project lacked (the id as text).",
    ]
    created = Query.objects.get(external_id="T-9")
    assert created.text == "T-9"
    assert stored()[-1] == ("T-9", "NEW-2", 3)


# 10. pyserini / ir_datasets JSON Lines.
@pytest.mark.parametrize("key", ["contents", "text", "body"])
def test_toolkit_documents_show_their_text_as_the_snippet(charlie, project, key):
    content = json.dumps({"id": "doc1", key: "Cranfield text", "title": "T"}) + "\n"
    post(charlie, "/api/projects/outdoor/documents/import/", content)
    document = Document.objects.get(external_id="doc1")
    assert (document.snippet, document.fields) == ("Cranfield text", {})


def test_a_snippet_wins_over_contents(charlie, project):
    content = json.dumps({"docid": "d", "snippet": "short", "contents": "long"}) + "\n"
    post(charlie, "/api/projects/outdoor/documents/import/", content)
    assert Document.objects.get(external_id="d").snippet == "short"


# 12. Moving from Quepid (a book) and OpenSearch (a judgment list).
def quepid_book_file() -> str:
    judgements = [
        {"rating": 3.0, "unrateable": False, "judge_later": False,
         "user_email": "Ann@Example.org", "explanation": "exact match",
         "updated_at": "2026-01-02T03:04:05.000Z"},
        {"rating": None, "unrateable": True, "judge_later": False,
         "user_email": "bob@example.org", "explanation": None},
        {"rating": None, "unrateable": False, "judge_later": True,
         "user_email": "cai@example.org", "explanation": None},
    ]  # fmt: skip
    pairs = [
        {"query_text": "tent", "doc_id": "SKU-1", "position": 0, "document_fields": {},
         "judgements": judgements},
        {"query_text": "tent", "doc_id": "SKU-2", "position": 1, "document_fields": {},
         "judgements": [{"rating": 1, "unrateable": False, "judge_later": False,
                         "user_email": "ann@example.org", "explanation": ""}]},
    ]  # fmt: skip
    book = {"name": "Tents", "show_rank": False, "support_implicit_judgements": False,
            "scorer": {"scale": [0, 1, 2, 3]}, "query_doc_pairs": pairs}  # fmt: skip
    return json.dumps(book, indent=2)


def test_a_quepid_book_moves_every_raters_judgements(charlie, query_with_hits):
    UserFactory(username="ann", email="ann@example.org", roles=["rater"])
    body = judgements_post(charlie, quepid_book_file(), "quepid_book")
    assert body["skipped"] == {"marked judge later": 1}
    assert body["notes"] == ["Created 1 rater accounts (bob@example.org)."]
    events = Judgement.objects.order_by("document__external_id", "rater__username")
    assert [(e.rater.username, e.document.external_id, e.kind, e.grade) for e in events] == [
        ("ann", "SKU-1", "grade", 3),
        ("bob@example.org", "SKU-1", "cant_tell", None),
        ("ann", "SKU-2", "grade", 1),
    ]
    assert (events[0].note, events[0].created_at.isoformat()) == (
        "exact match",
        "2026-01-02T03:04:05+00:00",
    )
    bob = User.objects.get(username="bob@example.org")
    assert bob.groups.filter(name="rater").exists() and not bob.has_usable_password()


def test_a_quepid_book_refuses_a_matched_user_who_may_not_rate(charlie, query_with_hits):
    UserFactory(username="ann", email="ann@example.org", roles=[], is_active=False)
    before = row_counts()
    errors = judgements_post(charlie, quepid_book_file(), "quepid_book", 400)["errors"]
    assert "not active raters: ann@example.org" in errors[0]["message"]
    assert row_counts() == before


OPENSEARCH = {
    "name": "Imported Judgments",
    "description": "Judgments generated outside SRW",
    "type": "IMPORT_JUDGMENT",
    "judgmentRatings": [
        {"query": "tent", "ratings": [{"docId": "SKU-1", "rating": "3.000"},
                                      {"docId": "SKU-2", "rating": "0.000"}]},
    ],
}  # fmt: skip


def test_an_opensearch_judgment_list_is_imported(charlie, query_with_hits):
    body = judgements_post(charlie, json.dumps(OPENSEARCH), "opensearch")
    assert body["created"] == 2
    assert stored() == [("tent", "SKU-1", 3), ("tent", "SKU-2", 0)]


def test_the_older_opensearch_shape_keyed_by_query_is_imported(charlie, query_with_hits):
    older = {"judgmentRatings": {"tent": [{"docId": "SKU-4", "rating": "2.000"}]}}
    judgements_post(charlie, json.dumps(older), "opensearch")
    assert stored() == [("tent", "SKU-4", 2)]


def test_opensearch_export_reimports_to_the_same_pairs(charlie, judged):
    response = charlie.get("/api/projects/outdoor/judgements/export/?format=opensearch")
    exported = json.loads(b"".join(response.streaming_content))
    assert exported["type"] == "IMPORT_JUDGMENT"
    assert exported["judgmentRatings"] == [
        {"query": "tent", "ratings": [{"docId": "SKU-1", "rating": "3.000"},
                                      {"docId": "SKU-2", "rating": "0.000"}]}
    ]  # fmt: skip
    assert response["Content-Disposition"] == 'attachment; filename="outdoor-consensus.json"'
    assert ResultList.objects.count() == 1


def test_a_quepid_book_comes_as_the_zip_quepid_offers(charlie, query_with_hits, rater):
    UserFactory(username="ann", email="ann@example.org", roles=["rater"])
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("book_export_12.json", quepid_book_file())
    body = judgements_post(charlie, archive.getvalue(), "quepid_book")
    assert body["created"] == 3


def test_a_broken_zip_is_named(charlie, query_with_hits):
    errors = judgements_post(charlie, b"PK\x03\x04broken", "quepid_book", 400)["errors"]
    assert errors[0]["message"].startswith("The ZIP archive cannot be read")


def test_a_docno_with_a_backslash_keeps_it(charlie, query_with_hits):
    qid = query_with_hits.pk
    run_post(charlie, f"{qid} Q0 A\\B 1 2 r\n{qid} Q0 A\\\\C 2 1 r\n")
    ranked = Hit.objects.filter(result_list__name="r").order_by("rank")
    assert [hit.document.external_id for hit in ranked] == ["A\\B", "A\\\\C"]


def test_a_quepid_book_imported_again_adds_only_changed_answers(charlie, query_with_hits):
    UserFactory(username="ann", email="ann@example.org", roles=["rater"])
    assert judgements_post(charlie, quepid_book_file(), "quepid_book")["created"] == 3
    again = judgements_post(charlie, quepid_book_file(), "quepid_book")
    assert (again["created"], again["skipped"]["already imported"]) == (0, 3)
    changed = quepid_book_file().replace('"rating": 1,', '"rating": 2,')
    assert judgements_post(charlie, changed, "quepid_book")["created"] == 1
