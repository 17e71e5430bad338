import os

import numpy as np
import pytest

from metrics.core import decimals, trec, trec_tokens
from metrics.core.trec import MAX_ID_BYTES, TrecFormatError, parse_qrels, parse_run


def test_run_lines_may_use_tabs_spaces_and_extra_columns():
    run = parse_run(b"1\tQ0\tDOC-1\t1\t  2.129133\tSTANDARD more junk\n1 Q0 DOC-2 2 -1e2 S\n")

    assert run.qids.tolist() == [b"1", b"1"]
    assert run.docnos.tolist() == [b"DOC-1", b"DOC-2"]
    assert run.values.tolist() == [2.129133, -100.0]


def test_blank_and_comment_lines_are_skipped_but_counted_in_line_numbers():
    run = parse_run(b"\n# a comment\n   \n1 Q0 D 1 1 t\n")

    assert run.lines.tolist() == [4]


def test_a_missing_final_newline_and_windows_line_ends_are_accepted():
    qrels = parse_qrels(b"1 0 A 1\r\n1 0 B 0")

    assert qrels.docnos.tolist() == [b"A", b"B"]
    assert qrels.values.tolist() == [1.0, 0.0]


def test_grades_may_be_fractional_or_negative():
    assert parse_qrels(b"1 0 A 2.5\n1 0 B -1\n").values.tolist() == [2.5, -1.0]


def test_scores_parse_as_doubles():
    assert parse_run(b"1 Q0 A 1 0.1 t\n").values[0] == 0.1


def test_long_identifiers_keep_every_byte():
    docno = b"X" * 40 + b"-tail"

    assert parse_qrels(b"1 0 " + docno + b" 1\n").docnos.tolist() == [docno]


def test_an_identifier_longer_than_the_limit_is_refused_with_its_line():
    with pytest.raises(TrecFormatError, match="line 2: docno longer than"):
        parse_qrels(b"1 0 A 1\n1 0 " + b"X" * (MAX_ID_BYTES + 1) + b" 1\n", "q.txt")


def test_an_empty_file_gives_empty_columns():
    assert len(parse_run(b"").qids) == 0


def test_the_error_names_file_line_and_problem():
    with pytest.raises(TrecFormatError) as raised:
        parse_run(b"1 Q0 A 1 1 t\n1 Q0 B 2 t\n", "runs/bm25.txt")

    assert str(raised.value) == (
        "runs/bm25.txt, line 2: expected 6 columns (qid Q0 docno rank score tag), found 5"
    )
    assert (raised.value.path, raised.value.line) == ("runs/bm25.txt", 2)


@pytest.fixture(params=[1, 2], ids=["one-thread", "two-threads"])
def threads(request, monkeypatch):
    """Read chunks on one thread or two, whatever the machine's load."""
    monkeypatch.setattr(trec, "_idle_processors", lambda: request.param)
    return request.param


def test_files_read_in_small_chunks_give_the_same_columns_and_line_numbers(
    monkeypatch, tmp_path, threads
):
    lines = [f"q{i % 3} Q0 DOC-{i} {i} {100 - i}.5 tag\n" for i in range(40)]
    lines[7] = "\n"
    lines[12] = "# a comment\n"
    lines[20] = "q1 Q0 " + "L" * 50 + " 20 1.25 tag\n"  # Longer than a chunk.
    text = "".join(lines).encode()
    path = tmp_path / "run.txt"
    path.write_bytes(text)
    whole = parse_run(text)

    monkeypatch.setattr(trec_tokens, "CHUNK_BYTES", 16)
    chunked = trec.read_run(path)

    assert chunked.qids.tolist() == whole.qids.tolist()
    assert chunked.docnos.tolist() == whole.docnos.tolist()
    assert chunked.values.tolist() == whole.values.tolist()
    assert chunked.lines.tolist() == whole.lines.tolist()


def test_line_numbers_in_errors_count_the_lines_of_earlier_chunks(monkeypatch, threads):
    text = b"q Q0 A 1 1 t\n" * 30 + b"q Q0 B 1 x t\n"
    monkeypatch.setattr(trec_tokens, "CHUNK_BYTES", 20)

    with pytest.raises(TrecFormatError, match="line 31: score 'x' is not a number"):
        parse_run(text)


def test_of_two_bad_chunks_the_error_of_the_earlier_one_is_raised(monkeypatch, threads):
    text = b"q Q0 A 1 1 t\n" * 30 + b"q Q0 B 1 x t\n" + b"q Q0 A 1 1 t\n" * 30 + b"q Q0 C 1 t\n"
    monkeypatch.setattr(trec_tokens, "CHUNK_BYTES", 20)

    with pytest.raises(TrecFormatError, match="line 31: score 'x' is not a number"):
        parse_run(text)


@pytest.mark.parametrize("chunk_bytes", [1 << 20, 64], ids=["one-chunk", "small-chunks"])
def test_files_of_the_shortest_possible_lines_are_read_whole(monkeypatch, chunk_bytes):
    # Rows are copied into arrays sized from the file's length and its
    # shortest possible line: one byte per column, single blanks.
    monkeypatch.setattr(trec_tokens, "CHUNK_BYTES", chunk_bytes)

    qrels = parse_qrels(b"1 0 a 1\n" * 500 + b"2 0 b 3")
    run = parse_run(b"1 Q b 1 2 t\n" * 300 + b"1 Q c 1 3 t")

    assert qrels.docnos.tolist() == [b"a"] * 500 + [b"b"]
    assert qrels.values.tolist() == [1.0] * 500 + [3.0]
    assert run.lines.tolist() == list(range(1, 302))
    assert run.values[-2:].tolist() == [2.0, 3.0]


def test_chunks_are_read_on_one_thread_per_idle_processor():
    processors = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1

    assert 1 <= trec._idle_processors() <= max(processors, 1)


def test_every_byte_but_a_digit_is_refused_in_every_place_of_eight():
    # The eight bytes are read at once; a byte of any value in any place
    # must be told from a digit, whatever the bytes around it.
    texts = [
        b"12345678"[:place] + bytes([byte]) + b"12345678"[place + 1 :]
        for place in range(8)
        for byte in range(256)
    ]
    words = np.frombuffer(b"".join(texts), dtype="<u8").copy()
    keep_all = np.full(len(texts), np.uint64(2**64 - 1))

    values, ok = decimals._eight_digits(words, keep_all)

    assert ok.tolist() == [text.isdigit() for text in texts]
    assert values[ok].tolist() == [int(text) for text in texts if text.isdigit()]


def test_bytes_outside_the_kept_ones_read_as_zeros():
    words = np.frombuffer(b"xx345678" + b"1234567\xff", dtype="<u8").copy()
    keep = decimals._KEEP_HIGH_BYTES[[6, 7]]

    values, ok = decimals._eight_digits(words, keep)

    assert ok.tolist() == [True, False]
    assert values[0] == 345678
