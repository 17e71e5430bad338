"""Online metrics worked by hand: every expected number below is derived in a comment.

The definition is SQL (metrics.core.online); these examples run it on DuckDB, in memory.
tests/searchlogs/test_engines.py holds PostgreSQL, DuckDB and Spark to equal numbers.
"""

import math

import duckdb
import numpy as np
import pytest

from metrics.core.online import CLICK, IMPRESSION, online_sql, online_table

NAN, END = math.nan, math.inf
DAY = 86_400
MONDAY = 20_000 * DAY  # 2024-10-04 00:00 UTC, day 20000


def impression(session, at, query, answered=False):
    return (session, MONDAY + at, IMPRESSION, query, answered, -1, NAN)


def click(session, at, document, dwell=NAN):
    return (session, MONDAY + at, CLICK, None, False, document, dwell)


def online_metrics(rows, *, by=("day",), success_dwell=10.0):
    """The SQL definition over ``rows`` (session, seconds, kind, query, answered,
    document, dwell: inf for the end-of-session marker, nan for none), on DuckDB."""
    sql = online_sql("SELECT * FROM ev", dialect="duckdb", by=by, success_dwell=success_dwell)
    connection = duckdb.connect()
    connection.execute(
        "CREATE TABLE ev (sid BIGINT, ts BIGINT, kind INTEGER, qkey BIGINT, answered BOOLEAN,"
        " doc BIGINT, dwell DOUBLE, ended BOOLEAN, tiebreak VARCHAR)"
    )
    values = [
        (session, round(seconds * 1e6), kind, query, answered, document,
         None if math.isnan(dwell) or math.isinf(dwell) else dwell, math.isinf(dwell), str(i))
        for i, (session, seconds, kind, query, answered, document, dwell) in enumerate(rows)
    ]  # fmt: skip
    if values:
        connection.executemany("INSERT INTO ev VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", values)
    return online_table(connection.execute(sql).fetchall(), by=by, success_dwell=success_dwell)


def session_outcome(rows, **options):
    """The figures of a log of one session, on its one day."""
    table = online_metrics(rows, **options)
    assert len(table) == 1 and table.sessions[0] == 1
    return table


# Session 1: a short click, a second query, then a long click.
SHORT_THEN_LONG = [
    impression(1, 0, 7),
    click(1, 5, 100, dwell=3),
    impression(1, 20, 8),
    click(1, 30, 200, dwell=45),
]
# Session 2: the results page answered the query; no click (zero-click success).
ANSWERED = [impression(2, 100, 7, answered=True)]
# Session 3: two queries, no click, then nothing (abandoned).
ABANDONED = [impression(3, 200, 9), impression(3, 230, 9)]


def events(*rows):
    return [row for group in rows for row in group]


def test_a_short_click_then_a_long_click_succeeds_at_the_long_click():
    outcome = session_outcome(events(SHORT_THEN_LONG))

    # The 3 s click is below 10 s; the 45 s click at t=30 is the first success:
    # 30 - 0 = 30 seconds, on the second query.
    assert outcome.successful_sessions.tolist() == [1]
    assert outcome.zero_click_successes.tolist() == [0]
    assert outcome.seconds_to_success.tolist() == [30.0]
    assert outcome.queries_to_success.tolist() == [2.0]
    assert outcome.queries_per_session.tolist() == [2.0]


def test_a_higher_threshold_makes_the_same_session_unsuccessful():
    outcome = session_outcome(events(SHORT_THEN_LONG), success_dwell=60)

    assert outcome.successful_sessions.tolist() == [0]
    assert np.isnan(outcome.seconds_to_success).all()


def test_an_answered_page_is_a_zero_click_success_at_once():
    outcome = session_outcome(events(ANSWERED))

    assert outcome.successful_sessions.tolist() == [1]
    assert outcome.zero_click_successes.tolist() == [1]
    assert outcome.seconds_to_success.tolist() == [0.0]
    assert outcome.queries_to_success.tolist() == [1.0]


def test_an_abandoned_session_is_not_successful():
    outcome = session_outcome(events(ABANDONED))

    assert outcome.successful_sessions.tolist() == [0]
    assert outcome.queries_per_session.tolist() == [2.0]


def test_the_three_sessions_of_one_day():
    table = online_metrics(events(SHORT_THEN_LONG, ANSWERED, ABANDONED))

    assert table.day.tolist() == [20_000]
    assert table.query is None
    # 2 + 1 + 2 impressions; two clicks, both in session 1: CTR 2/5.
    assert (table.impressions[0], table.clicks[0]) == (5, 2)
    assert table.ctr[0] == pytest.approx(0.4)
    # Sessions 1 and 2 succeed, 3 does not: 2/3; one of them without a click.
    assert (table.sessions[0], table.successful_sessions[0]) == (3, 2)
    assert table.success_rate[0] == pytest.approx(2 / 3)
    assert table.zero_click_successes[0] == 1
    # Time to success: (30 + 0) / 2 seconds, (2 + 1) / 2 queries.
    assert table.seconds_to_success[0] == pytest.approx(15.0)
    assert table.queries_to_success[0] == pytest.approx(1.5)
    # Queries per session: (2 + 1 + 2) / 3.
    assert table.queries_per_session[0] == pytest.approx(5 / 3)


def test_per_query_pages_count_under_their_query_and_sessions_under_their_first():
    table = online_metrics(events(SHORT_THEN_LONG, ANSWERED, ABANDONED), by=("query",))

    assert table.day is None
    assert table.query.tolist() == [7, 8, 9]
    # Query 7: the first page of session 1 (its short click) and session 2's page.
    # Query 8: session 1's second page and its long click. Query 9: session 3.
    assert table.impressions.tolist() == [2, 1, 2]
    assert table.clicks.tolist() == [1, 1, 0]
    # Sessions 1 and 2 began with query 7 and both succeeded; session 3 with 9.
    assert table.sessions.tolist() == [2, 0, 1]
    assert table.successful_sessions.tolist() == [2, 0, 0]
    assert table.seconds_to_success[0] == pytest.approx(15.0)
    assert np.isnan(table.success_rate[1]) and table.success_rate[2] == 0.0


def test_by_day_and_query():
    tuesday = [impression(4, DAY + 10, 7), click(4, DAY + 12, 300, dwell=END)]
    table = online_metrics(events(SHORT_THEN_LONG, ANSWERED, tuesday), by=("day", "query"))

    assert list(zip(table.day.tolist(), table.query.tolist(), strict=True)) == [
        (20_000, 7),
        (20_000, 8),
        (20_001, 7),
    ]
    assert table.sessions.tolist() == [2, 0, 1]
    # The end-of-session marker: the searcher never came back, a success.
    assert table.successful_sessions.tolist() == [2, 0, 1]


def test_a_session_spanning_midnight_belongs_to_the_day_it_began():
    late = [impression(5, DAY - 10, 7), click(5, DAY + 20, 100, dwell=30)]
    table = online_metrics(events(late))

    assert table.day.tolist() == [20_000]
    assert (table.impressions[0], table.clicks[0], table.successful_sessions[0]) == (1, 1, 1)
    assert table.seconds_to_success[0] == 30.0


def test_clicks_without_an_impression_count_only_as_orphans():
    # Session 6 has a click before its first page; session 7 has nothing but a click.
    rows = [click(6, 0, 100, dwell=60), impression(6, 10, 7), click(7, 50, 100, dwell=60)]
    table = online_metrics(rows)

    assert table.orphan_clicks.tolist() == [2]
    assert (table.clicks[0], table.impressions[0]) == (0, 1)
    assert (table.sessions[0], table.successful_sessions[0]) == (1, 0)


def test_duplicate_clicks_count_once_but_a_later_long_one_still_succeeds():
    rows = [
        impression(8, 0, 7),
        click(8, 2, 100, dwell=1),
        click(8, 3, 100, dwell=25),
        click(8, 40, 200, dwell=2),
    ]
    table = online_metrics(rows)

    # Documents 100 (twice) and 200 on one page: two clicks.
    assert table.clicks.tolist() == [2]
    assert table.successful_sessions.tolist() == [1]
    assert table.seconds_to_success.tolist() == [3.0]


def test_the_same_document_on_a_new_page_is_a_new_click():
    rows = [impression(9, 0, 7), click(9, 1, 100), impression(9, 5, 7), click(9, 6, 100)]

    assert online_metrics(rows).clicks.tolist() == [2]


def test_a_click_without_dwell_is_not_a_success():
    rows = [impression(10, 0, 7), click(10, 1, 100, dwell=NAN)]

    assert session_outcome(rows).successful_sessions.tolist() == [0]


def test_an_impression_and_a_click_in_the_same_second_are_page_then_click():
    rows = [click(11, 0, 100, dwell=20), impression(11, 0, 7)]
    table = online_metrics(rows)

    assert (table.clicks[0], table.orphan_clicks[0], table.successful_sessions[0]) == (1, 0, 1)


def test_the_order_of_the_input_does_not_matter():
    rows = [row for group in (SHORT_THEN_LONG, ANSWERED, ABANDONED) for row in group]
    shuffled = [rows[i] for i in np.random.default_rng(3).permutation(len(rows))]
    ordered, mixed = online_metrics(events(rows)), online_metrics(events(shuffled))

    for name in ("impressions", "clicks", "sessions", "successful_sessions"):
        assert getattr(ordered, name).tolist() == getattr(mixed, name).tolist()
    assert ordered.seconds_to_success.tolist() == mixed.seconds_to_success.tolist()


def test_an_empty_log_gives_an_empty_table():
    table = online_metrics([], by=("day", "query"))

    assert len(table) == 0 and table.ctr.tolist() == []


@pytest.mark.parametrize("dwell", [-1.0, math.nan, math.inf])
def test_a_threshold_must_be_a_finite_number_of_seconds(dwell):
    with pytest.raises(ValueError, match="success_dwell"):
        online_metrics(events(ANSWERED), success_dwell=dwell)


def test_grouping_by_something_else_is_refused():
    with pytest.raises(ValueError, match="by must name"):
        online_metrics(events(ANSWERED), by=("week",))
