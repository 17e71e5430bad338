"""searchlogs.parsing: the plain-line fast path gives exactly the field-by-field answer."""

from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgements.importers.json_reading import SURROGATE
from judgements.importers.rows import LineError
from searchlogs.parsing import CLOCK_SKEW, _plain_event, event_row, search_log_jsonl
from tests.searchlogs.conftest import click, dwell, impression, jsonl

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
LATEST = NOW + CLOCK_SKEW

# Values near every edge the checks draw: blanks to strip, NUL, lengths at the
# limits, numbers of the wrong type, bools where numbers go, huge and negative ones.
TEXT = st.one_of(
    st.text(max_size=5),
    st.sampled_from(["", " ", " a", "a ", "a\x00", "\u00e9t\u00e9", "x" * 200, "x" * 201]),
    st.integers(-3, 3),
    st.floats(allow_nan=True),
    st.none(),
    st.booleans(),
    st.lists(st.text(max_size=2), max_size=2),
)
TIME = st.one_of(
    st.sampled_from(
        [
            "2026-11-20T10:00:00Z",
            "2026-11-20T10:00:00+02:00",
            "2026-11-20 10:00",
            " 2026-11-20T10:00:00Z",
            "2026-11-25T12:04:59Z",
            "2026-11-25T12:05:00Z",
            "2026-11-25T12:05:01Z",
            "9999-12-31T23:59:59+00:00",
            "0001-01-01T00:00:00+01:00",
            "2026-11-20T10:00:00+23:59",
            "",
            "yesterday",
        ]
    ),
    st.integers(),
    st.none(),
)
NUMBER = st.one_of(
    st.integers(-2, 5),
    st.sampled_from([2**31 - 1, 2**31, 2**53, 2**53 + 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    TEXT,
)


@st.composite
def events(draw):
    event = {
        "type": draw(st.sampled_from(["impression", "click", "dwell", "scroll", 3, None])),
        "id": draw(TEXT),
        "session": draw(TEXT),
        "time": draw(TIME),
    }
    optional = {
        "query": TEXT,
        "results": st.one_of(st.lists(TEXT, max_size=3), TEXT),
        "answered": st.one_of(st.booleans(), NUMBER),
        "document": TEXT,
        "rank": NUMBER,
        "click": TEXT,
        "seconds": NUMBER,
        "end_of_session": st.one_of(st.booleans(), NUMBER),
    }
    for name, values in optional.items():
        if draw(st.booleans()):
            event[name] = draw(values)
    return event


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(events())
def test_a_plain_line_reads_as_the_field_by_field_checks_read_it(event):
    fast = _plain_event(7, event, LATEST)

    checked = list(event_row(7, event, LATEST))

    if fast is not None:
        assert checked == [fast]
        assert [type(value) for value in checked[0]] == [type(value) for value in fast]


def test_the_fast_path_takes_the_usual_lines():
    for event in (
        impression("e1", "s1", "2026-11-20T10:00:00Z", "tent"),
        click("e2", "s1", "2026-11-20T10:00:05Z", "SKU-1", rank=2),
        dwell("e3", "s1", "2026-11-20T10:00:09Z", "e2", seconds=4),
        dwell("e4", "s1", "2026-11-20T10:00:09Z", "e2", end=True),
    ):
        assert _plain_event(1, event, LATEST) is not None, event


def test_a_time_later_than_now_plus_the_skew_is_an_error_naming_the_line():
    just_in = (NOW + CLOCK_SKEW).isoformat()
    too_late = (NOW + CLOCK_SKEW + timedelta(seconds=1)).isoformat()
    lines = jsonl(impression("e1", "s1", just_in, "tent"), impression("e2", "s1", too_late, "x"))

    rows = list(search_log_jsonl([lines], now=NOW))

    assert rows[0].event_id == "e1"
    assert isinstance(rows[1], LineError)
    assert (rows[1].line, rows[1].field) == (2, "time")
    assert "in the future" in rows[1].message


def test_a_lone_surrogate_is_an_error_naming_the_line_not_a_value_postgresql_refuses():
    lines = jsonl(impression("e1", "s1", "2026-11-20T10:00:00Z", "te\ud800nt"))
    assert b"\\ud800" in lines

    [row] = search_log_jsonl([lines], now=NOW)

    assert row == LineError(1, None, SURROGATE)
