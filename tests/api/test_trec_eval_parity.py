"""NDCG through the app (import a run and qrels, evaluate the result list) equals
``python -m metrics.core`` on the same files, ties included; exported files evaluate
as the originals do."""

import io
import itertools
from contextlib import redirect_stdout

import numpy as np
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgements import exporters, imports
from judgements.models import Judgement, Project, ResultList
from metrics.core.cli import main as metrics_core
from metrics.evaluate import result_list_evaluate
from metrics.registry import project_spec
from tests.factories import ProjectFactory
from tests.shared import TREC_EVAL

SLUGS = itertools.count()


def trec_eval_project() -> Project:
    """A project whose default metric is trec_eval's ndcg_cut.10."""
    return ProjectFactory(
        slug=f"parity-{next(SLUGS)}", metric_gain="linear", metric_k=10, consensus="mean"
    )


def core_values(tmp_path, qrels: bytes, run: bytes) -> dict[str, float]:
    """Per-query ndcg_cut.10 from ``python -m metrics.core``, at full precision."""
    (tmp_path / "qrels").write_bytes(qrels)
    (tmp_path / "run").write_bytes(run)
    out = io.StringIO()
    argv = [str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "ndcg_cut.10", "-q"]
    with redirect_stdout(out):
        assert metrics_core([*argv, "--precision", "17"]) == 0
    lines = [line.split("\t") for line in out.getvalue().splitlines()]
    return {qid: float(value) for _, qid, value in lines if qid != "all"}


def app_values(project: Project, qrels: bytes, run: bytes) -> dict[str, float]:
    """Per-query NDCG@10 of the imported run, by qid (the queries' external ids)."""
    upload = {"project": project, "upload": [run], "file_format": "trec"}
    result = imports.result_list_import(**upload, create_missing=True, name="run")
    imports.judgement_import(
        project=project, upload=[qrels], file_format="qrels", uploaded_by=None,
        create_missing=True,
    )  # fmt: skip
    grades, values = result_list_evaluate(
        result.result_list, project_spec(project), as_of=timezone.now()
    )
    qids = dict(project.queries.values_list("id", "external_id"))
    return {
        qids[query]: float(value)
        for query, value in zip(grades.query_ids, values.ndcg, strict=True)
    }


def files(draw_queries) -> tuple[bytes, bytes]:
    run, qrels = [], []
    for qid, hits in draw_queries:
        for number, (score, grade) in enumerate(hits):
            docno = f"D{number}{'x' * (number % 3)}"  # "D9" ranks above "D10x" on a tie
            run.append(f"Q{qid} Q0 {docno} {number} {score} tag\n")
            if grade is not None:
                qrels.append(f"Q{qid} 0 {docno} {grade}\n")
        qrels.append(f"Q{qid} 0 JUDGED-ONLY 2\n")  # judged, never returned
    return "".join(qrels).encode(), "".join(run).encode()


hit = st.tuples(
    st.sampled_from([0.5, 1.0, 1.0, 2.25, -3.0, 7]),  # few values: many ties
    st.one_of(st.none(), st.integers(0, 3)),
)
queries = st.lists(
    st.tuples(st.integers(1, 40), st.lists(hit, min_size=1, max_size=13, unique_by=lambda h: h)),
    min_size=1,
    max_size=4,
    unique_by=lambda query: query[0],
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(drawn=queries)
def test_ndcg_through_the_app_equals_metrics_core_with_ties(db, tmp_path, drawn):
    qrels, run = files(drawn)
    expected = core_values(tmp_path, qrels, run)
    found = app_values(trec_eval_project(), qrels, run)
    assert found.keys() == expected.keys()
    for qid, value in expected.items():
        assert abs(found[qid] - value) < 1e-12, (qid, found[qid], value)


def test_trec_eval_test_files_evaluate_alike_in_the_app(db, tmp_path):
    qrels = (TREC_EVAL / "qrels.test").read_bytes()
    run = (TREC_EVAL / "results.test").read_bytes()
    expected = core_values(tmp_path, qrels, run)
    found = app_values(trec_eval_project(), qrels, run)
    assert np.allclose([found[qid] for qid in expected], list(expected.values()), atol=1e-12)


def test_an_exported_run_evaluates_as_the_original_file(db, tmp_path):
    qrels = (TREC_EVAL / "qrels.test").read_bytes()
    run = (TREC_EVAL / "results.test").read_bytes()
    project = trec_eval_project()
    app_values(project, qrels, run)
    export = exporters.result_list_export(result_list=ResultList.objects.get(project=project))
    exported = b"".join(export.chunks)
    assert len(exported.splitlines()) == len(run.splitlines())
    assert core_values(tmp_path, qrels, exported) == core_values(tmp_path, qrels, run)


def test_exported_qrels_line_up_with_the_original_by_qid(db, tmp_path):
    qrels = (TREC_EVAL / "qrels.test").read_bytes()
    project = trec_eval_project()
    app_values(project, qrels, (TREC_EVAL / "results.test").read_bytes())
    events = Judgement.objects.for_project(project)
    export = exporters.judgement_export(
        project=project, events=events, dataset="events", file_format="qrels"
    )
    exported = {tuple(line.split()) for line in b"".join(export.chunks).decode().splitlines()}
    original = {tuple(line.split()) for line in qrels.decode().splitlines()}
    assert exported == original
