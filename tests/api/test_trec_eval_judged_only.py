"""The metrics API's judged-only NDCG (``unjudged=remove``) against trec_eval's ``-J``.

trec_eval's own test files are imported through the API as a user uploads them (the
run as a result list, the qrels as one rater's grades), and the API's numbers are
compared with what trec_eval ``-J`` printed on them (``tests/data/trec_eval/``), to its
last printed digit. On ``qrels.rel_level``, whose 304 grades of -1 fit a scale with a
harmful grade, the app keeps the harmful hits in the ranking where trec_eval drops
them: there the API equals ``python -m metrics.core --remove-unjudged`` unrounded.
"""

from pathlib import Path

import pytest

from judgements.models import default_scale
from tests.api.conftest import upload
from tests.factories import ProjectFactory
from tests.metrics.core.trec_files import TREC_EVAL_TEST, run_command

pytestmark = pytest.mark.skipif(
    not TREC_EVAL_TEST.is_dir(), reason=f"trec_eval test data not found at {TREC_EVAL_TEST}"
)

EXPECTED = Path(__file__).resolve().parents[1] / "data" / "trec_eval"
CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
HARMFUL = {"value": -1, "label": "Harmful", "description": "Worse than nothing."}
FIVE = {"value": 4, "label": "Exact", "description": "The very item."}


def imported(client, slug: str, target: str, name: str, **fields) -> dict:
    response = client.post(
        f"/api/projects/{slug}/{target}/import/",
        {"file": upload((TREC_EVAL_TEST / name).read_bytes(), name), **fields},
        format="multipart",
    )
    assert response.status_code == 201, response.json()
    return response.json()


def trec_eval_values(name: str) -> dict[tuple[str, str], str]:
    """trec_eval's printed values by (measure, qid)."""
    lines = (EXPECTED / name).read_text().splitlines()
    return {(m.strip(), q): v for m, q, v in (line.split("\t") for line in lines)}


def api_values(client, run: int, k: int | None, **changes) -> dict[tuple[str, str], float]:
    """The API's judged-only values with trec_eval's parameters, by trec_eval's names."""
    params = {"k": k or "", "gain": "linear", "unjudged": "remove", "mean_over": "judged"}
    params |= {"ideal_depth": "cut" if k else "full", **changes}
    response = client.get(f"/api/result-lists/{run}/metrics/", params)
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["spec"]["unjudged"] == params["unjudged"]
    names = {None: ("ndcg", "map")} | {c: (f"ndcg_cut_{c}", f"map_cut_{c}") for c in CUTOFFS}
    ndcg, ap = names[k]
    values = {(ndcg, "all"): body["mean"], (ap, "all"): body["means"]["average_precision"]}
    for row in body["results"]:
        values[ndcg, row["external_id"]] = row["ndcg"]
        values[ap, row["external_id"]] = row["average_precision"]
        if k:
            values[f"P_{k}", row["external_id"]] = row["precision"]
    if k:
        values[f"P_{k}", "all"] = body["means"]["precision"]
    return values


def test_the_api_prints_trec_eval_J_on_trec_eval_test_files(charlie, project):
    run = imported(charlie, "outdoor", "result-lists", "results.test", format="trec",
                   create_missing="true")["result_list"]["id"]  # fmt: skip
    imported(charlie, "outdoor", "judgements", "qrels.test", format="qrels", create_missing="true")
    expected = trec_eval_values("out.test.aqJ")

    compared = 0
    for k in (None, *CUTOFFS):
        for key, value in api_values(charlie, run, k).items():
            assert f"{value:.4f}" == expected[key], key
            compared += 1

    # ndcg and map, then ndcg_cut, map_cut and P at 9 cut-offs: 3 queries and the mean.
    assert compared == 4 * (2 + 3 * len(CUTOFFS))
    # Without removal the API's numbers are the plain ones, which differ.
    zero = api_values(charlie, run, None, unjudged="zero")
    assert f"{zero['ndcg', 'all']:.4f}" == "0.4021" != expected["ndcg", "all"]


def test_harmful_grades_stay_in_the_ranking_unlike_trec_eval_J(charlie):
    ProjectFactory(name="Levels", slug="levels", scale=[HARMFUL, *default_scale(), FIVE])
    run = imported(charlie, "levels", "result-lists", "results.test", format="trec",
                   create_missing="true")["result_list"]["id"]  # fmt: skip
    imported(
        charlie, "levels", "judgements", "qrels.rel_level", format="qrels", create_missing="true"
    )
    status, out, err = run_command(
        TREC_EVAL_TEST / "qrels.rel_level", TREC_EVAL_TEST / "results.test",
        "-m", "ndcg", "-m", "ndcg_cut.10", "-q", "--remove-unjudged", "--precision", "17",
    )  # fmt: skip
    assert status == 0, err
    removed = {(m.strip(), q): float(v) for m, q, v in (x.split("\t") for x in out.splitlines())}
    trec_eval = trec_eval_values("out.test.aqlJ")

    for k, name in ((None, "ndcg"), (10, "ndcg_cut_10")):
        ours = {key: v for key, v in api_values(charlie, run, k).items() if key[0] == name}
        assert len(ours) == 4
        for key, value in ours.items():
            assert value == pytest.approx(removed[key], abs=1e-12), key
        assert any(f"{v:.4f}" != trec_eval[key] for key, v in ours.items())


@pytest.mark.parametrize("value", ["judged_only", "J", "REMOVE"])
def test_an_unknown_unjudged_value_is_a_400_naming_the_field(charlie, project, value):
    run = imported(charlie, "outdoor", "result-lists", "results-302.test", format="trec",
                   create_missing="true")["result_list"]["id"]  # fmt: skip

    response = charlie.get(f"/api/result-lists/{run}/metrics/", {"unjudged": value})

    assert response.status_code == 400
    [error] = response.json()["errors"]
    assert error["field"] == "unjudged" and "not one of the available choices" in error["message"]
