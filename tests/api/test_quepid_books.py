"""Quepid books as Quepid writes them: anonymous judgements and AI judges' ones.

Quepid's exporter (``app/views/api/v1/export/books/_judgements.json.jbuilder``) writes
``user_email`` only for a judgement that has a user, and that user's e-mail: a book
holds judgements with no ``user_email`` (anonymous) and with ``"user_email": null``
(an AI judge, a user without an e-mail). Quepid's own import test expects such a book
to give all its judgements. The files (``tests/data/tool_files/quepid-*``, Apache-2.0,
``licences/quepid-LICENSE``) are described in that folder's README.
"""

import json
import math
import zipfile
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from judgements.derived import pairs
from judgements.derived.oracles import differences
from judgements.machine.gate import admitted_judges, default_source
from judgements.models import Judgement, MachineAnswer, MachineJudge, Query
from tests.api.conftest import row_counts, upload
from tests.api.test_genuine_tool_files import imported
from tests.factories import UserFactory

FILES = Path(__file__).resolve().parents[1] / "data" / "tool_files"
IMPORT_TEST_BOOK = FILES / "quepid-import-test-book.json"
JAMES_BOND = FILES / "quepid-james_bond_movies-book.json"
HAYSTACK = FILES / "quepid-haystack_rating_party_book.json.zip"
# The explanation Quepid's test stub (test/support/openai_stubs.rb) gives judge_judy.
JUDY_SAYS = "This document explicitly states that it has nothing to do with farm animals"


def book_import(client, path: Path, status: int = 201) -> dict:
    return imported(
        client, "outdoor", "judgements", path, status, format="quepid_book",
        create_missing="true",
    )  # fmt: skip


def written(folder: Path, content: dict | str, name: str = "book.json") -> Path:
    path = folder / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def events(project) -> list[tuple]:
    """(query, document, rater, source, grade) of every event, sorted (can't tell last)."""
    found = Judgement.objects.filter(query__project=project).select_related(
        "query", "document", "rater"
    )
    rows = [
        (e.query.text, e.document.external_id, e.rater.username, e.source, e.grade) for e in found
    ]
    return sorted(rows, key=lambda row: (*row[:4], 99 if row[4] is None else row[4]))


def test_quepids_import_test_book_gives_its_three_judgements(charlie, project):
    """test/controllers/api/v1/import/books_controller_test.rb, "creates a new book":
    Quepid expects 3 judgements, one of them with no user_email."""
    for name in ("random", "doug"):
        UserFactory(username=name, email=f"{name}@example.com", roles=["rater"])

    body = book_import(charlie, IMPORT_TEST_BOOK)

    assert (body["rows"], body["created"], body["skipped"]) == (3, 3, {})
    assert events(project) == [
        ("dog", "123", "doug", "import", 2),
        ("dog", "123", "random", "import", 1),
        ("dog", "456", "import.outdoor", "import", 1),
    ]
    assert (
        "1 judgements had no user_email (anonymous in Quepid): they are the import "
        "account import.outdoor's." in body["notes"]
    )


def test_an_ai_judges_judgements_become_a_machine_judges(charlie, project):
    """Quepid's fixture book after its test ran judge_judy on every pair: four human
    judgements and seven of the AI judge, exported with "user_email": null."""
    body = book_import(charlie, JAMES_BOND)

    assert (body["rows"], body["created"], body["skipped"]) == (11, 11, {})
    judge = MachineJudge.objects.get(project=project)
    assert judge.name == "Quepid AI judge"
    machine = Judgement.objects.filter(rater=judge.rater)
    assert machine.count() == 7
    assert set(machine.values_list("source", "grade", "note")) == {("machine", 0, "")}
    answers = MachineAnswer.objects.filter(judge=judge)
    assert answers.count() == 7
    assert all(answer.rationale.startswith(JUDY_SAYS) for answer in answers)
    humans = [event for event in events(project) if event[3] == "import"]
    assert humans == [
        ("Action Movies", "Moonraker", "doug@example.com", "import", 1),
        ("Action Movies", "Moonraker", "random@example.com", "import", 2),
        ("Best Bond Ever", "DanielCraig", "random@example.com", "import", 0),
        ("Best Bond Ever", "SeanConnery", "doug@example.com", "import", 3),
    ]
    assert (
        '7 judgements were an AI judge\'s ("user_email": null, as Quepid exports its AI '
        'judges, unnamed): they are machine judge "Quepid AI judge"\'s (created for them), '
        "kept out of human numbers until the project's gate certifies it." in body["notes"]
    )
    assert "Created 2 rater accounts (doug@example.com, random@example.com)." in body["notes"]


def test_the_ai_judges_grades_stay_out_of_human_numbers_until_certified(
    charlie, project, tmp_path
):
    book_import(charlie, JAMES_BOND)
    run = {"name": "prod", "queries": [
        {"query": "Best Bond Ever", "hits": [{"id": "TimothyDalton"}, {"id": "SeanConnery"}]},
    ]}  # fmt: skip
    listed = imported(
        charlie, "outdoor", "result-lists", written(tmp_path, run, "prod.json"), format="json"
    )
    url = f"/api/result-lists/{listed['result_list']['id']}/metrics/"

    default = charlie.get(url).json()
    machine = charlie.get(url, {"grades": "machine"}).json()

    assert (admitted_judges(project), default_source(project)) == ([], "human")
    # Humans graded SeanConnery alone; the AI judge graded both hits, 0.
    [human_row], [machine_row] = default["results"], machine["results"]
    assert (default["grades"], human_row["judged"], human_row["retrieved"]) == ("human", 1, 2)
    assert human_row["ndcg"] == pytest.approx(1 / math.log2(3), abs=1e-12)  # 3 at rank 2
    assert (machine["grades"], machine_row["judged"], machine_row["ndcg"]) == ("machine", 2, 0)


def test_the_judges_page_shows_the_explanation_as_its_rationale(client, analyst, project):
    client.force_login(analyst)
    client.post(
        "/api/projects/outdoor/judgements/import/",
        {"file": upload(JAMES_BOND.read_bytes(), JAMES_BOND.name), "format": "quepid_book",
         "create_missing": "true"},
    )  # fmt: skip
    judge = MachineJudge.objects.get(project=project)

    page = client.get(judge.get_absolute_url()).content.decode()

    assert page.count(JUDY_SAYS) == 7
    assert 'class="error"' not in page


def test_a_book_imported_again_adds_nothing_and_reuses_the_judge(charlie, project):
    book_import(charlie, JAMES_BOND)
    before = row_counts()

    again = book_import(charlie, JAMES_BOND)

    assert (again["created"], again["skipped"]) == (0, {"already imported": 11})
    assert row_counts() == before
    assert MachineJudge.objects.filter(project=project).count() == 1
    assert MachineAnswer.objects.count() == 7
    assert any("(the project's)" in note for note in again["notes"])


def test_a_pair_may_hold_several_anonymous_and_ai_judgements(charlie, project, tmp_path):
    """Quepid keeps one judgement per user and pair, but a NULL user (anonymous) and
    AI judges (all exported as null) may judge a pair many times."""
    judgements = [
        {"rating": 1.0, "unrateable": False},
        {"rating": 1.0, "unrateable": False},
        {"rating": 2.0, "unrateable": False, "user_email": None, "explanation": "a"},
        {"rating": 3.0, "unrateable": False, "user_email": None, "explanation": "b"},
        {"rating": None, "unrateable": True, "user_email": None},
    ]
    book = {"name": "b", "query_doc_pairs": [
        {"query_text": "tent", "doc_id": "SKU-1", "judgements": judgements},
    ]}  # fmt: skip

    body = book_import(charlie, written(tmp_path, book))

    assert (body["created"], body["skipped"]) == (5, {})
    by_rater = [(rater, source, grade) for _, _, rater, source, grade in events(project)]
    assert by_rater == [
        ("import.outdoor", "import", 1),
        ("import.outdoor", "import", 1),
        ("machine.outdoor.quepid-ai-judge", "machine", 2),
        ("machine.outdoor.quepid-ai-judge", "machine", 3),
        ("machine.outdoor.quepid-ai-judge", "machine", None),
    ]
    again = book_import(charlie, written(tmp_path, book))
    assert (again["created"], again["skipped"]) == (0, {"already imported": 5})


@pytest.mark.parametrize(
    ("email", "message"),
    [
        ("7", "This is not an e-mail address (null is an AI judge's judgement)."),
        ('"Judge Judy"', '"Judge Judy" is not an e-mail address (null is an AI judge\'s '
         "judgement)."),
    ],
)  # fmt: skip
def test_a_user_email_that_is_no_address_names_its_line(
    charlie, project, tmp_path, email, message
):
    book = '{"query_doc_pairs": [\n{"query_text": "tent", "doc_id": "SKU-1",\n' \
        f'"judgements": [\n{{"rating": 1, "user_email": {email}}}]}}]}}'  # fmt: skip
    before = row_counts()

    errors = book_import(charlie, written(tmp_path, book), 400)["errors"]

    assert errors == [{"line": 4, "field": "user_email", "message": message}]
    assert row_counts() == before and not MachineJudge.objects.exists()


def test_the_haystack_rating_party_book_imports_every_raters_judgements(charlie, project):
    """Quepid's sample book (db/sample_data), the .json.zip its export offers: 2,420
    pairs, 1,942 judgements by 13 people, 22 of them unrateable."""
    with zipfile.ZipFile(HAYSTACK) as archive:
        book = json.loads(archive.read("haystack_rating_party_book.json"))
    judged = [p for p in book["query_doc_pairs"] if p["judgements"]]
    emails = {j["user_email"] for p in judged for j in p["judgements"]}

    body = book_import(charlie, HAYSTACK)

    total = sum(len(p["judgements"]) for p in judged)
    assert (body["rows"], body["created"], body["skipped"]) == (total, total, {})
    assert total == 1942 and len(emails) == 13
    assert "Created 13 rater accounts" in " ".join(body["notes"])
    assert not MachineJudge.objects.exists()
    stored = Judgement.objects.filter(query__project=project)
    assert stored.filter(kind="cant_tell").count() == 22
    assert set(User.objects.filter(judgements__in=stored).values_list("email", flat=True)) == (
        emails
    )
    assert Query.objects.filter(project=project).count() == len({p["query_text"] for p in judged})


def big_book(queries: int) -> dict:
    """``queries`` queries of three documents; each pair judged by a person, anonymously
    and by an AI judge, as Quepid exports them."""
    pairs = []
    for number in range(queries):
        for doc in range(3):
            judgements = [
                {"rating": float(doc), "unrateable": False, "judge_later": False,
                 "user_email": f"rater{(number + doc) % 5}@example.com", "explanation": None},
                {"rating": float((doc + 1) % 4), "unrateable": False, "judge_later": False,
                 "explanation": None},
                {"rating": float(number % 4), "unrateable": doc == 2, "judge_later": False,
                 "user_email": None, "explanation": f"judged {number}/{doc}"},
            ]  # fmt: skip
            pairs.append(
                {"query_text": f"query {number}", "doc_id": f"q{number}-d{doc}",
                 "position": doc + 1, "judgements": judgements}
            )  # fmt: skip
    return {"name": "big", "query_doc_pairs": pairs}


@pytest.mark.parametrize("path", ["triggers", "set-based refresh"])
def test_a_large_book_keeps_the_derived_state_exact(charlie, project, tmp_path, path, monkeypatch):
    """3,000 queries, 27,000 judgements: human, anonymous and machine events in one
    insert, through the triggers or the large import's set-based refresh."""
    if path == "set-based refresh":
        monkeypatch.setattr(pairs, "REFRESH_ROWS", 1)

    body = book_import(charlie, written(tmp_path, big_book(3000)))

    assert (body["rows"], body["created"]) == (27_000, 27_000)
    stored = Judgement.objects.filter(query__project=project)
    assert stored.filter(source="machine").count() == 9_000
    assert MachineAnswer.objects.count() == 9_000
    assert stored.filter(rater__username="import.outdoor").count() == 9_000
    assert list(differences(project)) == []
