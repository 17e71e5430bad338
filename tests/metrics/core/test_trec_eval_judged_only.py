"""Judged documents only against trec_eval's own ``-J``, to the last printed digit.

trec_eval ships no ``-J`` output, so ``tests/data/trec_eval/`` keeps what trec_eval
printed on its own test files (its README says the commands and the commit). The
command's ``-J`` must print the same lines; the app's rule (``unjudged="remove"``,
the command's ``--remove-unjudged``) is the same wherever the qrels hold no negative
grade, which trec_eval reads as "in the pool, not judged" and ``-J`` drops, while the
app keeps a negative grade as a judgement (a harmful hit).
"""

from pathlib import Path

import numpy as np
import pytest

from metrics.core.batch import ndcg_batch
from metrics.core.ranking import rank_queries
from metrics.core.trec import read_qrels, read_run

from .trec_files import TREC_EVAL_TEST, run_command

pytestmark = pytest.mark.skipif(
    not TREC_EVAL_TEST.is_dir(), reason=f"trec_eval test data not found at {TREC_EVAL_TEST}"
)

EXPECTED = Path(__file__).resolve().parents[2] / "data" / "trec_eval"
MEASURES = ["-m", "map", "-m", "recip_rank", "-m", "P", "-m", "ndcg", "-m", "ndcg_cut"]
MEASURES += ["-m", "map_cut"]
# (trec_eval's output, qrels, run, options besides -J -q and the measures)
FILES = [
    ("out.test.aqJ", "qrels.test", "results.test", []),
    ("out.test.aqcJ", "qrels.test", "results.trunc", ["-c"]),
    ("out.test.aqlJ", "qrels.rel_level", "results.test", ["-l", "2"]),
]


def command_lines(*args):
    status, out, err = run_command(*args)
    assert status == 0, err
    return out.splitlines(keepends=True)


@pytest.mark.parametrize(("expected", "qrels", "run", "options"), FILES, ids=[f[0] for f in FILES])
def test_every_line_equals_trec_eval_J(expected, qrels, run, options):
    trec_eval = (EXPECTED / expected).read_text().splitlines(keepends=True)

    ours = command_lines(
        TREC_EVAL_TEST / qrels, TREC_EVAL_TEST / run, *MEASURES, "-q", "-J", *options
    )

    # 3 queries and the mean, 30 values each: map, recip_rank, 9 P, ndcg, 9 ndcg_cut, 9 map_cut.
    assert len(trec_eval) == 4 * 30
    assert ours == trec_eval


def test_J_changes_the_numbers_of_trec_eval_test_files():
    """The parity above is not the plain output's: -J moves 49 of these 120 lines."""
    plain = command_lines(
        TREC_EVAL_TEST / "qrels.test", TREC_EVAL_TEST / "results.test", *MEASURES, "-q"
    )
    judged = (EXPECTED / "out.test.aqJ").read_text().splitlines(keepends=True)

    changed = [line for line in judged if line not in plain]

    assert len(changed) == 49


def test_remove_unjudged_is_J_without_negative_grades_and_keeps_them_with_them():
    test = ["-q", *MEASURES]
    rel_level = (TREC_EVAL_TEST / "qrels.rel_level", TREC_EVAL_TEST / "results.test")

    removed = command_lines(
        TREC_EVAL_TEST / "qrels.test", TREC_EVAL_TEST / "results.test", *test, "--remove-unjudged"
    )
    kept_harmful = command_lines(*rel_level, *test, "-l", "2", "--remove-unjudged")

    assert removed == (EXPECTED / "out.test.aqJ").read_text().splitlines(keepends=True)
    # qrels.rel_level grades 304 documents -1: trec_eval -J drops them, the app keeps them.
    trec_eval = (EXPECTED / "out.test.aqlJ").read_text().splitlines(keepends=True)
    assert kept_harmful != trec_eval
    assert {line.split("\t")[1] for line in kept_harmful if line not in trec_eval} >= {"303"}


def test_the_core_with_unjudged_removed_gives_trec_eval_J_ndcg():
    """ndcg_batch(unjudged="remove"), the function the app calls, on the files as ranked."""
    ranked = rank_queries(
        read_qrels(TREC_EVAL_TEST / "qrels.test"), read_run(TREC_EVAL_TEST / "results.test")
    )
    expected = {
        (measure.strip(), qid): value.strip()
        for measure, qid, value in (
            line.split("\t") for line in (EXPECTED / "out.test.aqJ").read_text().splitlines()
        )
    }
    compared = 0
    for measure, k, depth in [
        ("ndcg", None, "full"),
        ("ndcg_cut_10", 10, "cut"),
        ("ndcg_cut_5", 5, "cut"),
    ]:
        values = ndcg_batch(
            ranked.ranked_grades,
            ranked.offsets,
            k=k,
            ideal_grades=ranked.judged_grades,
            ideal_offsets=ranked.judged_offsets,
            gain="linear",
            ideal_depth=depth,
            unjudged="remove",
        ).ndcg
        for qid, value in zip(ranked.qids, values, strict=True):
            assert f"{value:.4f}" == expected[measure, qid], (measure, qid)
            compared += 1
        assert f"{np.mean(values):.4f}" == expected[measure, "all"]

    assert compared == 9


def test_unrounded_values_equal_pytrec_eval_judged_docs_only():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    with open(TREC_EVAL_TEST / "qrels.rel_level") as qrels_file:
        qrels = pytrec_eval.parse_qrel(qrels_file)
    with open(TREC_EVAL_TEST / "results.test") as run_file:
        run = pytrec_eval.parse_run(run_file)
    measures = {"ndcg", "ndcg_cut.5,10,100", "map", "P.10"}
    expected = pytrec_eval.RelevanceEvaluator(
        qrels, measures, judged_docs_only_flag=True
    ).evaluate(run)
    plain = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)

    ours = command_lines(
        TREC_EVAL_TEST / "qrels.rel_level",
        TREC_EVAL_TEST / "results.test",
        *["-m", "ndcg", "-m", "ndcg_cut.5,10,100", "-m", "map", "-m", "P.10"],
        *["-q", "-J", "--precision", "17"],
    )

    compared = 0
    for line in ours:
        measure, qid, value = (field.strip() for field in line.split("\t"))
        if qid != "all":
            assert abs(float(value) - expected[qid][measure]) < 1e-12, (measure, qid)
            compared += 1
    assert compared == 3 * 6
    assert any(expected[q]["ndcg"] != plain[q]["ndcg"] for q in expected)


def test_J_refuses_negative_grades_that_penalise():
    status, _, err = run_command(
        TREC_EVAL_TEST / "qrels.rel_level", TREC_EVAL_TEST / "results.test",
        "-m", "ndcg", "-J", "--negative", "penalise",
    )  # fmt: skip

    assert status == 2
    assert "use --remove-unjudged with --negative penalise" in err
