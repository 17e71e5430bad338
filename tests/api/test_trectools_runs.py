"""trectools' own test runs: a tag per line (``R`` or ``NR``) rather than one per file.

The files in ``tests/data/tool_files/trectools-*`` are trectools' ``unittests/files``
copied byte for byte (BSD-3-Clause, ``licences/trectools-LICENSE``). trec_eval reads
such a run as one run whose tag is a label; so must the import, and the list's numbers
must then equal trec_eval's: pytrec_eval's (trec_eval's own code) per query, and the
figures trectools' tests record from trec_eval for r4.run.
"""

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from judgements.models import Hit, ResultList
from metrics.registry import project_spec
from tests.api.test_genuine_tool_files import imported

FILES = Path(__file__).resolve().parents[1] / "data" / "tool_files"
RUNS = [FILES / f"trectools-r{number}.run" for number in (1, 2, 3, 4)]
QRELS = FILES / "trectools-qrel1.txt"


def test_the_copies_keep_trectools_bytes():
    assert RUNS[0].read_bytes().startswith(b"1 Q0 doc1_1 1 1 NR\n1 Q0 doc1_2 2 0.81 R\n")
    assert [len(run.read_bytes()) for run in RUNS] == [119, 120, 119, 177]
    # The qrels mix tabs and spaces and end some lines with a tab, as trectools wrote it.
    assert b"3   0\tdoc3_1\t0\n" in QRELS.read_bytes()
    assert b"2\t0\tdoc2_9\t0\t\n" in QRELS.read_bytes()


def test_a_run_tagged_per_line_imports_from_the_command_as_one_run(project):
    """The issue's command: ``import_result_list P r.run --format trec --create-missing``."""
    out = io.StringIO()
    call_command(
        "import_result_list", project.slug, str(RUNS[0]), format="trec", create_missing=True,
        stdout=out,
    )  # fmt: skip
    run = ResultList.objects.get(project=project)
    assert run.name == "NR"  # the first line's tag
    assert Hit.objects.filter(result_list=run).count() == 6
    assert 'Created result list "NR" with 6 hits.' in out.getvalue()
    assert (
        'The tag column changes from line to line (2 tags: "NR" first, then "R" (3 lines)). '
        "Read as one run, as trec_eval reads it" in out.getvalue()
    )


def test_a_run_tagged_per_line_keeps_its_given_name_and_says_the_tags_differ(charlie, project):
    body = imported(
        charlie, "outdoor", "result-lists", RUNS[3], format="trec", create_missing="true",
        name="trectools r4",
    )  # fmt: skip
    assert (body["rows"], body["result_list"]["name"]) == (9, "trectools r4")
    tags = [note for note in body["notes"] if note.startswith("The tag column")]
    assert tags and '"NR" first, then "R" (6 lines)' in tags[0]


def test_a_run_with_one_tag_says_nothing_of_tags(charlie, project):
    same = b"1 Q0 doc1_1 1 1 NR\n1 Q0 doc1_2 2 0.81 NR\n"
    response = charlie.post(
        "/api/projects/outdoor/result-lists/import/",
        {"file": io.BytesIO(same), "format": "trec", "create_missing": "true"},
        format="multipart",
    )
    assert response.status_code == 201, response.json()
    assert not [note for note in response.json()["notes"] if "tag" in note]


def pytrec_values(run: Path) -> dict[str, float]:
    """Per-query ndcg_cut_10 of trec_eval's own code (pytrec_eval) on the files."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, hits = {}, {}
    for line in QRELS.read_text().splitlines():
        qid, _, docno, grade = line.split()
        qrels.setdefault(qid, {})[docno] = int(grade)
    for line in run.read_text().splitlines():
        qid, _, docno, _, score, _ = line.split()
        hits.setdefault(qid, {})[docno] = float(score)
    found = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(hits)
    return {qid: values["ndcg_cut_10"] for qid, values in found.items()}


def app_metrics(client, project, run: Path) -> dict:
    """The imported run's numbers from the metrics API at trec_eval's ndcg_cut.10."""
    listed = imported(client, "outdoor", "result-lists", run, format="trec", create_missing="true")
    imported(client, "outdoor", "judgements", QRELS, format="qrels", create_missing="true")
    spec = project_spec(project).with_changes(k=10, gain="linear")
    params = {name: "" if value is None else value for name, value in spec.as_dict().items()}
    url = f"/api/result-lists/{listed['result_list']['id']}/metrics/"
    return client.get(url, params).json()


@pytest.mark.parametrize("run", RUNS, ids=[run.stem for run in RUNS])
def test_ndcg_of_each_trectools_run_equals_trec_evals(charlie, project, run):
    body = app_metrics(charlie, project, run)
    expected = pytrec_values(run)
    found = {row["external_id"]: row["ndcg"] for row in body["results"]}
    assert found.keys() == expected.keys()
    for qid, value in expected.items():
        assert found[qid] == pytest.approx(value, abs=1e-12), qid
    assert body["mean"] == pytest.approx(sum(expected.values()) / len(expected), abs=1e-12)


def test_r4_gives_the_figures_trectools_tests_record_from_trec_eval(charlie, project):
    """trectools' testtreceval.py: r4.run against qrel1.txt, trec_eval=True, MAP 0.2685
    and reciprocal rank 0.5000 (4 places); every query returns 3 hits, so at k=10 these
    are trec_eval's map and recip_rank."""
    means = app_metrics(charlie, project, RUNS[3])["means"]
    assert round(means["average_precision"], 4) == 0.2685
    assert round(means["reciprocal_rank"], 4) == 0.5
