"""The command against trec_eval's own test data and expected outputs.

The expected files were produced by trec_eval's test suite:
``out.test`` by ``trec_eval qrels.test results.test``, ``out.test.aq`` with
``-m all_trec -q``, ``out.test.aqc`` with ``-m all_trec -q -c`` on
``results.trunc``, ``out.test.aql`` with ``-m all_trec -q -l 2`` on
``qrels.rel_level`` (negative grades), and ``out.test.meas_params`` with
measure parameters such as ``-m ndcg_cut.10,20,23``.
"""

import re

import pytest

from .trec_files import TREC_EVAL_TEST, run_command

pytestmark = pytest.mark.skipif(
    not TREC_EVAL_TEST.is_dir(), reason=f"trec_eval test data not found at {TREC_EVAL_TEST}"
)

NDCG_LINE = re.compile(r"^ndcg(_cut_\d+)? ")


def expected_lines(name, pattern=NDCG_LINE):
    lines = (TREC_EVAL_TEST / name).read_text().splitlines(keepends=True)
    return [line for line in lines if pattern.match(line)]


def command_lines(*args):
    status, out, err = run_command(*args)
    assert status == 0, err
    return out.splitlines(keepends=True)


def test_every_ndcg_line_of_the_per_query_output_matches():
    expected = expected_lines("out.test.aq")

    ours = command_lines(
        TREC_EVAL_TEST / "qrels.test",
        TREC_EVAL_TEST / "results.test",
        "-m",
        "ndcg",
        "-m",
        "ndcg_cut",
        "-q",
    )

    assert len(expected) == 3 * 10 + 10
    assert ours == expected


def test_every_ndcg_line_matches_with_queries_missing_from_the_run_counted():
    expected = expected_lines("out.test.aqc")

    ours = command_lines(
        TREC_EVAL_TEST / "qrels.test",
        TREC_EVAL_TEST / "results.trunc",
        "-m",
        "ndcg",
        "-m",
        "ndcg_cut",
        "-q",
        "-c",
    )

    assert ours == expected


def test_every_ndcg_line_matches_with_negative_and_higher_grades():
    expected = expected_lines("out.test.aql")

    ours = command_lines(
        TREC_EVAL_TEST / "qrels.rel_level",
        TREC_EVAL_TEST / "results.test",
        "-m",
        "ndcg",
        "-m",
        "ndcg_cut",
        "-q",
    )

    assert ours == expected


def test_ndcg_cut_lines_with_measure_parameters_match():
    expected = expected_lines("out.test.meas_params", re.compile(r"^ndcg_cut_"))

    ours = command_lines(
        TREC_EVAL_TEST / "qrels.test",
        TREC_EVAL_TEST / "results.test",
        "-m",
        "ndcg_cut.10,20,23",
        "-q",
    )

    assert len(expected) == 12
    assert ours == expected


def test_precision_map_and_reciprocal_rank_of_the_default_output_match():
    expected = expected_lines("out.test", re.compile(r"^(map|recip_rank|P_\d+) "))

    ours = command_lines(
        TREC_EVAL_TEST / "qrels.test",
        TREC_EVAL_TEST / "results.test",
        "-m",
        "P",
        "-m",
        "map",
        "-m",
        "recip_rank",
    )

    assert ours == expected


def test_per_query_precision_map_and_reciprocal_rank_match_with_relevance_level_two():
    pattern = re.compile(r"^(map|recip_rank|P_\d+|map_cut_\d+) ")
    expected = expected_lines("out.test.aql", pattern)

    ours = command_lines(
        TREC_EVAL_TEST / "qrels.rel_level",
        TREC_EVAL_TEST / "results.test",
        "-m",
        "map",
        "-m",
        "recip_rank",
        "-m",
        "P",
        "-m",
        "map_cut",
        "-q",
        "-l",
        "2",
    )

    assert ours == expected


def test_unrounded_values_equal_pytrec_eval_on_the_trec_eval_test_files():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    with open(TREC_EVAL_TEST / "qrels.rel_level") as qrels_file:
        qrels = pytrec_eval.parse_qrel(qrels_file)
    with open(TREC_EVAL_TEST / "results.test") as run_file:
        run = pytrec_eval.parse_run(run_file)
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg", "ndcg_cut.5,10,100"}).evaluate(run)

    ours = command_lines(
        TREC_EVAL_TEST / "qrels.rel_level",
        TREC_EVAL_TEST / "results.test",
        "-m",
        "ndcg",
        "-m",
        "ndcg_cut.5,10,100",
        "-q",
        "--precision",
        "17",
    )

    for line in ours:
        measure, qid, value = (field.strip() for field in line.split("\t"))
        if qid != "all":
            assert abs(float(value) - expected[qid][measure]) < 1e-12
