"""The import and export management commands, with their progress bars."""

import io

import pytest
from django.core.management import CommandError, call_command

from judgements.derived import pairs
from judgements.models import Document, Judgement, Query, ResultList


def run(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_imports_quepid_ratings_with_a_progress_bar(tmp_path, query_with_hits, analyst):
    path = tmp_path / "ratings.csv"
    path.write_text("query,docid,rating\ntent,SKU-1,3\ntent,SKU-2,1\nunrated,,\n")
    out, err = run("import_judgements", "outdoor", str(path), "--format=quepid", "--user=charlie")
    assert "Imported 2 judgements as import" in out and "(rater import.outdoor)" in out
    assert "Skipped 1 lines: unrated (no grade)." in out
    assert "100%" in err
    assert Judgement.objects.get(grade=3).note == "Imported from quepid by charlie"


def test_a_large_import_prints_each_step_past_the_files_end(
    tmp_path, query_with_hits, monkeypatch
):
    monkeypatch.setattr(pairs, "REFRESH_ROWS", 1)  # a million rows' way, on two
    path = tmp_path / "ratings.csv"
    path.write_text("query,docid,rating\ntent,SKU-1,3\ntent,SKU-2,1\n")
    out, err = run("import_judgements", "outdoor", str(path), "--format=quepid")
    assert "Imported 2 judgements" in out
    lines = err.splitlines()
    bar = max(number for number, line in enumerate(lines) if "100%" in line)
    steps = [
        "pairs named", "pool rows locked", "pair grades rows locked", "events inserted",
        "pair grades counted", "summaries refreshed", "packed log refreshed", "pool counted",
    ]  # fmt: skip
    assert [line for line in lines[bar + 1 :] if line] == [
        f"Writing to the database: {pairs.STEPS[name]}" for name in steps
    ]


def test_a_bad_file_prints_every_error_and_imports_nothing(tmp_path, query_with_hits):
    path = tmp_path / "ratings.csv"
    path.write_text("query,docid,rating\ntent,SKU-1,3\ntent,SKU-2,5\nhat,SKU-1,1\n")
    err = io.StringIO()
    with pytest.raises(CommandError, match="Nothing was imported: 2 errors"):
        call_command("import_judgements", "outdoor", str(path), "--format=quepid", stderr=err)
    assert "line 3, column rating: The project's scale is 0-3, but 1 grades" in err.getvalue()
    assert 'line 4, column query: 1 queries unknown to the project, e.g. "hat"' in err.getvalue()
    assert not Judgement.objects.exists()


def test_it_imports_queries_documents_and_a_run(tmp_path, project):
    (tmp_path / "q.csv").write_text("id,text\nT1,tent\n")
    (tmp_path / "d.jsonl").write_text('{"id": "SKU-1", "title": "Tent"}\n')
    (tmp_path / "run.txt").write_text("T1 Q0 SKU-1 1 2.5 bm25\n")
    run("import_queries", "outdoor", str(tmp_path / "q.csv"), "--format=csv")
    run("import_documents", "outdoor", str(tmp_path / "d.jsonl"))
    out, _ = run(
        "import_result_list", "outdoor", str(tmp_path / "run.txt"), "--format=trec",
        f"--queries={tmp_path / 'q.csv'}",
    )  # fmt: skip
    assert 'Created result list "bm25" with 1 hits.' in out
    assert (Query.objects.count(), Document.objects.count()) == (1, 1)
    assert ResultList.objects.get().hits.get().rank == 1


def test_it_exports_a_dataset_to_a_file(tmp_path, judged):
    path = tmp_path / "consensus.qrels"
    _, err = run(
        "export_judgements", "outdoor", "--dataset=consensus", "--format=qrels", f"-o={path}"
    )
    assert path.read_text() == f"{judged.pk} 0 SKU-1 3\n{judged.pk} 0 SKU-2 0\n"
    assert "MB written" in err


def test_export_filters_are_checked(judged):
    with pytest.raises(CommandError, match="Invalid filters"):
        run("export_judgements", "outdoor", "--since=yesterday")


def test_it_exports_a_result_list_as_a_run(tmp_path, query_with_hits):
    result_list = ResultList.objects.get()
    path = tmp_path / "bm25.run"
    run("export_result_list", str(result_list.pk), f"-o={path}")
    assert path.read_text().splitlines()[0] == f"{query_with_hits.pk} Q0 SKU-1 1 -1 bm25"


def test_an_unknown_project_is_named(tmp_path, db):
    with pytest.raises(CommandError, match='No project has the slug "nowhere"'):
        run("import_documents", "nowhere", str(tmp_path / "missing.jsonl"))


def test_create_missing_makes_the_unknown_documents_and_qids_of_a_qrels_file(
    tmp_path, query_with_hits
):
    path = tmp_path / "new.qrels"
    path.write_text(f"{query_with_hits.pk} 0 NEW-1 1\nT-9 0 NEW-2 3\n")
    with pytest.raises(CommandError, match="Nothing was imported"):
        run("import_judgements", "outdoor", str(path), "--format=qrels")
    assert not Query.objects.filter(external_id="T-9").exists()

    out, _ = run("import_judgements", "outdoor", str(path), "--format=qrels", "--create-missing")

    assert "Imported 2 judgements" in out
    assert Query.objects.get(external_id="T-9").text == "T-9"
    assert set(Document.objects.filter(external_id__startswith="NEW-").values_list(
        "external_id", flat=True
    )) == {"NEW-1", "NEW-2"}  # fmt: skip
    grades = Judgement.objects.order_by("grade").values_list("document__external_id", "grade")
    assert list(grades) == [("NEW-1", 1), ("NEW-2", 3)]
