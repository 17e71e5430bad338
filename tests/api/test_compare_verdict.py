"""GET /api/projects/<slug>/compare/: the verdict, the bounds the unjudged hits leave
open, and each list's coverage of its top k (issue 38)."""

import re

import pytest

from judgements import imports
from metrics.core.bounds import ndcg_range
from tests.factories import ProjectFactory

QUERIES = 12


def project_of(
    slug: str,
    runs: dict[str, list[tuple[str, str]]],
    qrels: list[tuple[str, str, int]],
    **fields,
):
    """A project holding ``runs`` (name: (qid, docno) in rank order) and ``qrels``
    (qid, docno, grade), imported as a user imports them."""
    project = ProjectFactory(name=slug, slug=slug, consensus="mean", **fields)
    made = {}
    for name, hits in runs.items():
        ranks: dict[str, int] = {}
        lines = []
        for qid, docno in hits:
            ranks[qid] = ranks.get(qid, 0) + 1
            lines.append(f"{qid} Q0 {docno} {ranks[qid]} {100 - ranks[qid]} {name}")
        made[name] = imports.result_list_import(
            project=project, upload=["\n".join(lines).encode() + b"\n"], file_format="trec",
            name=name, create_missing=True,
        ).result_list  # fmt: skip
    text = "".join(f"{qid} 0 {docno} {grade}\n" for qid, docno, grade in qrels)
    imports.judgement_import(
        project=project, upload=[text.encode()], file_format="qrels", uploaded_by=None,
        create_missing=True,
    )  # fmt: skip
    return project, made


def compare(client, project, a, b, **params) -> dict:
    response = client.get(
        f"/api/projects/{project.slug}/compare/", {"a": a.pk, "b": b.pk, "k": 10, **params}
    )
    assert response.status_code == 200, response.content
    return response.json()


def test_a_fully_judged_clear_win_is_decided_by_the_test_alone(charlie, db):
    queries = [f"q{i}" for i in range(QUERIES)]
    project, made = project_of(
        "win",
        {
            "a": [(q, d) for q in queries for d in ("bad", "good")],
            "b": [(q, d) for q in queries for d in ("good", "bad")],
        },
        [(q, d, g) for q in queries for d, g in (("good", 3), ("bad", 0))],
    )

    body = compare(charlie, project, made["a"], made["b"])

    assert body["verdict"]["decision"] == "b_better"
    assert body["verdict"]["unjudged_pairs"] == 0 and body["verdict"]["alpha"] == 0.05
    assert body["test"]["p_value"] < 0.05
    # Every hit judged: the bounds have width 0, at the difference and at each mean.
    assert body["bounds"]["low"] == body["bounds"]["high"]
    assert body["bounds"]["low"] == pytest.approx(body["mean_difference"], abs=1e-12)
    for side in ("a", "b"):
        assert body[side]["bounds"]["low"] == body[side]["bounds"]["high"]
        assert body[side]["bounds"]["low"] == pytest.approx(body[side]["mean"], abs=1e-12)
        assert body[side]["judged_at_k"] == 1.0
        assert (body[side]["unjudged_in_top_k"], body[side]["queued"]) == (0, 0)
    # The other way round A is the better one.
    assert compare(charlie, project, made["b"], made["a"])["verdict"]["decision"] == "a_better"


def test_unjudged_hits_whose_bounds_cross_zero_leave_it_not_decided(charlie, db):
    """B puts an unjudged document above the one relevant document A finds first: zero
    filled, A wins every query, but a top grade for it would make B win."""
    queries = [f"q{i}" for i in range(QUERIES)]
    project, made = project_of(
        "open",
        {
            "a": [(q, d) for q in queries for d in ("good",)],
            "b": [(q, d) for q in queries for d in ("new", "good")],
        },
        [(q, "good", 3) for q in queries],
    )

    body = compare(charlie, project, made["a"], made["b"])

    assert body["mean_difference"] < 0 and body["test"]["p_value"] < 0.05
    verdict = body["verdict"]
    assert verdict["decision"] == "not_decided"
    assert verdict["unjudged_pairs"] == QUERIES
    assert "bounds of the difference" in verdict["reason"] and "12 unjudged" in verdict["reason"]
    # The bounds, per query from each list's exact range (a top grade for "new" also
    # enters A's judged ideal): the same for every query, so the mean's are those.
    scale = range(project.max_grade + 1)
    a = ndcg_range([3], [3], k=10, grades=scale, others=1)
    b = ndcg_range([None, 3], [3], k=10, grades=scale)
    assert (body["bounds"]["low"], body["bounds"]["high"]) == pytest.approx(
        (b.low - a.high, b.high - a.low), abs=1e-12
    )
    assert body["bounds"]["low"] < 0 < body["bounds"]["high"]
    assert body["a"]["bounds"] == pytest.approx({"low": a.low, "high": a.high}, abs=1e-12)
    assert (body["a"]["judged_at_k"], body["a"]["unjudged_in_top_k"]) == (1.0, 0)
    assert body["b"]["judged_at_k"] == 0.5 and body["b"]["unjudged_in_top_k"] == QUERIES
    # "queued" counts the raters' queue as the list's unjudged work does.
    work = charlie.get(f"/api/result-lists/{made['b'].pk}/unjudged/", {"k": 10}).json()
    assert body["b"]["queued"] == work["in_pool"] == QUERIES


def test_each_query_carries_its_own_bounds_and_their_mean_is_the_mean_s(charlie, db):
    """Half the queries have an unjudged hit above B's relevant one, half are judged
    through: per query, the API gives each list's exact range and the difference's;
    width 0 where both top k are judged, and their means are the bounds of the mean."""
    open_, judged = [f"q{i}" for i in range(6)], [f"q{i}" for i in range(6, 12)]
    project, made = project_of(
        "per-query",
        {
            "a": [(q, "good") for q in open_ + judged],
            "b": [(q, d) for q in open_ for d in ("new", "good")]
            + [(q, d) for q in judged for d in ("bad", "good")],
        },
        [(q, "good", 3) for q in open_ + judged] + [(q, "bad", 1) for q in judged],
    )

    body = compare(charlie, project, made["a"], made["b"], page_size=100)

    rows = {row["external_id"]: row for row in body["results"]}
    assert len(rows) == 12
    scale = range(project.max_grade + 1)
    a_open = ndcg_range([3], [3], k=10, grades=scale, others=1)
    b_open = ndcg_range([None, 3], [3], k=10, grades=scale)
    for q in open_:
        bounds = rows[q]["bounds"]
        assert bounds["a"] == pytest.approx({"low": a_open.low, "high": a_open.high}, abs=1e-12)
        assert bounds["b"] == pytest.approx({"low": b_open.low, "high": b_open.high}, abs=1e-12)
        assert bounds["delta"] == pytest.approx(
            {"low": b_open.low - a_open.high, "high": b_open.high - a_open.low}, abs=1e-12
        )
        assert bounds["b"]["low"] <= rows[q]["b"] <= bounds["b"]["high"]
        assert bounds["b"]["low"] < bounds["b"]["high"]
    for q in judged:
        bounds = rows[q]["bounds"]
        for side in ("a", "b"):
            assert bounds[side]["low"] == bounds[side]["high"] == rows[q][side]
        assert bounds["delta"]["low"] == bounds["delta"]["high"]
    lows = [row["bounds"]["delta"]["low"] for row in rows.values()]
    highs = [row["bounds"]["delta"]["high"] for row in rows.values()]
    assert body["bounds"]["low"] == pytest.approx(sum(lows) / 12, abs=1e-12)
    assert body["bounds"]["high"] == pytest.approx(sum(highs) / 12, abs=1e-12)


def test_the_compare_page_shows_a_querys_open_range_beside_its_difference(charlie, db):
    queries = [f"q{i}" for i in range(4)]
    project, made = project_of(
        "page-range",
        {
            "a": [(q, "good") for q in queries],
            "b": [(q, d) for q in queries[:2] for d in ("new", "good")]
            + [(q, "good") for q in queries[2:]],
        },
        [(q, "good", 3) for q in queries],
    )

    page = charlie.get(
        f"/metrics/{project.slug}/compare/", {"a": made["a"].pk, "b": made["b"].pk, "k": 10}
    ).content.decode()

    body = compare(charlie, project, made["a"], made["b"])
    shown = re.findall(r"could be ([+-]\d\.\d{4}) to ([+-]\d\.\d{4})", page)
    row = next(r for r in body["results"] if r["external_id"] == "q0")
    expected = (f"{row['bounds']['delta']['low']:+.4f}", f"{row['bounds']['delta']['high']:+.4f}")
    # Two open queries, each in the table of every query and among the most changed.
    assert shown.count(expected) >= 2 and set(shown) == {expected}


def test_a_test_that_does_not_reject_with_unjudged_hits_left_is_not_decided(charlie, db):
    """Bounds of one sign (B better whatever grade "new" gets) over 4 queries, one of
    which A wins outright: the interval crosses zero, so more grades may decide it."""
    wins = ["q0", "q1", "q2"]
    project, made = project_of(
        "interval",
        {
            "a": [(q, d) for q in wins for d in ("bad", "good")] + [("q3", "good")],
            "b": [(q, d) for q in wins for d in ("good", "new")] + [("q3", "bad")],
        },
        [(q, d, g) for q in [*wins, "q3"] for d, g in (("good", 3), ("bad", 0))],
    )

    body = compare(charlie, project, made["a"], made["b"])

    # Zero filled is B's lowest filling here: the difference is the low bound.
    assert body["bounds"]["low"] == pytest.approx(body["mean_difference"], abs=1e-12)
    assert 0 < body["bounds"]["low"] < body["bounds"]["high"]
    assert body["interval"]["low"] < 0 < body["interval"]["high"]
    verdict = body["verdict"]
    assert verdict["decision"] == "not_decided" and verdict["unjudged_pairs"] == 3
    assert "interval of the difference" in verdict["reason"] and "3 unjudged" in verdict["reason"]


def test_complete_grades_with_no_difference_show_no_difference(charlie, db):
    queries = [f"q{i}" for i in range(QUERIES)]
    better = set(queries[: QUERIES // 2])
    project, made = project_of(
        "same",
        {
            "a": [
                (q, d)
                for q in queries
                for d in (("good", "bad") if q in better else ("bad", "good"))
            ],
            "b": [
                (q, d)
                for q in queries
                for d in (("bad", "good") if q in better else ("good", "bad"))
            ],
        },
        [(q, d, g) for q in queries for d, g in (("good", 3), ("bad", 0))],
    )

    body = compare(charlie, project, made["a"], made["b"])

    assert body["mean_difference"] == pytest.approx(0, abs=1e-12)
    assert body["verdict"]["decision"] == "no_difference"
    assert body["verdict"]["unjudged_pairs"] == 0
    assert "No difference shown" in body["verdict"]["reason"]
    assert body["bounds"]["low"] == body["bounds"]["high"] == pytest.approx(0, abs=1e-12)


@pytest.mark.parametrize(("alpha", "message"), [("0", "between 0 and 1"), ("1.5", "less than")])
def test_a_bad_alpha_is_a_400_naming_it(charlie, db, alpha, message):
    queries = ["q0", "q1"]
    project, made = project_of(
        "alpha", {"a": [(q, "d") for q in queries], "b": [(q, "e") for q in queries]},
        [(q, "d", 1) for q in queries],
    )  # fmt: skip

    response = charlie.get(
        f"/api/projects/{project.slug}/compare/",
        {"a": made["a"].pk, "b": made["b"].pk, "alpha": alpha},
    )

    assert response.status_code == 400
    (error,) = response.json()["errors"]
    assert error["field"] == "alpha" and message in error["message"]


def test_the_compare_page_says_at_the_top_that_hits_are_unjudged(client, analyst, db):
    queries = [f"q{i}" for i in range(QUERIES)]
    project, made = project_of(
        "page",
        {
            "a": [(q, "good") for q in queries],
            "b": [(q, d) for q in queries for d in ("new", "good")],
        },
        [(q, "good", 3) for q in queries],
    )
    client.force_login(analyst)

    response = client.get(
        f"/metrics/{project.slug}/compare/", {"a": made["a"].pk, "b": made["b"].pk, "k": 10}
    )

    assert response.status_code == 200
    html = response.content.decode()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    assert (
        "Not every hit is graded: 0 of A's and 12 of B's hits in the top k have no grade" in text
    )
    assert "Verdict: Not decided yet: the unjudged hits could still change the answer." in text
    # Both said before the numbers they qualify.
    assert (
        html.index('id="unjudged-warning"')
        < html.index('id="verdict"')
        < html.index('id="summary"')
    )
    same = client.get(f"/metrics/{project.slug}/compare/", {"a": made["a"].pk, "b": made["a"].pk})
    assert same.status_code == 400 and "Choose two different result lists" in same.content.decode()


def test_the_compare_csv_carries_each_querys_bounds(charlie, db):
    import csv
    import io

    queries = [f"q{i}" for i in range(4)]
    project, made = project_of(
        "csv-range",
        {
            "a": [(q, "good") for q in queries],
            "b": [(q, d) for q in queries[:2] for d in ("new", "good")]
            + [(q, "good") for q in queries[2:]],
        },
        [(q, "good", 3) for q in queries],
    )

    response = charlie.get(
        f"/metrics/{project.slug}/compare/export/",
        {"a": made["a"].pk, "b": made["b"].pk, "k": 10},
    )

    assert response.status_code == 200
    rows = {row["external_id"]: row for row in csv.DictReader(io.StringIO(response.text))}
    body = compare(charlie, project, made["a"], made["b"])
    for row in body["results"]:
        line, bounds = rows[row["external_id"]], row["bounds"]
        for side in ("a", "b"):
            assert float(line[f"ndcg_{side}_low"]) == pytest.approx(bounds[side]["low"])
            assert float(line[f"ndcg_{side}_high"]) == pytest.approx(bounds[side]["high"])
        assert float(line["delta_low"]) == pytest.approx(bounds["delta"]["low"])
        assert float(line["delta_high"]) == pytest.approx(bounds["delta"]["high"])
    assert float(rows["q0"]["delta_low"]) < float(rows["q0"]["delta_high"])
    assert rows["q3"]["delta_low"] == rows["q3"]["delta_high"]
