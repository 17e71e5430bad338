"""searchlogs.columns: a log read a block at a time gives the reference parser's answer."""

import json
from datetime import UTC, datetime, timedelta
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgements.importers.json_reading import SURROGATE
from judgements.importers.rows import LineError
from searchlogs import columns
from searchlogs.columns import EPOCH, search_log_columns
from searchlogs.parsing import EventRow, search_log_jsonl
from tests.searchlogs.conftest import click, dwell, impression, jsonl
from tests.searchlogs.test_parsing import NOW, events

# Lines the JSON of an event cannot show: blank, broken, not an object, nested too
# deep, numbers orjson reads otherwise than the json module (past 64 bits, NaN), a
# lone surrogate, bytes that are not UTF-8.
ODD = [
    b"",
    b"   ",
    b'{"type": "click",',
    b"[1, 2]",
    b"null",
    b'{"a": ' * 70 + b"1" + b"}" * 70,
    b'{"type": "click", "id": "c", "session": "s", "time": "2026-11-20T10:00:00Z",'
    b' "document": "D", "rank": 18446744073709551617}',
    b'{"type": "dwell", "id": "d", "session": "s", "time": "2026-11-20T10:00:00Z",'
    b' "click": "c", "seconds": 100000000000000000000000000001}',
    b'{"type": "dwell", "id": "d", "session": "s", "time": "2026-11-20T10:00:00Z",'
    b' "click": "c", "seconds": NaN}',
    b'{"type": "dwell", "id": "d", "session": "s", "time": "2026-11-20T10:00:00Z",'
    b' "click": "c", "seconds": 1e400}',
    b'{"type": "impression", "id": 12345678901234567890123, "session": "s",'
    b' "time": "2026-11-20T10:00:00Z", "query": "q"}',
    b'{"type": "impression", "id": "i", "session": "s\\ud800",'
    b' "time": "2026-11-20T10:00:00Z", "query": "q"}',
    b'{"type": "impression", "id": "\xff", "session": "s", "query": "q"}',
    b'{"type": "impression", "id": "i", "session": "s", "time": "2026-11-20T10:00:00Z",'
    b' "query": "caf\\u00e9 \xf0\x9f\x8f\x95", "results": ["\\u00e9", "\\"x\\""]}',
]
LINES = st.one_of(events().map(lambda event: json.dumps(event).encode()), st.sampled_from(ODD))


def both(lines: list[bytes], block: int = 3) -> tuple[list, list]:
    """The reference's rows and errors, and the columns' (blocks of ``block`` lines)."""
    upload = b"".join(line + b"\n" for line in lines)
    reference = list(search_log_jsonl([upload], now=NOW))
    with mock.patch.object(columns, "BLOCK_LINES", block):
        read = list(search_log_columns([upload[:7], upload[7:]], now=NOW))
    rows = sorted((row for events, _ in read for row in rows_of(events)), key=lambda r: r.line)
    errors = [error for _, found in read for error in found]
    return reference, [*rows, *errors]


def rows_of(events) -> list[EventRow]:
    return [row_of(events, i) for i in range(len(events))]


def row_of(events, i: int) -> EventRow:
    dwell, rank = float(events.dwell[i]), int(events.rank[i])
    return EventRow(
        line=int(events.line[i]),
        event_id=events.event_id[i],
        kind=int(events.kind[i]),
        session=events.session[i],
        at=EPOCH + timedelta(microseconds=int(events.at[i])),
        query_text=events.query_text[i],
        documents=tuple(events.documents[i]),
        answered=bool(events.answered[i]),
        document=events.document[i],
        rank=rank or None,
        click=events.click[i],
        dwell=None if np.isnan(dwell) else dwell,
        end_of_session=bool(events.end_of_session[i]),
    )


def same(reference: list, found: list) -> bool:
    """Whether ``found`` holds the reference's rows, then its errors, each in line order."""
    rows = [item for item in reference if isinstance(item, EventRow)]
    errors = [item for item in reference if isinstance(item, LineError)]
    return found == [*rows, *errors]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(LINES, max_size=12))
def test_a_log_reads_as_the_reference_reads_it_line_by_line(lines):
    reference, found = both(lines)

    assert same(reference, found)


def test_every_odd_line_reads_as_the_reference_reads_it():
    reference, found = both(ODD, block=4)

    assert same(reference, found)
    # The numbers past 64 bits are read as the json module reads them.
    assert [row.line for row in reference if isinstance(row, EventRow)] == [8, 11, 14]


def test_an_empty_file_is_one_error():
    reference, found = both([b"", b" "])

    assert found == reference == [LineError(None, None, "The file is empty.")]


def test_a_lone_surrogate_is_refused_with_its_line():
    line = jsonl(impression("e1", "s1", "2026-11-20T10:00:00Z", "te\ud800nt")).strip()

    reference, found = both([line, line])

    assert found == reference == [LineError(1, None, SURROGATE), LineError(2, None, SURROGATE)]


def test_the_plain_lines_of_a_large_block_take_the_fast_path_and_the_rest_the_reference():
    lines = [
        jsonl(impression("e1", "s1", "2026-11-20T10:00:00Z", "tent")),
        jsonl(click("e2", "s1", "2026-11-20T10:00:05Z", "SKU-1")),
        jsonl(dwell("e3", "s1", "2026-11-20T10:00:09Z", "e2", seconds=4)),
        jsonl(dwell("e4", "s1", "2026-11-20T10:00:09Z", "e2", end=True)),
        jsonl(impression(" e5", "s1", "2026-11-20T10:00:00Z", "tent")),  # to strip
    ]
    with mock.patch.object(columns, "line_events", wraps=columns.line_events) as reference:
        [(events, errors)] = search_log_columns([b"".join(lines)], now=NOW)

    assert [call.args[0] for call in reference.call_args_list] == [5]
    assert sorted(events.event_id) == ["e1", "e2", "e3", "e4", "e5"] and errors == []


def test_times_keep_every_microsecond_from_the_year_1_on():
    times = ["0001-01-01T00:00:00+00:00", "2026-11-20T10:00:00.123457-03:30",
             "1969-12-31T23:59:59.999999Z"]  # fmt: skip
    upload = jsonl(*(impression(f"e{n}", "s", time, "q") for n, time in enumerate(times)))

    [(events, _)] = search_log_columns([upload], now=NOW)

    expected = [datetime.fromisoformat(time).astimezone(UTC) for time in times]
    assert [EPOCH + timedelta(microseconds=int(at)) for at in events.at] == expected
