import numpy as np
import pytest

from metrics.core import trec_pairs
from metrics.core.ranking import rank_queries
from metrics.core.trec import TrecFormatError, parse_qrels, parse_run

QRELS = b"q2 0 a 1\nq1 0 a 3\nq1 0 b 2\nq1 0 c -1\n"


def ranked(run_text, qrels_text=QRELS, **options):
    return rank_queries(parse_qrels(qrels_text), parse_run(run_text), **options)


def test_queries_come_out_in_byte_order_whatever_the_file_order():
    result = ranked(b"q2 Q0 a 1 1 t\nq1 Q0 a 1 1 t\n")

    assert result.qids == ["q1", "q2"]


def test_documents_are_ranked_by_score_descending():
    result = ranked(b"q1 Q0 c 1 0.1 t\nq1 Q0 a 2 0.3 t\nq1 Q0 b 3 0.2 t\n")

    assert result.ranked_grades.tolist() == [3.0, 2.0, -1.0]


def test_equal_scores_rank_the_larger_docno_first():
    result = ranked(b"q1 Q0 a 1 1 t\nq1 Q0 b 2 1 t\nq1 Q0 c 3 1 t\n")

    assert result.ranked_grades.tolist() == [-1.0, 2.0, 3.0]


def test_interleaved_queries_are_grouped():
    result = ranked(b"q1 Q0 a 1 2 t\nq2 Q0 a 1 2 t\nq1 Q0 b 2 1 t\n")

    assert result.offsets.tolist() == [0, 2, 3]
    assert result.ranked_grades.tolist() == [3.0, 2.0, 1.0]


def test_unjudged_documents_get_nan():
    result = ranked(b"q1 Q0 zz 1 2 t\n")

    assert np.isnan(result.ranked_grades[0])


def test_judged_grades_of_each_evaluated_query_are_all_kept():
    result = ranked(b"q1 Q0 a 1 2 t\n")

    assert sorted(result.judged_grades.tolist()) == [-1.0, 2.0, 3.0]
    assert result.judged_offsets.tolist() == [0, 3]


def test_all_qrels_queries_adds_empty_lists_for_queries_missing_from_the_run():
    result = ranked(b"q1 Q0 a 1 2 t\n", all_qrels_queries=True)

    assert result.qids == ["q1", "q2"]
    assert result.in_run.tolist() == [True, False]
    assert result.offsets.tolist() == [0, 1, 1]


def test_long_docnos_whose_hashes_collide_still_match_exactly(monkeypatch):
    # A zero multiplier gives every docno the same hash: the byte check must
    # notice and tell the documents apart by their bytes.
    monkeypatch.setattr(trec_pairs, "_MIX2", np.uint64(0))
    qrels = b"q1 0 document-number-b 2\nq2 0 document-number-a 1\n"

    result = ranked(
        b"q1 Q0 document-number-b 1 2 t\nq1 Q0 document-number-zz 2 1 t\n"
        b"q2 Q0 document-number-a 1 1 t\n",
        qrels,
    )

    assert result.ranked_grades[[0, 2]].tolist() == [2.0, 1.0]
    assert np.isnan(result.ranked_grades[1])


def test_long_docnos_are_matched_and_tied_in_byte_order():
    qrels = b"q 0 LA010189-0001 1\nq 0 LA010189-0002 2\n"
    run = b"q Q0 LA010189-0001 1 5 t\nq Q0 LA010189-0002 2 5 t\nq Q0 FBIS3-10082 3 6 t\n"

    result = ranked(run, qrels)

    assert np.isnan(result.ranked_grades[0])
    assert result.ranked_grades[1:].tolist() == [2.0, 1.0]


def test_a_document_twice_in_the_run_is_an_error_naming_both_lines():
    with pytest.raises(TrecFormatError, match=r"line 3: document a is listed twice .* line 1"):
        ranked(b"q1 Q0 a 1 2 t\nq1 Q0 b 2 1 t\nq1 Q0 a 3 0 t\n")


def test_ties_compare_docnos_as_unsigned_bytes_like_strcmp():
    qrels = "q 0 é 2\nq 0 z 1\n".encode()
    run = "q Q0 z 1 1 t\nq Q0 é 2 1 t\n".encode()

    result = ranked(run, qrels)

    # "é" starts with byte 0xC3, above "z" (0x7A), so it ranks first on a tie.
    assert result.ranked_grades.tolist() == [2.0, 1.0]


def test_tied_hits_of_a_ranked_run_in_any_docno_order_are_put_in_docno_order():
    # Scores never rise inside the query, but the tie lists a before b.
    result = ranked(b"q1 Q0 a 1 2 t\nq1 Q0 b 2 2 t\nq1 Q0 c 3 1 t\nq2 Q0 a 1 5 t\n")

    assert result.ranked_grades.tolist() == [2.0, 3.0, -1.0, 1.0]
