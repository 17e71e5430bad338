"""The packed log (judgements_querylog): past moments replayed from each query's spans,
kept by the log's triggers, always the log's own replay, whoever writes the log and
whenever; its readers write nothing."""

import datetime as dt

import pytest
from django.utils import timezone

from judgements import query_log
from judgements.derived import oracles
from judgements.derived.oracles.log_spans import expected_log_spans, stored_log_spans
from judgements.models import Judgement, QueryLog
from metrics import log_replay, selectors
from metrics.core.consensus import POLICIES
from tests.factories import JudgementFactory, ProjectFactory, UserFactory
from tests.judgements.test_pair_grades import random_events
from tests.metrics.test_selectors import assert_same, orm_pair_grades


def moments(project) -> list[dt.datetime]:
    """Before the first event, at a dozen events' times (ties included), after the last."""
    times = sorted(
        set(Judgement.objects.filter(query__project=project).values_list("created_at", flat=True))
    )
    return [times[0] - dt.timedelta(seconds=1), *times[:: max(1, len(times) // 12)], times[-1]]


def assert_the_logs_grades(project, moment, policy="mean"):
    arguments = {"as_of": moment, "policy": policy}
    assert_same(
        selectors.logged_pair_grades(project.pk, **arguments),
        orm_pair_grades(project, **arguments),
    )


def assert_kept(project):
    """The rows hold what the oracle recomputes from the log."""
    assert stored_log_spans(project) == expected_log_spans(project)


@pytest.mark.parametrize("policy", POLICIES)
def test_the_spans_give_the_logs_grades_at_every_moment(project, policy):
    random_events(project, seed=31)
    random_events(project, seed=32, raters=3)
    some = sorted(project.queries.values_list("pk", flat=True))[::2]

    found = query_log.spans(project.pk)
    some_found = query_log.spans(project.pk, query_ids=some)

    assert 0 < len(some_found.keys) < len(found.keys)
    assert_kept(project)
    for moment in moments(project):
        assert_same(
            log_replay.spans_pair_grades(found, moment, policy),
            orm_pair_grades(project, as_of=moment, policy=policy),
        )
        assert_same(
            log_replay.spans_pair_grades(some_found, moment, policy),
            orm_pair_grades(project, as_of=moment, policy=policy, query_ids=some),
        )


def test_a_new_event_is_in_its_querys_row_at_once(project):
    random_events(project, seed=33)
    pair = Judgement.objects.filter(query__project=project, kind="grade").first()
    before = bytes(QueryLog.objects.get(query=pair.query).keys)
    rater = UserFactory(username="late", roles=["rater"])
    # A grade now, and one dated in the past (imports keep their time stamps).
    JudgementFactory(rater=rater, query=pair.query, document=pair.document, grade=3)
    JudgementFactory(
        rater=rater, query=pair.query, document=pair.document, grade=0, created_at=pair.created_at
    )

    assert bytes(QueryLog.objects.get(query=pair.query).keys) != before
    assert_kept(project)
    for moment in [*moments(project), timezone.now()]:
        assert_the_logs_grades(project, moment)


def test_removed_events_leave_their_querys_row(project):
    random_events(project, seed=34)
    query = project.queries.order_by("pk").first()

    Judgement.objects.filter(query=query).delete()

    assert bytes(QueryLog.objects.get(query=query).keys) == b""
    assert_kept(project)
    for moment in moments(project):
        assert_the_logs_grades(project, moment, "median")


def test_machine_judges_events_change_nothing(project):
    random_events(project, seed=35)
    pair = Judgement.objects.filter(query__project=project).first()
    before = bytes(QueryLog.objects.get(query=pair.query).keys)

    JudgementFactory(
        rater=UserFactory(username="bot"),
        query=pair.query,
        document=pair.document,
        grade=3,
        source="machine",
    )

    assert bytes(QueryLog.objects.get(query=pair.query).keys) == before
    assert_the_logs_grades(project, timezone.now())


def test_projects_read_their_own_events(db):
    first = ProjectFactory(name="First", slug="first")
    second = ProjectFactory(name="Second", slug="second")
    random_events(first, seed=36)
    random_events(second, seed=37)

    for project in (first, second):
        assert_kept(project)
        assert not [d for d in oracles.differences(project) if d.table == "judgements_querylog"]
        for moment in moments(project):
            assert_the_logs_grades(project, moment, "quepid")
