"""GET /api/projects/<slug>/compare/: B against A query by query, and the gate."""

import datetime as dt
import io
import re
from contextlib import redirect_stdout

import numpy as np
import pytest

from judgements import imports
from judgements.models import Project, ResultList
from metrics.core.cli import main as metrics_core
from metrics.core.stats import paired_bootstrap_ci, paired_randomisation_test
from metrics.registry import project_spec
from tests.api import metrics_oracle
from tests.api.conftest import NOV
from tests.factories import ProjectFactory, ResultListFactory
from tests.shared import TREC_EVAL

# Charlie (analyst) compares; raters and visitors are refused (test_role_matrix).


def compare(client, project, **params) -> dict:
    response = client.get(f"/api/projects/{project.slug}/compare/", params)
    assert response.status_code == 200, response.content
    return response.json()


def lists(project):
    return project.result_lists.get(name="prod"), project.result_lists.get(name="candidate")


def test_the_comparison_equals_the_core_on_each_lists_values(charlie, shop):
    prod, candidate = lists(shop)
    spec = project_spec(shop)
    now = dt.datetime.now(dt.UTC)

    body = compare(charlie, shop, a=prod.pk, b=candidate.pk)

    a = metrics_oracle.per_query(prod, spec, now)
    b = metrics_oracle.per_query(candidate, spec, now)
    common = sorted(q for q in set(a) & set(b) if metrics_oracle.counts(a[q], spec))
    values_a = np.array([a[q]["ndcg"] for q in common])
    values_b = np.array([b[q]["ndcg"] for q in common])
    test = paired_randomisation_test(values_a, values_b, n_resamples=10_000, seed=0)
    interval = paired_bootstrap_ci(values_a, values_b, n_resamples=10_000, seed=0)
    # rope has only a "can't tell": under the default mean over judged queries it is out.
    assert body["queries"] == len(common) == 3
    assert body["a"]["mean"] == pytest.approx(values_a.mean(), abs=1e-12)
    assert body["b"]["mean"] == pytest.approx(values_b.mean(), abs=1e-12)
    assert body["mean_difference"] == pytest.approx(test.mean_difference, abs=1e-12)
    assert body["test"]["p_value"] == test.p_value
    assert (body["interval"]["low"], body["interval"]["high"]) == pytest.approx(
        (interval.low, interval.high), abs=1e-12
    )
    deltas = values_b - values_a
    assert (body["wins"], body["losses"]) == (np.sum(deltas > 1e-9), np.sum(deltas < -1e-9))
    assert body["wins"] + body["ties"] + body["losses"] == len(common)
    rows = {row["id"]: row for row in body["results"]}
    for q, delta in zip(common, deltas, strict=True):
        assert rows[q]["delta"] == pytest.approx(delta, abs=1e-12)
        assert rows[q]["a"] == pytest.approx(a[q]["ndcg"], abs=1e-12)


def test_queries_come_worst_first_with_the_most_changed_named(charlie, shop):
    prod, candidate = lists(shop)

    body = compare(charlie, shop, a=prod.pk, b=candidate.pk)

    deltas = [row["delta"] for row in body["results"]]
    assert deltas == sorted(deltas)
    assert [row["id"] for row in body["most_degraded"]] == [
        row["id"] for row in body["results"] if row["delta"] < -1e-9
    ]
    assert {row["external_id"] for row in body["results"]} >= {"T-1", "L-3"}
    assert "R-4" not in {row["external_id"] for row in body["results"]}


def test_a_mean_over_all_queries_compares_the_unjudged_ones_too(charlie, shop):
    prod, candidate = lists(shop)

    body = compare(charlie, shop, a=prod.pk, b=candidate.pk, mean_over="all")

    # The four queries both returned (rope's "can't tell" too) and map, graded but
    # returned by neither: 0 for both, as each list's own mean over all counts it.
    assert body["queries"] == 5
    rows = {row["text"]: row for row in body["results"]}
    assert "R-4" in {row["external_id"] for row in body["results"]}
    assert (rows["map"]["a"], rows["map"]["b"]) == (0.0, 0.0)
    assert (body["a"]["unreturned"], body["b"]["unreturned"]) == (1, 1)
    for side, run in (("a", prod), ("b", candidate)):
        own = charlie.get(f"/api/result-lists/{run.pk}/metrics/", {"mean_over": "all"}).json()
        assert body[side]["mean"] == own["mean"]


def test_without_max_drop_there_is_no_verdict(charlie, shop):
    prod, candidate = lists(shop)

    assert compare(charlie, shop, a=prod.pk, b=candidate.pk)["gate"] is None


def test_a_drop_larger_than_max_drop_fails_and_says_by_how_much(charlie, shop):
    prod, candidate = lists(shop)

    body = compare(charlie, shop, a=prod.pk, b=candidate.pk, max_drop=0.01)

    drop = -body["mean_difference"]
    assert drop > 0.01
    gate = body["gate"]
    assert (gate["passed"], gate["max_drop"]) == (False, 0.01)
    assert f"fell by {drop:.4f}" in gate["reason"]
    assert f"{body['losses']} lost" in gate["reason"]
    assert "The drop allowed is 0.01: more than it." in gate["reason"]


def test_a_drop_within_max_drop_passes(charlie, shop):
    prod, candidate = lists(shop)
    drop = -compare(charlie, shop, a=prod.pk, b=candidate.pk)["mean_difference"]

    exactly = compare(charlie, shop, a=prod.pk, b=candidate.pk, max_drop=drop)
    below = compare(charlie, shop, a=prod.pk, b=candidate.pk, max_drop=drop - 1e-6)

    assert exactly["gate"]["passed"] is True
    assert "within it" in exactly["gate"]["reason"]
    assert below["gate"]["passed"] is False


def test_an_improvement_passes_whatever_max_drop(charlie, shop):
    prod, candidate = lists(shop)

    gate = compare(charlie, shop, a=candidate.pk, b=prod.pk, max_drop=0)["gate"]

    assert gate["passed"] is True and "rose by" in gate["reason"]


def test_unjudged_hits_make_the_comparison_provisional(charlie, shop):
    prod, candidate = lists(shop)

    body = compare(charlie, shop, a=prod.pk, b=candidate.pk)

    assert body["provisional"] is True
    for side, run in (("a", prod), ("b", candidate)):
        unjudged = charlie.get(f"/api/result-lists/{run.pk}/unjudged/").json()["unjudged"]
        assert body[side]["unjudged"] == unjudged > 0


def test_the_comparison_as_of_a_past_moment_uses_the_grades_of_then(charlie, shop):
    prod, candidate = lists(shop)
    moment = NOV + dt.timedelta(days=2)

    body = compare(charlie, shop, a=prod.pk, b=candidate.pk, as_of=moment.isoformat())

    then = metrics_oracle.per_query(candidate, project_spec(shop), moment)
    assert body["as_of"] == "2026-11-03T00:00:00Z"
    rows = {row["id"]: row for row in body["results"]}
    assert {q: rows[q]["b"] for q in rows} == pytest.approx(
        {q: then[q]["ndcg"] for q in rows}, abs=1e-12
    )


def test_without_a_and_b_the_two_newest_lists_are_compared(charlie, shop):
    prod, candidate = lists(shop)

    body = compare(charlie, shop)

    assert (body["a"]["id"], body["b"]["id"]) == (prod.pk, candidate.pk)


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"a": "same", "b": "same"}, None, "two different result lists"),
        ({"a": "other"}, "a", "not one of the available choices"),
        ({"max_drop": "-0.1"}, "max_drop", "greater than or equal to 0"),
        ({"max_drop": "nan"}, "max_drop", "Enter a number"),
        ({"k": "0"}, "k", "greater than or equal to 1"),
    ],
)
def test_bad_parameters_get_a_400_naming_the_field(charlie, shop, params, field, message):
    prod, _ = lists(shop)
    other = ResultListFactory(project=ProjectFactory(slug="elsewhere"), name="theirs")
    ids = {"same": prod.pk, "other": other.pk}
    params = {name: ids.get(value, value) for name, value in params.items()}

    response = charlie.get(f"/api/projects/{shop.slug}/compare/", params)

    assert response.status_code == 400
    (error,) = response.json()["errors"]
    assert error["field"] == field and message in error["message"]


def test_lists_with_no_query_in_common_fail_the_gate_and_say_why(charlie, shop):
    prod, _ = lists(shop)
    empty = ResultListFactory(project=shop, name="empty", captured_at=NOV)

    body = compare(charlie, shop, a=prod.pk, b=empty.pk, max_drop=0.5)

    assert body["queries"] == 0 and body["b"]["mean"] is None
    assert body["gate"]["passed"] is False
    assert "no query in common" in body["gate"]["reason"]


# trec_eval's own test files: results.test (3 queries) as production, results.trunc
# (it lacks query 302) as the candidate. trec_eval -c counts 302 at 0 for the candidate:
# out.test.aq gives 0.3016 for results.test, out.test.aqc 0.1717 for results.trunc.
TREC_EVAL_PARAMS = {"k": 10, "gain": "linear", "mean_over": "all"}


def trec_eval_lists(slug: str = "trec") -> tuple[Project, ResultList, ResultList]:
    """A project holding qrels.test, results.test ("production") and results.trunc
    ("candidate"), imported as a user imports them."""
    project = ProjectFactory(name="trec_eval", slug=slug, consensus="mean")
    made = [
        imports.result_list_import(
            project=project, upload=[(TREC_EVAL / run).read_bytes()], file_format="trec",
            name=name, create_missing=True,
        ).result_list
        for name, run in (("production", "results.test"), ("candidate", "results.trunc"))
    ]  # fmt: skip
    imports.judgement_import(
        project=project, upload=[(TREC_EVAL / "qrels.test").read_bytes()],
        file_format="qrels", uploaded_by=None, create_missing=True,
    )  # fmt: skip
    return project, *made


def trec_eval_c(run: str) -> float:
    """ndcg_cut.10 of ``run`` against qrels.test with -c, from ``python -m metrics.core``."""
    out = io.StringIO()
    argv = [str(TREC_EVAL / "qrels.test"), str(TREC_EVAL / run), "-m", "ndcg_cut.10", "-c"]
    with redirect_stdout(out):
        assert metrics_core([*argv, "--precision", "17"]) == 0
    [line] = out.getvalue().splitlines()
    return float(line.split("\t")[2])


def pytrec_eval_c(run: str) -> float:
    """The same from trec_eval's own code (pytrec_eval): the mean over every qrels
    query, one the run lacks counting 0, as trec_eval -c averages."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, hits = {}, {}
    for line in (TREC_EVAL / "qrels.test").read_text().splitlines():
        qid, _, docno, grade = line.split()
        qrels.setdefault(qid, {})[docno] = int(grade)
    for line in (TREC_EVAL / run).read_text().splitlines():
        qid, _, docno, _, score = line.split()[:5]
        hits.setdefault(qid, {})[docno] = float(score)
    found = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(hits)
    return sum(found.get(qid, {"ndcg_cut_10": 0.0})["ndcg_cut_10"] for qid in qrels) / len(qrels)


def expected_outputs(name: str) -> dict[str, float]:
    """trec_eval's ndcg_cut_10 lines in its expected output ``name`` (4 places)."""
    lines = [line.split() for line in (TREC_EVAL / name).read_text().splitlines()]
    return {qid: float(value) for measure, qid, value in lines if measure == "ndcg_cut_10"}


def test_a_mean_over_all_queries_counts_a_query_the_candidate_dropped_as_trec_eval_c(charlie, db):
    project, production, candidate = trec_eval_lists()

    body = compare(
        charlie, project, a=production.pk, b=candidate.pk, max_drop=0.01, **TREC_EVAL_PARAMS
    )

    a, b = expected_outputs("out.test.aq"), expected_outputs("out.test.aqc")
    assert (round(body["a"]["mean"], 4), round(body["b"]["mean"], 4)) == (a["all"], b["all"])
    assert body["a"]["mean"] == pytest.approx(trec_eval_c("results.test"), abs=1e-12)
    assert body["b"]["mean"] == pytest.approx(trec_eval_c("results.trunc"), abs=1e-12)
    assert body["a"]["mean"] == pytest.approx(pytrec_eval_c("results.test"), abs=1e-12)
    assert body["b"]["mean"] == pytest.approx(pytrec_eval_c("results.trunc"), abs=1e-12)
    assert body["queries"] == 3
    assert (body["a"]["unreturned"], body["b"]["unreturned"]) == (0, 1)
    rows = {row["external_id"]: row for row in body["results"]}
    assert {qid: round(row["a"], 4) for qid, row in rows.items()} == {
        qid: value for qid, value in a.items() if qid != "all"
    }
    assert {qid: round(row["b"], 4) for qid, row in rows.items()} == {
        qid: value for qid, value in b.items() if qid != "all"
    }
    assert rows["302"]["b"] == 0.0  # not returned by the candidate
    assert (body["wins"], body["ties"], body["losses"]) == (1, 1, 1)
    gate = body["gate"]
    assert gate["passed"] is False
    assert gate["reason"].startswith(
        f"Mean NDCG@10 fell by {a['all'] - b['all']:.4f} ({a['all']:.4f} to {b['all']:.4f}) "
        "over all 3 queries (mean over all: A did not return 0, B did not return 1, each "
        "counted 0): 1 lost, 1 gained, 1 tied;"
    )


def test_the_baseline_missing_a_query_counts_it_at_0_for_the_baseline(charlie, db):
    project, production, candidate = trec_eval_lists()

    body = compare(charlie, project, a=candidate.pk, b=production.pk, **TREC_EVAL_PARAMS)

    assert body["a"]["mean"] == pytest.approx(trec_eval_c("results.trunc"), abs=1e-12)
    assert (body["a"]["unreturned"], body["b"]["unreturned"]) == (1, 0)
    assert body["mean_difference"] == pytest.approx(
        trec_eval_c("results.test") - trec_eval_c("results.trunc"), abs=1e-12
    )


def test_a_mean_over_judged_queries_still_compares_the_queries_both_returned(charlie, db):
    project, production, candidate = trec_eval_lists()
    params = {**TREC_EVAL_PARAMS, "mean_over": "judged"}

    body = compare(charlie, project, a=production.pk, b=candidate.pk, **params)

    assert body["queries"] == 2 and (body["only_a"], body["only_b"]) == (1, 0)
    assert (body["a"]["unreturned"], body["b"]["unreturned"]) == (0, 0)
    assert "302" not in {row["external_id"] for row in body["results"]}
    assert (
        "over 2 queries in common"
        in compare(charlie, project, a=production.pk, b=candidate.pk, max_drop=0, **params)[
            "gate"
        ]["reason"]
    )


def test_the_compare_page_says_how_many_queries_each_list_did_not_return(client, analyst, db):
    project, production, candidate = trec_eval_lists()
    client.force_login(analyst)
    params = {"a": production.pk, "b": candidate.pk, **TREC_EVAL_PARAMS}

    response = client.get(f"/metrics/{project.slug}/compare/", params)

    assert response.status_code == 200
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))
    assert "Over all 3 queries, every judged query and every query either list returned" in text
    assert "A did not return 0 and B did not return 1" in text
    data = response.context["data"]
    assert (round(data.mean_a, 4), round(data.mean_b, 4)) == (0.3016, 0.1717)
