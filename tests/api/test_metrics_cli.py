"""The metrics API's numbers equal ``python -m metrics.core`` on the exported qrels and run.

The qrels and the run are downloaded from the API's own exports and evaluated by the
trec_eval-style command in a separate process, so the numbers meet only in the files.
Grades are whole numbers (one rater per pair), which the qrels carry exactly.
"""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from metrics.registry import MetricSpec, project_spec
from tests.factories import (
    DocumentFactory,
    HitFactory,
    JudgementFactory,
    ProjectFactory,
    QueryFactory,
    ResultListFactory,
    UserFactory,
)

REPOSITORY = Path(__file__).resolve().parents[2]
# query: (ranked document numbers, {document number: grade}); "spare" is judged but
# never returned, which only trec_eval -c counts.
RUN = {
    "q1": ([1, 2, 3, 4, 5, 6], {1: 3, 3: 2, 4: 0, 7: 1}),
    "q2": ([2, 1, 8], {2: 0, 8: 3, 9: 2}),
    "q3": ([4, 5, 6, 7, 1, 2, 3], {5: 1, 6: 2, 2: 3}),
    "q4": ([9, 8], {9: 0, 8: 0}),
    "spare": ([], {1: 2}),
}


@pytest.fixture
def graded(db):
    project = ProjectFactory(name="Files", slug="files")
    rater = UserFactory(username="alice", roles=["rater"])
    run = ResultListFactory(project=project, name="run")
    docs = {n: DocumentFactory(project=project, external_id=f"D{n}") for n in range(1, 10)}
    for position, (text, (ranked, grades)) in enumerate(RUN.items()):
        query = QueryFactory(project=project, text=text, external_id=f"Q-{position}")
        for rank, n in enumerate(ranked, start=1):
            HitFactory(result_list=run, query=query, document=docs[n], rank=rank)
        for n, grade in grades.items():
            JudgementFactory(query=query, document=docs[n], rater=rater, grade=grade)
    return project, run


def downloaded(client, url: str, path: Path) -> Path:
    response = client.get(url)
    assert response.status_code == 200, url
    path.write_bytes(b"".join(response.streaming_content))
    return path


def command(qrels: Path, run: Path, spec: MetricSpec, *, all_queries: bool) -> dict:
    """``python -m metrics.core`` with the options that match ``spec``: value by
    (measure, qid), ``all`` for the mean."""
    measures = ["-m", "ndcg", "-m", "map"]
    if spec.k:
        measures = ["-m", f"ndcg_cut.{spec.k}", "-m", f"P.{spec.k}", "-m", f"map_cut.{spec.k}"]
    options = ["--gain", spec.gain, "--discount", spec.discount, "--ideal", spec.ideal]
    options += ["--ideal-depth", spec.ideal_depth, "--precision", "15", "-q"]
    options += ["--remove-unjudged"] if spec.unjudged == "remove" else []
    options += ["-c"] if all_queries else []
    output = subprocess.run(
        [sys.executable, "-m", "metrics.core", str(qrels), str(run), *measures,
         "-m", "recip_rank", *options],
        cwd=REPOSITORY, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    values = {}
    for line in output.splitlines():
        measure, qid, value = (part.strip() for part in line.split("\t"))
        values[measure.split("_cut")[0].replace(f"_{spec.k}", ""), qid] = float(value)
    # The API's RR looks at the top k, as trec_eval's P and map_cut do; its recip_rank
    # looks further, so a first relevant hit below k counts 0 here.
    for (measure, qid), value in list(values.items()):
        if measure == "recip_rank" and spec.k and qid != "all" and value < 1 / spec.k - 1e-9:
            values[measure, qid] = 0.0
    per_query = [v for (m, qid), v in values.items() if m == "recip_rank" and qid != "all"]
    values["recip_rank", "all"] = float(np.mean(per_query))
    return values


CASES = [
    pytest.param({}, False, id="project-defaults"),
    pytest.param({"k": 3, "gain": "linear", "discount": "rank"}, False, id="linear-rank-3"),
    pytest.param({"k": 5, "ideal": "returned", "ideal_depth": "full"}, False, id="returned-full"),
    pytest.param({"k": 4, "unjudged": "remove"}, False, id="unjudged-removed"),
    pytest.param({"k": None}, False, id="whole-lists"),
    pytest.param({"mean_over": "judged"}, False, id="judged-queries"),
    pytest.param({"mean_over": "all"}, True, id="all-queries-c"),
]


@pytest.mark.parametrize(("changes", "all_queries"), CASES)
def test_the_mean_equals_the_command_on_the_exported_files(
    client_as, analyst, graded, tmp_path, changes, all_queries
):
    project, run = graded
    charlie = client_as(analyst)
    qrels = downloaded(
        charlie, f"/api/projects/{project.slug}/consensus/export/?format=qrels", tmp_path / "q"
    )
    run_file = downloaded(charlie, f"/api/result-lists/{run.pk}/export/", tmp_path / "run")
    spec = project_spec(project).with_changes(**changes)
    params = {name: "" if value is None else value for name, value in spec.as_dict().items()}

    body = charlie.get(f"/api/result-lists/{run.pk}/metrics/", params).json()
    expected = command(qrels, run_file, spec, all_queries=all_queries)

    assert body["mean"] == pytest.approx(expected["ndcg", "all"], abs=1e-12)
    if all_queries:
        return
    assert body["means"]["average_precision"] == pytest.approx(expected["map", "all"], abs=1e-12)
    assert body["means"]["reciprocal_rank"] == pytest.approx(
        expected["recip_rank", "all"], abs=1e-12
    )
    if spec.k:
        assert body["means"]["precision"] == pytest.approx(expected["P", "all"], abs=1e-12)
    for row in body["results"]:
        # The files name a query by its id or its external id, whichever the export uses.
        qid = row["external_id"] if ("ndcg", row["external_id"]) in expected else str(row["id"])
        assert row["ndcg"] == pytest.approx(expected["ndcg", qid], abs=1e-12), qid
        assert row["average_precision"] == pytest.approx(expected["map", qid], abs=1e-12)
        assert row["reciprocal_rank"] == pytest.approx(expected["recip_rank", qid], abs=1e-12)
