"""The online figures read from PostgreSQL equal the worked example computed by hand."""

import datetime

import pytest

from searchlogs.dashboards import online_for_query, online_metrics_of, online_overview
from searchlogs.models import SearchLogSettings
from searchlogs.services import search_log_ingest
from tests.searchlogs.conftest import WORKED_LOG, click, dwell, impression, jsonl

FRIDAY = datetime.date(2026, 11, 20)


@pytest.fixture
def logged(queries):
    search_log_ingest(project=queries["tent"].project, upload=[jsonl(*WORKED_LOG)])
    return queries


def test_the_overview_shows_the_worked_day(logged):
    panel = online_overview(logged["tent"].project)

    (row,) = panel.rows
    assert row.day == FRIDAY
    # 5 pages, 2 clicks; s1 (long click) and s2 (answered) of 3 sessions succeed;
    # time to success (30 s + 0 s) / 2 and (2 + 1) / 2 queries; (2 + 1 + 2) / 3 queries.
    assert (row.impressions, row.clicks, row.ctr) == (5, 2, 0.4)
    assert (row.sessions, row.successful_sessions, row.zero_click_successes) == (3, 2, 1)
    assert row.success_rate == pytest.approx(2 / 3, abs=1e-6)
    assert (row.seconds_to_success, row.queries_to_success) == (15.0, 1.5)
    assert row.queries_per_session == pytest.approx(5 / 3, abs=1e-6)
    assert (panel.unmatched, panel.unmatched_texts) == (2, [("sleeping bag", 2)])
    assert panel.success_dwell == 10.0


def test_the_threshold_comes_from_the_project_or_the_call(logged):
    project = logged["tent"].project
    SearchLogSettings.objects.create(project=project, success_dwell=60)
    project.refresh_from_db()

    # Only s2's answered page succeeds now.
    assert online_overview(project).rows[0].successful_sessions == 1
    (row,), dwell_used = online_metrics_of(project, success_dwell=2)
    # At 2 s even s1's first (3 s) click succeeds: after 5 s, on the first query.
    assert (row.successful_sessions, row.seconds_to_success, dwell_used) == (2, 2.5, 2)


def test_a_query_shows_its_own_pages_and_the_sessions_it_began(logged):
    tent = online_for_query(logged["tent"].project, logged["tent"])
    pegs = online_for_query(logged["tent"].project, logged["tent pegs"])

    # "tent": s1's first page (short click) and s2's page; s1 and s2 began with it.
    assert [(r.impressions, r.clicks, r.sessions, r.successful_sessions) for r in tent.rows] == [
        (2, 1, 2, 2)
    ]
    # "tent pegs": s1's second page and its long click; no session began with it.
    assert [(r.impressions, r.clicks, r.sessions, r.success_rate) for r in pegs.rows] == [
        (1, 1, 0, None)
    ]


def test_the_longest_dwell_and_the_end_marker_count(queries):
    project = queries["tent"].project
    log = [
        impression("a1", "s1", "2026-11-21T23:59:50Z", "tent"),
        click("a2", "s1", "2026-11-22T00:00:10Z", "SKU-1"),
        dwell("a3", "s1", "2026-11-22T00:00:12Z", "a2", seconds=2),
        dwell("a4", "s1", "2026-11-22T00:00:40Z", "a2", end=True),
    ]
    search_log_ingest(project=project, upload=[jsonl(*log)])

    (row,) = online_overview(project).rows
    # The session began on the 21st; the end marker makes its click a success at 20 s.
    assert row.day == datetime.date(2026, 11, 21)
    assert (row.successful_sessions, row.seconds_to_success) == (1, 20.0)


def test_a_project_without_a_log_has_no_rows(queries):
    panel = online_overview(queries["tent"].project)

    assert (panel.rows, panel.unmatched, panel.chart["days"]) == ([], 0, [])


def test_a_new_batch_is_seen_at_once_though_figures_are_cached(logged):
    project = logged["tent"].project
    assert online_overview(project).rows[0].impressions == 5

    later = [
        impression("n1", "s9", "2026-11-20T13:00:00Z", "tent"),
        impression("n2", "s9", "2026-11-20T13:00:09Z", "sleeping bag"),
    ]
    search_log_ingest(project=project, upload=[jsonl(*later)])

    panel = online_overview(project)
    assert (panel.rows[0].impressions, panel.unmatched) == (7, 3)


def test_a_batch_that_stores_nothing_keeps_the_version(logged):
    from searchlogs.selectors import log_version

    project = logged["tent"].project
    before = log_version(project)
    search_log_ingest(project=project, upload=[jsonl(*WORKED_LOG)])

    assert before == 1 and log_version(project) == before
