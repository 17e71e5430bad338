"""search_log_ingest: all or nothing per batch, idempotent by event id, queries matched."""

from datetime import UTC, datetime, timedelta

import pytest

from judgements.importers import ImportRejected
from searchlogs.models import SearchEvent
from searchlogs.services import search_log_ingest
from tests.searchlogs.conftest import WORKED_LOG, click, dwell, impression, jsonl


def ingest(project, *events, raw: bytes = b""):
    return search_log_ingest(project=project, upload=[raw or jsonl(*events)])


def rejected(project, payload: bytes) -> list[tuple]:
    with pytest.raises(ImportRejected) as caught:
        search_log_ingest(project=project, upload=[payload])
    return [(error.line, error.field) for error in caught.value.errors]


def test_it_stores_every_event_and_matches_queries_by_normalised_text(queries):
    project = queries["tent"].project
    result = ingest(project, *WORKED_LOG)

    assert (result.rows, result.created, result.already_stored) == (9, 9, 0)
    assert result.kinds == {"impression": 5, "click": 2, "dwell": 2}
    matched = dict(SearchEvent.objects.filter(kind=0).values_list("event_id", "query_id"))
    tent, pegs = queries["tent"].pk, queries["tent pegs"].pk
    assert matched == {"e1": tent, "e4": pegs, "e7": tent, "e8": None, "e9": None}
    assert (result.unmatched, result.unmatched_texts) == (2, [("sleeping bag", 2)])


def test_it_keeps_what_each_event_says(queries):
    ingest(queries["tent"].project, *WORKED_LOG)

    page = SearchEvent.objects.get(event_id="e7")
    assert (page.query_text, page.query_key, page.answered) == ("TENT", "tent", True)
    assert page.documents == ["SKU-1", "SKU-2"]
    second = SearchEvent.objects.get(event_id="e5")
    assert (second.session_id, second.document, second.rank) == ("s1", "SKU-2", 2)
    assert SearchEvent.objects.get(event_id="e6").dwell_seconds == 45.0


def test_sending_a_batch_again_changes_nothing(queries):
    project = queries["tent"].project
    ingest(project, *WORKED_LOG)
    before = list(SearchEvent.objects.order_by("event_id").values())

    again = ingest(project, *WORKED_LOG)

    assert (again.created, again.already_stored) == (0, 9)
    assert list(SearchEvent.objects.order_by("event_id").values()) == before


def test_the_first_version_of_an_event_wins(queries):
    project = queries["tent"].project
    ingest(project, impression("e1", "s1", "2026-11-20T10:00:00Z", "tent"))

    result = ingest(project, impression("e1", "s1", "2026-11-20T10:00:00Z", "tent pegs"))

    assert result.created == 0
    assert SearchEvent.objects.get().query_text == "tent"


def test_the_same_event_id_in_another_project_is_another_event(queries, project):
    from tests.factories import ProjectFactory

    other = ProjectFactory(slug="other")
    ingest(project, impression("e1", "s1", "2026-11-20T10:00:00Z", "tent"))

    assert ingest(other, impression("e1", "s1", "2026-11-20T10:00:00Z", "tent")).created == 1


def test_every_bad_line_is_reported_by_number_and_nothing_is_written(queries):
    project = queries["tent"].project
    lines = [
        jsonl(impression("e1", "s1", "2026-11-20T10:00:00Z", "tent")),  # 1: fine
        b'{"type": "click", "id": "e2",\n',  # 2: not JSON
        jsonl({"type": "click", "id": "e3", "time": "2026-11-20T10:00:01Z", "document": "A",
               "rank": 1}),  # 3: no session
        jsonl(impression("e4", "s1", "2026-11-20 10:00", "tent")),  # 4: time without zone
        jsonl(impression("e5", "s1", "yesterday", "tent")),  # 5: not a time
        jsonl({"type": "scroll", "id": "e6", "session": "s1"}),  # 6: unknown type
        jsonl(click("e7", "s9", "2026-11-20T10:00:01Z", "A")),  # 7: no page in s9
        jsonl(click("e8", "s1", "2026-11-20T09:00:00Z", "A")),  # 8: before s1's page
        jsonl(dwell("e9", "s1", "2026-11-20T10:00:09Z", "nope", seconds=4)),  # 9: unknown click
        jsonl(impression("e1", "s2", "2026-11-20T10:00:00Z", "tent")),  # 10: id repeats line 1
        jsonl(click("e11", "s1", "2026-11-20T10:00:02Z", "A", rank=0)),  # 11: rank 0
        jsonl(dwell("e12", "s1", "2026-11-20T10:00:09Z", "e11", seconds=-1)),  # 12: negative
    ]  # fmt: skip

    errors = rejected(project, b"".join(lines))

    assert errors == [
        (2, None), (3, "session"), (4, "time"), (5, "time"), (6, "type"), (7, "session"),
        (8, "session"), (9, "click"), (10, "id"), (11, "rank"), (12, "seconds"),
    ]  # fmt: skip
    assert SearchEvent.objects.count() == 0


def test_a_dwell_too_long_for_a_double_is_an_error_not_a_500(queries):
    project = queries["tent"].project
    lines = [
        jsonl(impression("e1", "s1", "2026-11-20T10:00:00Z", "tent")),
        jsonl(click("e2", "s1", "2026-11-20T10:00:01Z", "A")),
        jsonl(dwell("e3", "s1", "2026-11-20T10:00:09Z", "e2", seconds=10**400)),
    ]

    assert rejected(project, b"".join(lines)) == [(3, "seconds")]
    assert SearchEvent.objects.count() == 0


def test_an_error_names_what_is_wrong(queries):
    project = queries["tent"].project
    with pytest.raises(ImportRejected) as caught:
        ingest(project, impression("e4", "s1", "2026-11-20 10:00", "tent"))

    assert str(caught.value.errors[0]) == (
        'line 1, column time: "2026-11-20 10:00" needs a time zone (for example Z or +00:00).'
    )


def test_a_rejected_batch_leaves_earlier_batches_alone(queries):
    project = queries["tent"].project
    ingest(project, *WORKED_LOG)

    rejected(project, jsonl(impression("x1", "s5", "2026-11-21T10:00:00Z", "tent"), {"id": 1}))

    assert SearchEvent.objects.count() == len(WORKED_LOG)


def test_a_click_may_follow_a_page_stored_in_an_earlier_batch(queries):
    project = queries["tent"].project
    ingest(project, impression("e1", "s1", "2026-11-20T10:00:00Z", "tent"))
    ingest(project, click("e2", "s1", "2026-11-20T10:00:05Z", "SKU-1"))

    result = ingest(project, dwell("e3", "s1", "2026-11-20T10:00:30Z", "e2", end=True))

    assert result.created == 1
    assert SearchEvent.objects.get(event_id="e3").end_of_session is True


def test_a_dwell_must_belong_to_its_clicks_session_and_come_after_it(queries):
    project = queries["tent"].project
    ingest(project, impression("e1", "s1", "2026-11-20T10:00:00Z", "tent"))
    ingest(project, click("e2", "s1", "2026-11-20T10:00:05Z", "SKU-1"))

    errors = rejected(
        project,
        jsonl(
            dwell("e3", "s2", "2026-11-20T10:00:30Z", "e2", seconds=3),
            dwell("e4", "s1", "2026-11-20T10:00:01Z", "e2", seconds=3),
            dwell("e5", "s1", "2026-11-20T10:00:09Z", "e2", seconds=3) | {"end_of_session": True},
        ),
    )

    assert errors == [(1, "click"), (2, "time"), (3, "seconds")]


def test_an_empty_batch_is_refused(queries):
    assert rejected(queries["tent"].project, b"\n\n") == [(None, None)]


def test_texts_with_tabs_backslashes_and_quotes_are_stored_as_sent(queries):
    project = queries["tent"].project
    text, document = 'tent\\pegs\t"2 person"', 'SKU\\"\u20287'

    ingest(
        project,
        impression("e1", "s\t1", "2026-11-20T10:00:00Z", text, results=[document]),
        click("e2", "s\t1", "2026-11-20T10:00:01Z", document),
    )

    page, chosen = SearchEvent.objects.order_by("event_id")
    assert (page.query_text, page.query_key, page.session_id) == (
        text, 'tent\\pegs "2 person"', "s\t1",
    )  # fmt: skip
    assert page.documents == [document] and chosen.document == document


def test_events_dated_in_the_future_are_refused_by_line_and_nothing_is_written(queries):
    project = queries["tent"].project
    in_an_hour = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    lines = [
        impression("e1", "s1", "2026-11-20T10:00:00Z", "tent"),
        impression("e2", "s1", "9999-01-01T00:00:00Z", "tent"),
        click("e3", "s1", in_an_hour, "SKU-1"),
    ]

    errors = rejected(project, jsonl(*lines))

    assert errors == [(2, "time"), (3, "time")]
    assert SearchEvent.objects.count() == 0


def test_an_event_a_little_ahead_of_the_servers_clock_is_stored(queries):
    project = queries["tent"].project
    in_a_minute = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()

    result = ingest(project, impression("e1", "s1", in_a_minute, "tent"))

    assert result.created == 1


def test_a_bad_line_at_the_end_of_a_large_batch_refuses_it_all_by_its_number(queries):
    project = queries["tent"].project
    pages = (impression(f"e{n}", f"s{n // 3}", "2026-11-20T10:00:00Z", "tent")
             for n in range(99_999))  # fmt: skip
    last = impression("e-last", "s1", "2026-11-20 10:00", "tent")  # no zone

    errors = rejected(project, jsonl(*pages, last))

    assert errors == [(100_000, "time")]
    assert SearchEvent.objects.count() == 0


def test_an_event_id_used_twice_in_a_batch_is_an_error_naming_both_lines(queries):
    project = queries["tent"].project
    lines = jsonl(
        impression("e1", "s1", "2026-11-20T10:00:00Z", "tent"),
        click("e2", "s1", "2026-11-20T10:00:05Z", "SKU-1"),
        impression("e1", "s2", "2026-11-20T11:00:00Z", "tent"),
    )
    with pytest.raises(ImportRejected) as caught:
        search_log_ingest(project=project, upload=[lines])

    assert [str(error) for error in caught.value.errors] == [
        "line 3, column id: This event id repeats line 1."
    ]
    assert SearchEvent.objects.count() == 0


def test_texts_in_any_script_are_stored_as_sent_and_matched_by_normalised_text(queries):
    project = queries["tent"].project
    text, session, document = "\uff34\uff25\uff2e\uff34", "s\u00e9ance-\U0001f3d5", "SKU-\u00e9"

    ingest(
        project,
        impression("e1", session, "2026-11-20T10:00:00Z", text, results=[document, "\u4e00"]),
        click("e2", session, "2026-11-20T10:00:01Z", document),
    )

    page, chosen = SearchEvent.objects.order_by("event_id")
    assert (page.query_text, page.query_id, page.session_id) == (text, queries["tent"].pk,
                                                                  session)  # fmt: skip
    assert page.documents == [document, "\u4e00"] and chosen.document == document


def test_a_missing_field_is_an_error_naming_it(queries):
    project = queries["tent"].project
    page = impression("e1", "s1", "2026-11-20T10:00:00Z", "tent")
    lines = [
        page,
        {key: value for key, value in page.items() if key != "query"} | {"id": "e2"},
        {key: value for key, value in click("e3", "s1", "2026-11-20T10:00:01Z", "A").items()
         if key != "rank"},
        {"type": "dwell", "id": "e4", "session": "s1", "time": "2026-11-20T10:00:09Z",
         "click": "e3"},
        {key: value for key, value in page.items() if key != "session"} | {"id": "e5"},
    ]  # fmt: skip

    assert rejected(project, jsonl(*lines)) == [(2, "query"), (3, "rank"), (4, "seconds"),
                                                (5, "session")]  # fmt: skip
    assert SearchEvent.objects.count() == 0


def test_a_lone_surrogate_is_an_error_naming_its_line_not_a_500(queries):
    project = queries["tent"].project
    lines = jsonl(
        impression("e1", "s1", "2026-11-20T10:00:00Z", "tent"),
        impression("e2", "s1", "2026-11-20T10:00:01Z", "te\ud800nt"),
    )

    assert rejected(project, lines) == [(2, None)]


def test_a_batch_partly_stored_adds_its_new_events_and_raises_the_version_once(queries):
    from searchlogs.selectors import log_version

    project = queries["tent"].project
    ingest(project, *WORKED_LOG[:4])

    result = ingest(project, *WORKED_LOG)

    assert (result.created, result.already_stored) == (5, 4)
    assert SearchEvent.objects.count() == 9 and log_version(project) == 2


def test_an_event_of_the_year_1_keeps_its_microseconds(queries):
    project = queries["tent"].project
    times = ["0001-01-01T00:00:00.000001+00:00", "2026-11-20T10:00:00.123457-03:30"]

    ingest(project, *(impression(f"e{n}", "s", time, "q") for n, time in enumerate(times)))

    stored = SearchEvent.objects.order_by("event_id").values_list("at", flat=True)
    assert list(stored) == [datetime.fromisoformat(time) for time in times]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_batches_of_a_project_sent_at_once_store_each_event_once():
    import threading

    from django.db import connection

    from tests.factories import ProjectFactory

    project = ProjectFactory(slug="busy")
    stored = impression("e-old", "s-old", "2026-11-20T09:00:00Z", "q")
    search_log_ingest(project=project, upload=[jsonl(stored)])
    pages = [impression(f"e{n}", f"s{n}", "2026-11-20T10:00:00Z", "q") for n in range(5000)]
    # The first batch holds an event already stored: it is written through the
    # staging table, which must not miss the other batch's events.
    barrier, results, errors = threading.Barrier(2), [], []

    def send(events):
        try:
            barrier.wait(timeout=30)
            results.append(search_log_ingest(project=project, upload=[jsonl(*events)]))
        except Exception as error:  # Collected so the main thread can report it.
            errors.append(repr(error))
        finally:
            connection.close()

    batches = ([stored, *pages], pages)
    threads = [threading.Thread(target=send, args=(events,)) for events in batches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert errors == []
    assert sorted(result.created for result in results) == [0, 5000]
    assert SearchEvent.objects.filter(project=project).count() == 5001


def test_an_upload_that_breaks_off_while_being_stored_leaves_nothing(queries):
    project = queries["tent"].project
    pages = (impression(f"e{n}", "s1", "2026-11-20T10:00:00Z", "tent") for n in range(12_000))

    def upload():
        yield jsonl(*pages)  # Blocks of it are COPY'd before the next chunk is asked for.
        raise OSError("Connection reset by peer")

    with pytest.raises(OSError):
        search_log_ingest(project=project, upload=upload())

    assert SearchEvent.objects.count() == 0
    assert ingest(project, *WORKED_LOG).created == len(WORKED_LOG)
