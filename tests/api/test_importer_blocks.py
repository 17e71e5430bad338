"""Quepid CSV and qrels read a block of lines at once give what they give line by line.

``quepid_csv`` (``qrels``) reads a block of lines whose every line is a known query's
grade of a known document (or an unrated line) with a few calls for the whole block,
and yields one JudgementBlock for it; a block with any other line is read line by
line. These tests hold the two readings to the same rows, errors and skips, for files
that mix good and bad lines over blocks of any size.
"""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgements.importers import (
    JudgementBlock,
    JudgementRow,
    LineError,
    Skip,
    Vocabulary,
    one_by_one,
    qrels,
    quepid_csv,
)

QUERIES = {"tent": 1, "boots": 2, "-sale": 3, "=sum": 4, "@home": 5, "two words": 6}
QUERIES |= {'say "hi"': 7, "a,b": 8, "zürich": 9, "+plus": 10, "tent\nsale": 11}
DOCUMENTS = {"SKU-1": 10, "SKU-2": 11, "SKU-3": 12, "-D1": 13, "D,4": 14, 'D"5': 15}


QIDS = {"1": 1, "2": 2, "q3": 3, "#4": 4, "\u0663": 5}


def vocabulary(*, create_missing=False) -> Vocabulary:
    return Vocabulary(
        grades=frozenset({0, 1, 2, 3}),
        queries=dict(QUERIES),
        qids=dict(QIDS),
        documents=dict(DOCUMENTS),
        create_missing=create_missing,
    )


def read(data: bytes, chunk: int, *, blocks: bool, create_missing=False, parser=quepid_csv):
    chunks = [data[start : start + chunk] for start in range(0, len(data), chunk)]
    return list(parser(chunks, vocabulary(create_missing=create_missing), blocks=blocks))


def outcome(items: list) -> tuple[list, list, list, list]:
    """Errors, rows, skips and the rest, each in file order: what an import keeps of a
    parser's items (a block's Skips come before its rows, which nothing can tell)."""
    items = list(one_by_one(items))
    return (
        [item for item in items if isinstance(item, LineError)],
        [item for item in items if isinstance(item, JudgementRow)],
        [item for item in items if isinstance(item, Skip)],
        [item for item in items if not isinstance(item, LineError | JudgementRow | Skip)],
    )


def blocks_of(items: list) -> list[JudgementBlock]:
    return [item for item in items if isinstance(item, JudgementBlock)]


# Cells near every rule: Quepid's space and the app's ' before a formula character,
# quotes, commas and line ends inside cells, blanks, unknown names, missing-value
# markers, grades that are not whole numbers on the scale or not in ASCII digits.
QUERY_CELLS = [*QUERIES, " -sale", "'-sale", "'=sum", "'@home", "''=sum", "' tent", "'plain"]
QUERY_CELLS += ["hat", "", " ", "nan", "tent\nsale", "tent\r", " tent "]
DOCUMENT_CELLS = [*DOCUMENTS, "'-D1", "'SKU-1", " SKU-1", "SKU-9", "", " ", "S K", "\tSKU-2"]
RATING_CELLS = ["0", "1", "2", "3", " 2 ", "'3", "'-1", "", " ", "4", "-1", "1.0", "1.5"]
RATING_CELLS += ["x", "NaN", "inf", "\u0663", "\uff13", "1e0", "0x1"]
ODD_LINES = ["", "tent", "tent,,", "tent,SKU-1", "tent,SKU-1,3,more", 'tent,"SKU-1,3']
ODD_LINES += ["tent,SKU\r-1,3", "tent,SKU-1,3\r", '"tent",SKU-1,"3"x', 'te"nt,SKU-2,1']
GOOD_LINES = [f"{query},{docid},{grade}" for query in ("tent", "boots", "two words")
              for docid in ("SKU-1", "SKU-2", "SKU-3") for grade in "0123"]  # fmt: skip


def csv_cell(value: str, quoted: bool) -> str:
    if quoted or any(character in value for character in ',"\n\r'):
        return '"' + value.replace('"', '""') + '"'
    return value


@st.composite
def any_line(draw) -> str:
    cells = [
        draw(st.sampled_from(QUERY_CELLS)),
        draw(st.sampled_from(DOCUMENT_CELLS)),
        draw(st.sampled_from(RATING_CELLS)),
    ]
    return ",".join(csv_cell(cell, draw(st.booleans())) for cell in cells)


# Mostly good lines, so that most files have blocks of good lines around the bad ones.
LINES = st.one_of(
    st.sampled_from(GOOD_LINES),
    st.sampled_from(GOOD_LINES),
    st.sampled_from(GOOD_LINES),
    any_line(),
    st.sampled_from(ODD_LINES),
)


@st.composite
def quepid_files(draw) -> bytes:
    header = draw(
        st.sampled_from(["query,docid,rating", " Query ,DocID,RATING", "docid,rating,query"])
    )
    lines = draw(st.lists(LINES, min_size=0, max_size=60))
    if header.startswith("docid"):  # Move the query column last where that is simple.
        lines = [",".join([*line.split(",")[1:], line.split(",")[0]]) if '"' not in line
                 and line.count(",") == 2 else line for line in lines]  # fmt: skip
    end = draw(st.sampled_from(["\n", "\r\n"]))
    text = end.join([header, *lines]) + draw(st.sampled_from([end, ""]))
    data = draw(st.sampled_from([b"", b"\xef\xbb\xbf"])) + text.encode()
    if draw(st.booleans()) and draw(st.booleans()):  # a byte that is not UTF-8, or NUL
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from([b"\xe9", b"\x00"])) + data[at:]
    return data


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    quepid_files(),
    st.sampled_from([1, 5, 40, 200, 1 << 20]),
    st.booleans(),
)
def test_blocks_give_the_rows_errors_and_skips_of_line_by_line_reading(data, chunk, create):
    fast = read(data, chunk, blocks=True, create_missing=create)
    slow = read(data, chunk, blocks=False, create_missing=create)
    assert not blocks_of(slow)
    assert outcome(fast) == outcome(slow)


def many_lines(count: int, end: str = "\n") -> list[str]:
    """Good lines with no pair twice: three queries by three documents of each hundred."""
    queries = ("tent", "boots", "two words")
    return [f"{queries[n % 3]},SKU-{n // 9}{n // 3 % 3 + 1},{n % 4}{end}" for n in range(count)]


DOCUMENTS |= {f"SKU-{hundred}{one}": 1000 + hundred * 10 + one
              for hundred in range(200) for one in (1, 2, 3)}  # fmt: skip
HEADER = "query,docid,rating\n"


def good_file(*, lines: int = 1000, end: str = "\n", **replaced: str) -> str:
    """A file of good lines, some replaced: ``line_600="..."`` is the 600th line."""
    body = many_lines(lines, end)
    for name, text in replaced.items():
        body[int(name.removeprefix("line_")) - 2] = text + end
    return HEADER.replace("\n", end) + "".join(body)


# (what, file, chunk size): blocks of good lines and, but in the first, a bad line.
FILES = [
    ("1,000 good lines", good_file(), 1000),
    ("with Windows line ends", good_file(end="\r\n"), 512),
    ("unrated lines among good ones", good_file(line_300="boots,,", line_700="tent,SKU-1,"), 700),
    ("a line with a lone query", good_file(line_600="boots"), 700),
    ("a blank line", good_file(line_600=""), 700),
    ("a pair repeated blocks later", good_file(line_900="tent,SKU-11,2"), 4096),
    ("an unknown document", good_file(line_600="tent,SKU-99999,0"), 4096),
    ("an unknown query", good_file(line_600="hat,SKU-1,0"), 4096),
    ("a grade off the scale", good_file(line_600="tent,SKU-1,7"), 4096),
    ("NaN for a grade", good_file(line_600="tent,SKU-1,NaN"), 4096),
    ("Arabic-Indic digits", good_file(line_600="tent,SKU-1,\u0663"), 4096),
    ("a space in a document id", good_file(line_600="tent,SKU 1,0"), 4096),
    ("cells the app's export guarded", good_file(line_600="'-sale,'-D1,'3"), 4096),
    ("Quepid's guard", good_file(line_600=" -sale,-D1,3"), 4096),
    ("a quoted comma", good_file(line_600='"a,b",SKU-1,0'), 4096),
    ("a quoted line end, line by line", good_file(line_600='"tent\nsale",SKU-1,0'), 1),
    ("a quoted line end across blocks", good_file(line_600='"tent\nsale",SKU-1,0'), 13),
    ("a quote left open", good_file(line_900='boots,"SKU-1,0'), 4096),
    ("a quote left open on the last line", good_file() + 'tent,"SKU-1,3\n', 4096),
    ("a carriage return in a cell", good_file(line_600="tent,SKU\r-1,0"), 4096),
    ("four columns", good_file(line_600="tent,SKU-1,0,x"), 4096),
    ("a byte that is not UTF-8", good_file(line_600="tent,SKU-\udce9,0"), 4096),
    ("a NUL character", good_file(line_600="tent,SKU-\x001,0"), 4096),
]


@pytest.mark.parametrize(
    ("text", "chunk"), [case[1:] for case in FILES], ids=[c[0] for c in FILES]
)
def test_a_file_of_good_blocks_and_bad_lines_reads_the_same_both_ways(text, chunk):
    data = text.encode("utf-8", "surrogateescape")
    fast = read(data, chunk, blocks=True)
    slow = read(data, chunk, blocks=False)
    assert outcome(fast) == outcome(slow)
    # Most lines went in blocks, so the comparison above held the fast reading.
    assert sum(map(len, blocks_of(fast))) > 600


def test_with_create_missing_a_document_id_with_a_space_is_refused_in_a_block_of_good_lines():
    data = good_file(line_600="tent,SKU 1,0", line_700="tent,SKU-new,1").encode()
    fast = read(data, 4096, blocks=True, create_missing=True)
    assert outcome(fast) == outcome(read(data, 4096, blocks=False, create_missing=True))
    assert outcome(fast)[0] == [
        LineError(600, "docid", "'SKU 1' contains whitespace; ids cannot.")
    ]
    assert JudgementRow(700, 1, None, 1, document_key="SKU-new") in outcome(fast)[1]


def test_a_block_holds_each_line_grade_with_its_number():
    text = "query,docid,rating\r\n'-sale,SKU-1,3\r\n -sale,SKU-2,\r\n'=sum,'-D1,0\r\n"
    items = read(text.encode(), 1 << 20, blocks=True)
    assert items == [Skip(3, "unrated (no grade)"), items[1]]
    assert list(items[1].rows()) == [JudgementRow(2, 3, 10, 3), JudgementRow(4, 4, 13, 0)]


def test_a_line_in_error_sends_its_block_line_by_line_and_the_others_stay_blocks():
    data = good_file(lines=300, line_152="tent,SKU-1,x").encode()
    items = read(data, 1024, blocks=True)
    errors, rows, _, _ = outcome(items)
    assert errors[0] == LineError(152, "rating", '"x" is not a number (digits 0-9 only).')
    assert len(rows) == 299
    assert 0 < sum(map(len, blocks_of(items))) < 299


# qrels: fields apart by any whitespace str.split knows, comments, blank lines.
QRELS_LINES = [f"{qid} 0 {docid} {grade}" for qid in ("1", "2", "q3")
               for docid in ("SKU-1", "SKU-2", "SKU-3") for grade in "0123"]  # fmt: skip
SEPARATORS = [" ", "\t", "  ", " \t", "\xa0", "\u2003", "\x0b", "\x1c", "\x85"]


@st.composite
def any_qrels_line(draw) -> str:
    fields = [
        draw(st.sampled_from([*QIDS, "9", "#", "#c", ""])),
        draw(st.sampled_from(["0", "Q0", ""])),
        draw(st.sampled_from([*DOCUMENTS, "SKU-9", "#D", ""])),
        draw(st.sampled_from(RATING_CELLS)),
        draw(st.sampled_from(["", "", "more"])),
    ]
    line = "".join(field + draw(st.sampled_from(SEPARATORS)) for field in fields)
    return (
        draw(st.sampled_from(["", " ", "\t"]))
        + line.rstrip(" ")
        + draw(st.sampled_from(["", " ", "\r"]))
    )


QRELS = st.one_of(
    st.sampled_from(QRELS_LINES),
    st.sampled_from(QRELS_LINES),
    st.sampled_from(QRELS_LINES),
    st.sampled_from(["", "   ", "# a comment", "# 1 0 SKU-1 1", "1\t0\tSKU-2\t3"]),
    any_qrels_line(),
)


@st.composite
def qrels_files(draw) -> bytes:
    lines = draw(st.lists(QRELS, min_size=0, max_size=60))
    end = draw(st.sampled_from(["\n", "\r\n"]))
    data = (end.join(lines) + draw(st.sampled_from([end, ""]))).encode()
    if draw(st.booleans()) and draw(st.booleans()):
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from([b"\xe9", b"\x00"])) + data[at:]
    return data


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrels_files(), st.sampled_from([1, 5, 40, 200, 1 << 20]), st.booleans())
def test_qrels_blocks_give_the_rows_errors_and_skips_of_line_by_line_reading(data, chunk, create):
    fast = read(data, chunk, blocks=True, create_missing=create, parser=qrels)
    slow = read(data, chunk, blocks=False, create_missing=create, parser=qrels)
    assert not blocks_of(slow)
    assert outcome(fast) == outcome(slow)


def qrels_file(*, end: str = "\n", separator: str = " ", **replaced: str) -> str:
    """900 good qrels lines, some replaced: ``line_600="..."`` is the 600th line."""
    body = [separator.join(line.split(",")) for line in many_lines(900)]
    body = [line.replace("tent", "1").replace("boots", "2").replace("two words", "q3")
            .replace(separator, separator + "0" + separator, 1) for line in body]  # fmt: skip
    for name, text in replaced.items():
        body[int(name.removeprefix("line_")) - 1] = text + "\n"
    return "".join(body).replace("\n", end)


QRELS_FILES = [
    ("900 good lines", qrels_file(), 4096),
    ("tabs and Windows line ends", qrels_file(separator="\t", end="\r\n"), 4096),
    ("two spaces apart", qrels_file(separator="  "), 4096),
    ("blank lines and comments", qrels_file(line_300="", line_600="# 1 0 SKU-1 1"), 700),
    ("a line of three columns", qrels_file(line_600="1 0 SKU-1"), 4096),
    ("an unknown qid", qrels_file(line_600="9 0 SKU-1 1"), 4096),
    ("an unknown document", qrels_file(line_600="1 0 SKU-99 1"), 4096),
    ("a grade off the scale", qrels_file(line_600="1 0 SKU-1 7"), 4096),
    ("a pair repeated blocks later", qrels_file(line_800="1 0 SKU-01 3"), 4096),
    ("a non-breaking space between fields", qrels_file(line_600="1 0 SKU-1\xa02"), 4096),
]


@pytest.mark.parametrize(
    ("text", "chunk"), [case[1:] for case in QRELS_FILES], ids=[c[0] for c in QRELS_FILES]
)
def test_a_qrels_file_of_good_blocks_and_bad_lines_reads_the_same_both_ways(text, chunk):
    fast = read(text.encode(), chunk, blocks=True, parser=qrels)
    slow = read(text.encode(), chunk, blocks=False, parser=qrels)
    assert outcome(fast) == outcome(slow)
    assert sum(map(len, blocks_of(fast))) > 500
