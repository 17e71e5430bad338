import math
import os
import subprocess
import sys

import numpy as np
import pytest

from .trec_files import REPOSITORY, TREC_EVAL_TEST, run_command

QRELS = "q1 0 a 2\nq1 0 b 1\nq1 0 c 0\nq2 0 a 3\nq3 0 z 1\n"
RUN = "q1 Q0 a 1 3.0 t\nq1 Q0 b 2 2.0 t\nq1 Q0 c 3 1.0 t\nq2 Q0 x 1 1.0 t\nq2 Q0 a 2 0.5 t\n"


@pytest.fixture
def files(tmp_path):
    """Write qrels and run text to files; return a function giving their paths."""

    def write(qrels=QRELS, run=RUN):
        qrels_path, run_path = tmp_path / "qrels.txt", tmp_path / "run.txt"
        qrels_path.write_text(qrels)
        run_path.write_text(run)
        return qrels_path, run_path

    return write


def values(out):
    """Map (measure, qid) to the printed value text."""
    rows = (line.split("\t") for line in out.splitlines())
    return {(measure.strip(), qid): value for measure, qid, value in rows}


def test_lines_have_trec_eval_layout(files):
    status, out, _ = run_command(*files(), "-m", "ndcg")

    assert status == 0
    assert out == "ndcg                  \tall\t0.8155\n"


def test_q_adds_one_line_per_query_in_qid_order_before_the_mean(files):
    _, out, _ = run_command(*files(), "-m", "ndcg", "-q")

    assert [line.split("\t")[1] for line in out.splitlines()] == ["q1", "q2", "all"]


def test_mean_covers_only_queries_in_both_files_without_c(files):
    _, out, _ = run_command(*files(), "-m", "ndcg", "-q")

    printed = values(out)
    assert float(printed["ndcg", "all"]) == pytest.approx(
        (float(printed["ndcg", "q1"]) + float(printed["ndcg", "q2"])) / 2, abs=1e-4
    )


def test_c_averages_over_every_qrels_query_with_missing_ones_at_zero(files):
    _, out, _ = run_command(*files(), "-m", "ndcg", "-q", "-c")

    printed = values(out)
    assert printed["ndcg", "q3"] == "0.0000"
    assert float(printed["ndcg", "all"]) == pytest.approx(
        (float(printed["ndcg", "q1"]) + float(printed["ndcg", "q2"])) / 3, abs=1e-4
    )


def test_queries_only_in_the_run_are_not_evaluated(files):
    _, out, _ = run_command(*files(run=RUN + "q9 Q0 a 1 1.0 t\n"), "-m", "ndcg", "-q")

    assert "q9" not in out


def test_precision_option_sets_the_decimals(files):
    _, out, _ = run_command(*files(), "-m", "ndcg", "--precision", "7")

    # q1 is ranked ideally (1.0); q2 has its only relevant document at rank 2.
    mean = (1.0 + 1.0 / math.log2(3)) / 2
    assert out == f"ndcg                  \tall\t{mean:.7f}\n"


def test_cut_measures_print_one_line_per_cut_off_in_ascending_order(files):
    _, out, _ = run_command(*files(), "-m", "ndcg_cut.10,1", "-m", "P.2")

    assert [line.split("\t")[0].strip() for line in out.splitlines()] == [
        "P_2",
        "ndcg_cut_1",
        "ndcg_cut_10",
    ]


def test_ties_are_broken_by_docno_descending_in_byte_order(files):
    # Equal scores: "9" sorts above "10" and "b" above "B" in byte order.
    qrels = "q 0 9 3\nq 0 10 0\nq 0 b 0\nq 0 B 0\n"
    run = "q Q0 10 1 1.0 t\nq Q0 9 2 1.0 t\nq Q0 B 3 0.5 t\nq Q0 b 4 0.5 t\n"

    _, out, _ = run_command(*files(qrels, run), "-m", "recip_rank", "-m", "P.1")

    assert values(out)["recip_rank", "all"] == "1.0000"
    assert values(out)["P_1", "all"] == "1.0000"


def test_the_rank_column_is_ignored_in_favour_of_scores(files):
    run = "q1 Q0 c 1 1.0 t\nq1 Q0 a 2 3.0 t\nq1 Q0 b 3 2.0 t\n"

    _, ordered, _ = run_command(*files(run=RUN.replace("q2", "q1x")), "-m", "ndcg", "-q")
    _, shuffled, _ = run_command(*files(run=run), "-m", "ndcg", "-q")

    assert values(ordered)["ndcg", "q1"] == values(shuffled)["ndcg", "q1"] == "1.0000"


def test_exponential_gain_and_returned_ideal_are_available(files):
    _, out, _ = run_command(*files(), "-m", "ndcg", "-q", "--gain", "exponential")
    _, returned, _ = run_command(*files(), "-m", "ndcg", "-q", "--ideal", "returned")

    assert values(out)["ndcg", "q1"] == "1.0000"
    assert values(returned)["ndcg", "q2"] == "0.6309"


def test_remove_unjudged_condenses_the_lists(files):
    _, out, _ = run_command(*files(), "-m", "ndcg", "-q", "--remove-unjudged")

    assert values(out)["ndcg", "q2"] == "1.0000"


def test_help_says_the_default_gain_is_linear_for_trec_eval_compatibility():
    status, out, _ = run_command("--help")

    assert status == 0
    assert "linear (default here: trec_eval compatible)" in " ".join(out.split())


@pytest.mark.parametrize(
    ("which", "text", "message"),
    [
        ("run", RUN + "q1 Q0 d 4 0.5\n", "run.txt, line 6: expected 6 columns"),
        ("run", RUN.replace("2.0", "high"), "run.txt, line 2: score 'high' is not a number"),
        ("run", RUN + "q1 Q0 d 4 nan t\n", "run.txt, line 6: score 'nan' is not a number"),
        ("qrels", "q1 0 a\n", "qrels.txt, line 1: expected 4 columns"),
        ("qrels", "\n\nq1 0 a 2 extra\n", "qrels.txt, line 3: expected 4 columns"),
        ("qrels", QRELS + "q1 0 x two\n", "qrels.txt, line 6: grade 'two' is not a number"),
        ("qrels", QRELS + "q1 0 a 1\n", "qrels.txt, line 6: document a is listed twice"),
        ("run", RUN + "q1 Q0 a 9 0.1 t\n", "run.txt, line 6: document a is listed twice"),
    ],
)
def test_bad_input_gives_one_clear_message_and_exit_status_2(files, which, text, message):
    paths = files(qrels=text) if which == "qrels" else files(run=text)

    status, out, err = run_command(*paths, "-m", "ndcg")

    assert status == 2
    assert out == ""
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_a_missing_file_gives_exit_status_2(tmp_path, files):
    qrels, _ = files()

    status, _, err = run_command(qrels, tmp_path / "absent.txt", "-m", "ndcg")

    assert status == 2
    assert "absent.txt" in err


def test_no_common_query_gives_exit_status_2(files):
    status, _, err = run_command(*files(run="zz Q0 a 1 1 t\n"), "-m", "ndcg")

    assert status == 2
    assert "no query" in err


def test_unknown_measure_is_a_usage_error(files):
    status, _, err = run_command(*files(), "-m", "bpref")

    assert status == 2
    assert "unknown measure" in err


def test_module_runs_as_a_command():
    qrels, run = TREC_EVAL_TEST / "qrels.test", TREC_EVAL_TEST / "results.test"
    if not qrels.exists():
        pytest.skip(f"trec_eval test data not found at {TREC_EVAL_TEST}")

    completed = subprocess.run(
        [sys.executable, "-m", "metrics.core", str(qrels), str(run), "-m", "map"],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        check=True,
    )

    assert completed.stdout == "map                   \tall\t0.1785\n"


def test_the_command_prints_in_its_own_process_what_it_prints_in_process(tmp_path):
    # The command's process settings (metrics.core.process) may change its
    # speed, never a digit: 300 queries make the BLAS products run threaded
    # on a machine with several cores, and 17 digits show the last bit.
    rng = np.random.default_rng(7)
    qrels = [f"q{q} 0 d{d} {rng.integers(0, 4)}\n" for q in range(300) for d in range(0, 60, 2)]
    run = [
        f"q{q} Q0 d{d} {rank} {50 - rank + rng.random():.6f} t\n"
        for q in range(300)
        for rank, d in enumerate(rng.permutation(60)[:40], start=1)
    ]
    (tmp_path / "qrels").write_text("".join(qrels))
    (tmp_path / "run").write_text("".join(run))
    args = [tmp_path / "qrels", tmp_path / "run", "-m", "ndcg", "-m", "ndcg_cut.10", "-q"]
    args += ["-m", "map", "--precision", "17"]

    completed = subprocess.run(
        [sys.executable, "-m", "metrics.core", *map(str, args)],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        check=True,
    )

    assert completed.stdout == run_command(*args)[1]


def test_importing_the_package_leaves_the_process_settings_alone():
    probe = (
        "import gc, os, metrics.core; "
        "print(gc.isenabled(), 'OPENBLAS_THREAD_TIMEOUT' in os.environ)"
    )

    completed = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPOSITORY,
        env={k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"},
        capture_output=True,
        text=True,
        check=True,
    )

    assert completed.stdout == "True False\n"
