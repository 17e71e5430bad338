"""judgements_queryactivity (judgements/sql/query_activity.sql): each query's newest
human event, kept by the log's triggers, which the freshness rule reads instead of the
log's later events of every project."""

import datetime as dt

import pytest
from django.db import connection
from django.db.models import Max
from django.utils import timezone

from judgements.bulk import project_delete_fast
from judgements.derived import oracles
from judgements.models import Judgement, QueryActivity
from metrics import sources
from tests.factories import DocumentFactory, JudgementFactory, ProjectFactory, QueryFactory
from tests.judgements.test_pair_grades import random_events


def newest(query):
    """The query's newest human event as the table holds it: the largest of its rows."""
    return QueryActivity.objects.filter(query=query).aggregate(newest=Max("newest"))["newest"]


def assert_activity_matches_the_log(project):
    expected = oracles.expected_query_activity(project)
    assert expected, "the project has no human event: nothing was compared"
    assert oracles.stored_query_activity(project) == expected


@pytest.mark.parametrize("seed", [1, 2])
def test_the_table_matches_the_log_after_events_in_any_time_order(project, seed):
    # Half in one bulk statement, half one by one, at random times: an older event
    # recorded later leaves its query's newest as it was.
    random_events(project, seed=seed)
    assert_activity_matches_the_log(project)
    # Each statement deleted the rows its own made redundant: a query keeps one row
    # per event dated earlier than the newest before it (none here is locked by others).
    rows = QueryActivity.objects.filter(project=project).count()
    assert rows < Judgement.objects.filter(query__project=project).count() / 4


def test_a_machine_judges_event_is_no_activity(project, query_with_hits, rater):
    document = query_with_hits.hits.get(rank=1).document
    human = JudgementFactory(rater=rater, query=query_with_hits, document=document, grade=2)
    JudgementFactory(
        rater=rater,
        query=query_with_hits,
        document=document,
        grade=3,
        source=Judgement.Source.MACHINE,
        created_at=human.created_at + dt.timedelta(hours=1),
    )

    assert newest(query_with_hits) == human.created_at
    assert_activity_matches_the_log(project)


def test_deleted_events_are_counted_again_and_an_emptied_query_loses_its_row(project, rater):
    start = timezone.now() - dt.timedelta(days=2)
    kept, emptied = (QueryFactory(project=project, text=text) for text in ("kept", "emptied"))
    documents = [DocumentFactory(project=project, external_id=f"D{n}") for n in range(2)]
    for hours, query, document in ((1, kept, 0), (5, kept, 1), (3, emptied, 0)):
        JudgementFactory(
            rater=rater,
            query=query,
            document=documents[document],
            grade=1,
            created_at=start + dt.timedelta(hours=hours),
        )
    assert newest(kept) == start + dt.timedelta(hours=5)

    # The newest event of "kept" goes with its document; "emptied" loses its only one.
    Judgement.objects.filter(document=documents[1]).delete()
    Judgement.objects.filter(query=emptied).delete()

    assert newest(kept) == start + dt.timedelta(hours=1)
    assert not QueryActivity.objects.filter(query=emptied).exists()
    assert_activity_matches_the_log(project)


def test_a_deleted_project_leaves_no_row(project, rater):
    random_events(project, seed=4, events=40)
    assert QueryActivity.objects.filter(project=project).exists()

    project_delete_fast(project.slug)

    assert not QueryActivity.objects.filter(project_id=project.pk).exists()


def test_the_rule_asks_the_table_not_the_log(project, rater):
    """As of a moment after a project's last event, the packed tables hold its state
    however many later events other projects have; one event of its own after the
    moment, and they do not. Read without the log, so the answer costs one index probe
    whatever the other projects hold."""
    other = ProjectFactory(name="Other", slug="other")
    query, other_query = QueryFactory(project=project), QueryFactory(project=other)
    document, other_document = DocumentFactory(project=project), DocumentFactory(project=other)
    last = JudgementFactory(rater=rater, query=query, document=document, grade=2)
    moment = last.created_at + dt.timedelta(seconds=1)
    for minutes in range(1, 4):
        JudgementFactory(
            rater=rater,
            query=other_query,
            document=other_document,
            grade=1,
            created_at=moment + dt.timedelta(minutes=minutes),
        )

    assert sources.grades_freshness(project.pk, as_of=moment).derived
    assert not sources.grades_freshness(other.pk, as_of=moment).derived
    JudgementFactory(
        rater=rater,
        query=query,
        document=document,
        grade=3,
        created_at=moment + dt.timedelta(minutes=1),
    )
    assert not sources.grades_freshness(project.pk, as_of=moment).derived

    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sources.DERIVED_SQL}", {"project": project.pk, "moment": moment})
        plan = "\n".join(line for (line,) in cursor.fetchall())
    assert "judgements_queryactivity" in plan
    assert "judgements_judgement" not in plan
