"""Which queries a mean counts (``mean_over``), and that it reconciles with the command.

The project: result list L returns four queries, three of them judged ("tent", "stove",
"lamp") and one nobody graded ("map"); "boots" is judged but only list M returns it.
Who may see what is not at stake here: these are services and the command.
"""

import datetime as dt
import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import call_command

from metrics import evaluate, history, refresh
from metrics.core import ndcg
from metrics.models import MetricPoint
from metrics.registry import MetricSpec
from tests.factories import (
    DocumentFactory,
    HitFactory,
    JudgementFactory,
    ProjectFactory,
    QueryFactory,
    ResultListFactory,
    UserFactory,
)

AS_OF = dt.datetime(2026, 11, 21, tzinfo=dt.UTC)
GRADED_AT = dt.datetime(2026, 11, 10, tzinfo=dt.UTC)
# Each query's hits in L (document names) and the grades given (document -> grade).
L_HITS = {"tent": "abc", "stove": "ba", "lamp": "c", "map": "ab"}
GRADES = {"tent": {"a": 2, "b": 0, "c": 3}, "stove": {"a": 3}, "lamp": {"c": 0}, "boots": {"a": 1}}


@pytest.fixture
def camping(db):
    project = ProjectFactory(slug="camping")
    documents = {name: DocumentFactory(project=project, external_id=name) for name in "abc"}
    queries = {text: QueryFactory(project=project, text=text) for text in [*L_HITS, "boots"]}
    first = ResultListFactory(project=project, name="L")
    second = ResultListFactory(project=project, name="M")
    for text, names in L_HITS.items():
        for rank, name in enumerate(names, start=1):
            HitFactory(result_list=first, query=queries[text], document=documents[name], rank=rank)
    HitFactory(result_list=second, query=queries["boots"], document=documents["a"], rank=1)
    rater = UserFactory(username="ann", roles=["rater"])
    for text, grades in GRADES.items():
        for name, grade in grades.items():
            JudgementFactory(
                query=queries[text],
                document=documents[name],
                rater=rater,
                grade=grade,
                created_at=GRADED_AT,
            )
    return project, first, queries, documents, rater


def ndcg_of(text: str) -> float:
    """The query's NDCG@10 in L, by the core from the grades above."""
    grades = GRADES.get(text, {})
    ranked = [grades.get(name) for name in L_HITS[text]]
    return ndcg(ranked, list(grades.values()), k=10).ndcg


def overall(result_list, spec) -> MetricPoint:
    return evaluate.overall_point(result_list, spec, as_of=AS_OF)


def store(result_list, spec) -> None:
    refresh.metric_points_store(evaluate.metric_points_build(result_list, spec, as_of=AS_OF))


def test_a_mean_over_judged_queries_leaves_the_unjudged_query_out(camping):
    _, first, *_ = camping
    spec = MetricSpec(mean_over="judged")
    store(first, spec)

    point = overall(first, spec)

    judged = [ndcg_of(text) for text in ("tent", "stove", "lamp")]
    assert point.value == pytest.approx(sum(judged) / 3, abs=1e-15)
    assert (point.queries, point.queries_judged, point.queries_returned) == (3, 3, 4)
    assert point.zero_idcg == 1  # "lamp": its only judged document is irrelevant


def test_a_mean_over_all_queries_counts_the_unjudged_and_the_unreturned_query_as_zero(camping):
    _, first, *_ = camping
    spec = MetricSpec(mean_over="all")
    store(first, spec)

    point = overall(first, spec)

    judged = [ndcg_of(text) for text in ("tent", "stove", "lamp")]
    # tent, stove, lamp, map (unjudged: 0) and boots (judged, not returned: 0).
    assert point.value == pytest.approx(sum(judged) / 5, abs=1e-15)
    assert (point.queries, point.queries_judged, point.queries_returned) == (5, 3, 4)
    assert point.zero_idcg == 2  # lamp and map


def test_with_no_judged_query_the_mean_counts_nothing(db):
    result_list = HitFactory().result_list
    spec = MetricSpec()
    store(result_list, spec)

    point = overall(result_list, spec)

    assert (point.queries, point.queries_judged, point.queries_returned) == (0, 0, 1)
    assert point.value == 0.0


def exported(tmp_path, project, result_list) -> tuple[str, str]:
    """The project's consensus as qrels and the list as a run, written by the commands."""
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    call_command(
        "export_judgements", project.slug, "--dataset", "consensus", "--format", "qrels",
        "-o", str(qrels), stderr=StringIO(),
    )  # fmt: skip
    call_command("export_result_list", str(result_list.pk), "-o", str(run), stderr=StringIO())
    return str(qrels), str(run)


def command_mean(qrels: str, run: str, *options: str) -> float:
    """``python -m metrics.core`` as a user runs it: the ``all`` line of ndcg_cut.10."""
    out = subprocess.run(
        [sys.executable, "-m", "metrics.core", qrels, run, "-m", "ndcg_cut.10",
         "--gain", "exponential", "--precision", "15", *options],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    measure, qid, value = out.strip().split("\t")
    assert (measure.strip(), qid) == ("ndcg_cut_10", "all")
    return float(value)


def test_the_judged_mean_equals_the_command_on_the_exported_qrels_and_run(camping, tmp_path):
    project, first, *_ = camping
    spec = MetricSpec(mean_over="judged")
    store(first, spec)

    # trec_eval's default: the queries in both files, so neither "map" (no qrels line)
    # nor "boots" (not in the run).
    assert overall(first, spec).value == pytest.approx(
        command_mean(*exported(tmp_path, project, first)), abs=1e-14
    )


def test_the_all_mean_equals_the_command_with_c_once_every_returned_query_is_judged(
    camping, tmp_path
):
    project, first, queries, documents, rater = camping
    JudgementFactory(
        query=queries["map"], document=documents["b"], rater=rater, grade=1, created_at=GRADED_AT
    )
    spec = MetricSpec(mean_over="all")
    store(first, spec)

    # -c: every qrels query, "boots" (not in the run) counting 0, as the app counts it.
    files = exported(tmp_path, project, first)
    assert overall(first, spec).value == pytest.approx(command_mean(*files, "-c"), abs=1e-14)
    assert overall(first, spec).value != pytest.approx(command_mean(*files), abs=1e-6)


def test_the_all_mean_also_counts_the_unjudged_query_that_no_qrels_file_can_name(
    camping, tmp_path
):
    project, first, *_ = camping
    spec = MetricSpec(mean_over="all")
    store(first, spec)

    # The command with -c sees four queries (tent, stove, lamp, boots); the app's mean
    # is over those and "map", which has no line in any qrels file.
    with_c = command_mean(*exported(tmp_path, project, first), "-c")
    assert overall(first, spec).value == pytest.approx(with_c * 4 / 5, abs=1e-14)


def test_the_rebuild_stores_the_same_means_as_a_refresh(camping):
    project, first, *_ = camping
    for mean_over in ("judged", "all"):
        project.metric_mean_over = mean_over
        project.save()
        spec = MetricSpec(mean_over=mean_over)
        history.metrics_rebuild(project=project, since=AS_OF, until=AS_OF, every="day")
        stored = MetricPoint.objects.get(
            result_list=first, query=None, metric=spec.name, as_of=AS_OF
        )
        fresh = overall(first, spec)
        assert (stored.value, stored.queries, stored.ci_low, stored.ci_high) == (
            fresh.value,
            fresh.queries,
            fresh.ci_low,
            fresh.ci_high,
        )
        assert (stored.queries_judged, stored.queries_returned) == (3, 4)
