"""Relevance drift: revisions of a query's answers and the project's revisions per week.

Ann grades one pair four times over two weeks, Ben once; Cai retracts and grades again.
Only Ann's changed answers are revisions.
"""

import datetime as dt

import pytest

from judgements.models import Judgement
from metrics import history, refresh
from metrics.models import RevisionCount, StaleQuery
from metrics.revisions import (
    project_revisions_per_week,
    query_revisions,
    revisions_per_week,
    revisions_recount,
)
from tests.factories import DocumentFactory, JudgementFactory, QueryFactory, UserFactory

MONDAY = dt.datetime(2026, 11, 9, 9, 0, tzinfo=dt.UTC)  # 2026-11-09 is a Monday


@pytest.fixture
def tent(db):
    query = QueryFactory(text="tent")
    tent_a = DocumentFactory(project=query.project, external_id="TENT-A", title="Tent A")
    ann, ben, cai = (UserFactory(username=name, roles=["rater"]) for name in ("ann", "ben", "cai"))

    def answer(rater, days, grade, kind=Judgement.Kind.GRADE, note=""):
        JudgementFactory(
            query=query,
            document=tent_a,
            rater=rater,
            kind=kind,
            grade=grade,
            note=note,
            created_at=MONDAY + dt.timedelta(days=days),
        )

    answer(ann, 0, 2)  # first answer: not a revision
    answer(ben, 1, 3)  # another rater's first answer: not a revision
    answer(ann, 2, 1, note="Re-read the description.")  # 2 -> 1: a revision (week 1)
    answer(ann, 3, 1)  # the same grade again: not a revision
    answer(ann, 8, None, kind=Judgement.Kind.CANT_TELL)  # 1 -> can't tell (week 2)
    answer(cai, 8, 0)
    answer(cai, 8.5, None, kind=Judgement.Kind.RETRACT)
    answer(cai, 9, 2)  # after a retraction nothing stood: not a revision
    return query


def test_the_query_lists_each_revision_newest_first_with_who_and_how(tent):
    revisions = query_revisions(tent.pk, as_of=None)

    assert [(r.rater, r.before, r.after, r.direction) for r in revisions] == [
        ("ann", 1, None, ""),
        ("ann", 2, 1, "down"),
    ]
    assert revisions[1].created_at == MONDAY + dt.timedelta(days=2)
    assert revisions[1].note == "Re-read the description."
    assert revisions[1].document_id == "TENT-A"


def test_revisions_are_read_as_of_a_moment(tent):
    before_the_second = MONDAY + dt.timedelta(days=5)

    assert len(query_revisions(tent.pk, as_of=before_the_second)) == 1
    assert query_revisions(tent.pk, as_of=MONDAY) == []


def test_the_project_counts_revisions_per_utc_week_from_monday(tent):
    revisions_recount(query_ids=[tent.pk])

    assert revisions_per_week(tent.project_id, as_of=None) == [
        (dt.date(2026, 11, 9), 1),
        (dt.date(2026, 11, 16), 1),
    ]
    assert revisions_per_week(tent.project_id, as_of=MONDAY + dt.timedelta(days=5)) == [
        (dt.date(2026, 11, 9), 1)
    ]


@pytest.mark.parametrize("days", [0, 2, 2 + 1 / 96, 2.5, 8, 8 + 1 / 48, 30])
def test_the_counts_add_up_to_what_the_log_says_at_any_moment(tent, days):
    # Counted hours, the moment's own hour from the log: the same as reading every event.
    revisions_recount(query_ids=[tent.pk])
    moment = MONDAY + dt.timedelta(days=days)

    assert revisions_per_week(tent.project_id, as_of=moment) == project_revisions_per_week(
        tent.project_id, as_of=moment
    )


def test_a_query_marked_stale_is_counted_from_the_log_until_its_refresh(tent):
    revisions_recount(query_ids=[tent.pk])
    ann = tent.judgements.filter(rater__username="ann").first().rater
    JudgementFactory(
        query=tent,
        document=tent.judgements.first().document,
        rater=ann,
        grade=3,
        created_at=MONDAY + dt.timedelta(days=9),
    )
    StaleQuery.objects.create(query=tent, project=tent.project)

    assert revisions_per_week(tent.project_id, as_of=None) == [
        (dt.date(2026, 11, 9), 1),
        (dt.date(2026, 11, 16), 2),
    ]
    refresh.metrics_refresh(project=tent.project)
    assert not StaleQuery.objects.exists()
    hour = MONDAY + dt.timedelta(days=9)
    assert RevisionCount.objects.get(query=tent, hour=hour).revisions == 1
    assert revisions_per_week(tent.project_id, as_of=None) == [
        (dt.date(2026, 11, 9), 1),
        (dt.date(2026, 11, 16), 2),
    ]


def test_a_rebuild_recounts_every_query_of_the_project(tent):
    history.metrics_rebuild(project=tent.project, since=MONDAY, until=MONDAY, every="day")

    counted = RevisionCount.objects.filter(query=tent).order_by("hour")
    assert [(row.hour, row.revisions) for row in counted] == [
        (MONDAY + dt.timedelta(days=2), 1),
        (MONDAY + dt.timedelta(days=8), 1),
    ]


def test_another_projects_revisions_are_not_counted(tent):
    revisions_recount(query_ids=[tent.pk])
    other = QueryFactory(text="stove")
    assert revisions_per_week(other.project_id, as_of=None) == []
