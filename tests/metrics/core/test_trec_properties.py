"""The fast TREC reader and ranker against a plain line-by-line reading of the same bytes.

The reference below reads files the way trec_eval does, one line at a time:
fields split on blanks, blank and ``#`` lines skipped, scores parsed as
doubles, hits ranked by score descending and then docno descending byte by
byte. Generated files mix what real ones hold: tied scores written
differently (``1``, ``1.0``, ``1e0``), tabs, runs of blanks and Windows line
ends, comment lines, extra trailing columns, docnos longer than 8 bytes and
non-ASCII ones; and chunks as small as a few lines, so that regular and
irregular chunks meet in one file.
"""

import math
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from metrics.core import trec, trec_pairs, trec_tokens
from metrics.core.ranking import rank_queries
from metrics.core.trec import parse_qrels, parse_run

SCORES = st.one_of(
    st.sampled_from(["1", "1.0", "1e0", "0.5", "0.50", "-2", "10", "9", "3.25", "-0.0", "0"]),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False).map(repr),
    st.decimals(min_value=-99999, max_value=99999, places=6).map(str),
    # Sixteen digits: past 2**53, where reading the digits as one integer stops being exact.
    st.tuples(st.integers(10**7, 10**8 - 1), st.integers(0, 10**8 - 1)).map(
        lambda parts: f"{parts[0]}.{parts[1]:08d}"
    ),
)
DOCNO = st.text(alphabet=st.sampled_from([*"abzAZ09-_.", "é", "ß", "中"]), min_size=1, max_size=12)
QID = st.sampled_from(["1", "2", "10", "q9", "Q9", "query-number-7", "é"])
SEPARATOR = st.sampled_from([" ", " ", " ", "\t", "  ", " \t"])
LINE_END = st.sampled_from(["\n", "\n", "\n", "\r\n", " \n"])


@st.composite
def layout(draw):
    """How lines are written: one plain way (the usual file) or any mix of ways."""
    if draw(st.booleans()):
        return lambda: " ", lambda: "\n", False
    return lambda: draw(SEPARATOR), lambda: draw(LINE_END), True


@st.composite
def files(draw):
    separator, line_end, odd = draw(layout())
    queries = draw(st.lists(QID, min_size=1, max_size=4, unique=True))
    qrels_lines, run_lines = [], []
    for qid in queries:
        docnos = draw(st.lists(DOCNO, min_size=1, max_size=8, unique=True))
        for docno in docnos:
            if draw(st.booleans()):
                grade = draw(st.sampled_from(["0", "1", "2", "3", "-1", "2.5"]))
                qrels_lines.append((qid, docno, grade))
            if draw(st.integers(0, 3)):
                run_lines.append((qid, docno, draw(SCORES)))
    extra = draw(st.sampled_from([[], [], ["x"], ["x", "y"]]))
    rank = draw(st.integers(1, 3))
    qrels_order = draw(st.permutations(qrels_lines))
    # Runs are mostly written ranked, ties in any order; sometimes not ranked at all.
    run_order = draw(st.permutations(run_lines))
    if draw(st.booleans()):
        run_order = sorted(run_order, key=lambda row: (row[0], -float(row[2])))

    def written(rows, columns):
        lines = []
        for row in rows:
            if odd and draw(st.integers(0, 5)) == 0:
                lines.append(draw(st.sampled_from(["# a comment", "", "   ", "#x y z"])))
            lines.append(separator().join(columns(row)))
        return "".join(line + line_end() for line in lines).encode()

    qrels = written(qrels_order, lambda r: [r[0], "0", r[1], r[2]])
    run = written(run_order, lambda r: [r[0], "Q0", r[1], str(rank), r[2], "tag", *extra])
    return qrels, run


def reference_rows(data: bytes, n_columns: int, value_column: int):
    """(line, qid, docno, value) of every content line, read one line at a time."""
    rows = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        fields = line.split()
        if not fields or fields[0].startswith(b"#"):
            continue
        assert len(fields) >= n_columns
        rows.append((number, fields[0], fields[2], float(fields[value_column])))
    return rows


def reference_ranking(qrels: bytes, run: bytes):
    """Per query present in both files: ranked grades (None unjudged) and judged grades."""
    grades: dict = {}
    for _, qid, docno, grade in reference_rows(qrels, 4, 3):
        grades.setdefault(qid, {})[docno] = grade
    hits: dict = {}
    for _, qid, docno, score in reference_rows(run, 6, 4):
        hits.setdefault(qid, []).append((score, docno))
    result = {}
    for qid in sorted(set(grades) & set(hits)):
        ranked = sorted(hits[qid], reverse=True)  # Score, then docno, both descending.
        result[qid.decode()] = (
            [grades[qid].get(docno) for _, docno in ranked],
            sorted(grades[qid].values()),
        )
    return result


def columns_as_rows(columns):
    return list(
        zip(
            columns.lines.tolist(),
            columns.qids.tolist(),
            columns.docnos.tolist(),
            columns.values.tolist(),
            strict=True,
        )
    )


# Generating whole files is slow on a busy machine; that is not what is tested.
SLOW_MACHINE = [HealthCheck.too_slow]
CHUNK_SIZES = pytest.mark.parametrize(
    "chunk_bytes", [1 << 20, 64, 17], ids=["one-chunk", "small-chunks", "tiny-chunks"]
)


@CHUNK_SIZES
@settings(max_examples=150, deadline=None, suppress_health_check=SLOW_MACHINE)
@given(data=files())
def test_the_reader_gives_every_line_the_plain_reading_gives(chunk_bytes, data):
    qrels, run = data

    with mock.patch.object(trec_tokens, "CHUNK_BYTES", chunk_bytes):
        assert columns_as_rows(parse_qrels(qrels)) == reference_rows(qrels, 4, 3)
        assert columns_as_rows(parse_run(run)) == reference_rows(run, 6, 4)


@CHUNK_SIZES
@settings(max_examples=150, deadline=None, suppress_health_check=SLOW_MACHINE)
@given(data=files())
def test_the_ranking_is_the_plain_ranking(chunk_bytes, data):
    qrels, run = data
    expected = reference_ranking(qrels, run)

    # Small chunks come with keys made and compared a few rows at a time.
    with (
        mock.patch.object(trec_tokens, "CHUNK_BYTES", chunk_bytes),
        mock.patch.object(trec_pairs, "KEY_BLOCK", min(chunk_bytes, trec_pairs.KEY_BLOCK) // 8),
    ):
        ranked = rank_queries(parse_qrels(qrels), parse_run(run))

    assert ranked.qids == list(expected)
    for i, qid in enumerate(ranked.qids):
        start, end = ranked.offsets[i], ranked.offsets[i + 1]
        got = [None if math.isnan(g) else g for g in ranked.ranked_grades[start:end].tolist()]
        judged = ranked.judged_grades[ranked.judged_offsets[i] : ranked.judged_offsets[i + 1]]
        assert (got, sorted(judged.tolist())) == expected[qid]


def coarse_hash(words, out):
    """Three hashes in all: most different (query, docno) pairs share one."""
    np.remainder(words[:, 0], np.uint64(3), out=out)
    out <<= np.uint64(62)
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=SLOW_MACHINE)
@given(data=files())
def test_the_ranking_is_the_plain_ranking_when_hashes_collide(data):
    qrels, run = data
    expected = reference_ranking(qrels, run)

    with (
        mock.patch.object(trec_pairs, "_hash", coarse_hash),
        mock.patch.object(trec_pairs, "KEY_BLOCK", 3),
    ):
        ranked = rank_queries(parse_qrels(qrels), parse_run(run))

    assert ranked.qids == list(expected)
    for i, qid in enumerate(ranked.qids):
        start, end = ranked.offsets[i], ranked.offsets[i + 1]
        got = [None if math.isnan(g) else g for g in ranked.ranked_grades[start:end].tolist()]
        assert got == expected[qid][0]


def first_repeat(data: bytes, n_columns: int, value_column: int, qids=None):
    """(line, earlier line, docno, qid) of the first (qid, docno) seen twice, or None."""
    seen = {}
    for line, qid, docno, _ in reference_rows(data, n_columns, value_column):
        if qids is not None and qid not in qids:
            continue
        if (qid, docno) in seen:
            return line, seen[qid, docno], docno.decode(), qid.decode()
        seen[qid, docno] = line
    return None


@settings(max_examples=150, deadline=None, suppress_health_check=SLOW_MACHINE)
@given(data=files(), repeats=st.lists(st.tuples(st.booleans(), st.integers(0, 99)), max_size=3))
@pytest.mark.parametrize("hashed", [trec_pairs._hash, coarse_hash], ids=["hash", "colliding"])
@pytest.mark.parametrize("key_block", [1 << 16, 2], ids=["one-block", "blocks-of-2"])
def test_a_document_listed_twice_is_named_at_its_first_repeat(hashed, key_block, data, repeats):
    qrels, run = data
    # Lines copied to the end of either file: each repeats a (query, docno).
    for in_run, pick in repeats:
        lines = [line for line in (run if in_run else qrels).splitlines() if line.strip()]
        copied = lines[pick % len(lines)] + b"\n" if lines else b"#"
        if not copied.strip().startswith(b"#"):
            run, qrels = (run + b"\n" + copied, qrels) if in_run else (run, qrels + b"\n" + copied)
    judged = {qid for _, qid, _, _ in reference_rows(qrels, 4, 3)}
    # trec_eval checks the run's queries that have judgements, then the qrels.
    repeat = first_repeat(run, 6, 4, judged) or first_repeat(qrels, 4, 3)

    with (
        mock.patch.object(trec_pairs, "_hash", hashed),
        mock.patch.object(trec_pairs, "KEY_BLOCK", key_block),
    ):
        if repeat is None:
            rank_queries(parse_qrels(qrels), parse_run(run))
            return
        with pytest.raises(trec.TrecFormatError) as raised:
            rank_queries(parse_qrels(qrels), parse_run(run))

    line, earlier, docno, qid = repeat
    assert raised.value.line == line
    assert raised.value.problem == (
        f"document {docno} is listed twice for query {qid} (first on line {earlier})"
    )


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(SCORES, st.text(alphabet="0123456789.-+eE", min_size=1, max_size=20)))
# Sixteen digits whose integer is past 2**53: rounding it first would round twice.
@example(text="92050340.66496171")
@example(text="-96440879.28179657")
def test_a_number_parses_to_the_double_python_reads(text):
    try:
        expected = float(text)
    except ValueError:
        expected = None
    line = f"q Q0 d 1 {text} t\n".encode()

    if expected is None or math.isnan(expected):
        with pytest.raises(trec.TrecFormatError):
            parse_run(line)
        return
    value = parse_run(line).values[0]
    assert value == expected
    assert bool(np.signbit(value)) == (math.copysign(1.0, expected) < 0)


NOT_NUMBERS = st.sampled_from(["-", ".", "-.", "+", "1.2.3", "5-", "1-2", "--1", "0x1", "e5"])
FIXED_DECIMALS = st.integers(0, 9).flatmap(
    lambda places: st.lists(
        st.one_of(
            st.decimals(min_value=-(10**9), max_value=10**9, places=places).map(str),
            st.floats(min_value=-1e9, max_value=1e9, allow_nan=False).map(
                lambda x, places=places: f"{x:.{places}f}"
            ),
            SCORES,
            NOT_NUMBERS,
        ),
        min_size=1,
        max_size=40,
    )
)


def as_float(text):
    try:
        return float(text)
    except ValueError:
        return None


@settings(max_examples=400, deadline=None)
@given(scores=FIXED_DECIMALS)
@example(scores=["-"])
@example(scores=["12.5", "."])
def test_a_column_of_numbers_parses_to_the_doubles_python_reads(scores):
    # Files mostly write every score with the same number of decimals, which
    # is read apart from the others; some scores here have other forms.
    lines = [f"q Q0 d{i} {i} {score} t\n" for i, score in enumerate(scores)]
    expected = [as_float(score) for score in scores]

    if None in expected:
        with pytest.raises(trec.TrecFormatError) as raised:
            parse_run("".join(lines).encode())
        bad = expected.index(None)
        assert (raised.value.line, raised.value.problem) == (
            bad + 1,
            f"score {scores[bad]!r} is not a number",
        )
        return
    values = parse_run("".join(lines).encode()).values

    assert values.tolist() == expected
    assert np.signbit(values).tolist() == [math.copysign(1, v) < 0 for v in expected]
