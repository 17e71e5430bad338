"""GET /api/projects/<slug>/compare/: B against A query by query, and the gate."""

import datetime as dt

import numpy as np
import pytest

from metrics.core.stats import paired_bootstrap_ci, paired_randomisation_test
from metrics.registry import project_spec
from tests.api import metrics_oracle
from tests.api.conftest import NOV
from tests.factories import ProjectFactory, ResultListFactory

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

    assert body["queries"] == 4
    assert "R-4" in {row["external_id"] for row in body["results"]}


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
