"""manage.py derived_state: every derived table against its recomputation from the log."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from judgements.derived import oracles
from judgements.models import Project
from judgements.packed import packed_fill
from metrics.models import StaleQuery
from tests.factories import ProjectFactory, QueryFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    call_command("load_demo", stdout=StringIO())
    return Project.objects.get(slug="outdoor-gear")


def run(*args) -> tuple[int, str]:
    output = StringIO()
    try:
        call_command("derived_state", *args, stdout=output)
    except SystemExit as exit:
        return exit.code, output.getvalue()
    return 0, output.getvalue()


def corrupt(*statements: str) -> None:
    # Every packed row filled first: rows waiting for their fill are not compared.
    packed_fill()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL judgements.defer_derived = on")
        for statement in statements:
            cursor.execute(statement)
        cursor.execute("SET LOCAL judgements.defer_derived = off")


def test_the_demo_is_clean(demo):
    status, output = run("--check")
    assert status == 0
    assert "outdoor-gear: every derived table matches" in output


@pytest.mark.parametrize(
    ("statement", "table"),
    [
        ("UPDATE judgements_pairgrade SET grades = array_append(grades, 3::smallint) WHERE id = "
         "(SELECT min(id) FROM judgements_pairgrade WHERE graded > 0)", "judgements_pairgrade"),
        ("DELETE FROM judgements_querygrades WHERE query_id = "
         "(SELECT min(query_id) FROM judgements_querygrades WHERE judged > 0)",
         "judgements_querygrades"),
        # A summary that names another project: its project's guard would not see it stale.
        ("UPDATE judgements_querygrades SET project_id = project_id + 1000 WHERE query_id = "
         "(SELECT min(query_id) FROM judgements_querygrades)", "judgements_querygrades"),
        # A stale mark of one of its queries that names another project: its refresh
        # would not take it, and its pages would read the stored series as current.
        ("INSERT INTO metrics_stalequery (query_id, project_id, marked_at) "
         "SELECT min(id), min(project_id) + 1000, now() FROM judgements_query",
         "metrics_stalequery"),
        ("UPDATE judgements_rankedhits SET hits = hits + 1 WHERE id = "
         "(SELECT min(id) FROM judgements_rankedhits)", "judgements_rankedhits"),
        ("UPDATE judgements_rankedgrades SET ideal = '' WHERE id = "
         "(SELECT min(id) FROM judgements_rankedgrades WHERE ideal <> '')",
         "judgements_rankedgrades"),
        # A query's newest event a second later than the log's: the freshness rule would
        # send the reads of that second to the log.
        ("UPDATE judgements_queryactivity SET newest = newest + interval '1 second' "
         "WHERE query_id = (SELECT min(query_id) FROM judgements_queryactivity)",
         "judgements_queryactivity"),
        ("UPDATE judgements_queuepair SET answered = '{}' WHERE id = "
         "(SELECT min(id) FROM judgements_queuepair WHERE answered <> '{}')",
         "judgements_queuepair"),
        ("UPDATE judgements_queuepooltally SET open_pairs = open_pairs + 1",
         "judgements_queuepooltally"),
        ("DELETE FROM judgements_queueratertally WHERE id = "
         "(SELECT min(id) FROM judgements_queueratertally)", "judgements_queueratertally"),
        ("DELETE FROM metrics_latestmetricpoint WHERE id = "
         "(SELECT min(id) FROM metrics_latestmetricpoint)", "metrics_latestmetricpoint"),
        ("UPDATE metrics_revisioncount SET revisions = revisions + 1 WHERE id = "
         "(SELECT min(id) FROM metrics_revisioncount)", "metrics_revisioncount"),
        # The last span of a query (its pair's highest grade) gets a grade nobody gave.
        ("UPDATE judgements_querylog SET grades = overlay(grades PLACING '\\x0009'::bytea "
         "FROM length(grades) - 1 FOR 2) WHERE query_id = "
         "(SELECT min(query_id) FROM judgements_querylog WHERE grades <> '')",
         "judgements_querylog"),
    ],
)  # fmt: skip
def test_a_wrong_row_is_reported_with_its_table_and_key_and_rebuild_repairs_it(
    demo, statement, table
):
    corrupt(statement)

    status, output = run("--check", "--project", "outdoor-gear")

    assert status == 1
    assert f"outdoor-gear: {table} (" in output
    assert "stored" in output and "recomputed" in output
    assert f"rows differ: {table} 1" in output

    status, output = run("--rebuild", "--project", "outdoor-gear")
    assert status == 0, output
    assert "every derived table matches" in output
    assert list(oracles.differences(demo)) == []


def test_a_missing_pool_row_shows_as_missing_and_the_tallies_follow(demo):
    corrupt(
        "DELETE FROM judgements_queuepair WHERE id = (SELECT min(id) FROM judgements_queuepair)"
    )
    differences = list(oracles.differences(demo))
    missing = [d for d in differences if d.table == "judgements_queuepair"]
    assert len(missing) == 1 and missing[0].stored is None and missing[0].expected is not None


def test_a_mark_that_names_the_project_for_another_projects_query_is_repaired(demo):
    other = QueryFactory(project=ProjectFactory(slug="other")).pk
    corrupt(
        "INSERT INTO metrics_stalequery (query_id, project_id, marked_at)"
        f" VALUES ({other}, {demo.pk}, now())"
    )

    status, output = run("--check", "--project", "outdoor-gear")
    assert status == 1 and "rows differ: metrics_stalequery 1" in output

    status, output = run("--rebuild", "--project", "outdoor-gear")
    assert status == 0, output
    assert StaleQuery.objects.get(pk=other).project.slug == "other"


def test_an_unknown_project_is_a_command_error(demo):
    from django.core.management import CommandError

    with pytest.raises(CommandError, match='no project with the slug "nope"'):
        call_command("derived_state", check=True, project="nope", stdout=StringIO())


def test_floats_compare_bit_for_bit():
    assert oracles.bits(0.0) != oracles.bits(-0.0)
    assert oracles.bits(1.5) == oracles.bits(1.5)
    assert oracles.bits(float("nan")) is None


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_hundred_raters_grading_at_once_leave_every_derived_table_exact(settings):
    """100 raters, each a thread with its own connection (at most 45 at once: the test
    server allows 100 connections), take pairs from the queue and answer them (grades,
    can't tell, a revision, a retraction) while the triggers keep the derived tables."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection as thread_connection

    from judgements.models import Judgement
    from judgements.queue import queue_next_pair
    from judgements.services import PairComplete, judgement_submit
    from tests.factories import UserFactory
    from tests.judgements.test_queue_concurrency import project_with_pairs

    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    project = project_with_pairs(queries=20, hits_per_query=10, judges_per_pair=3)
    raters = [UserFactory(username=f"crowd{n:03d}", roles=["rater"]) for n in range(100)]
    refused = []

    def answer(rater, pair, kind, grade):
        judgement_submit(
            rater=rater,
            project=project,
            query=pair.query,
            document=pair.document,
            kind=kind,
            grade=grade,
            source=Judgement.Source.API,
            deduplicate=False,
        )

    def work(number: int) -> None:
        rater = raters[number]
        try:
            answered = []
            for round_number in range(4):
                pair = queue_next_pair(rater=rater, project=project)
                if pair is None:
                    break
                kind = "cant_tell" if (number + round_number) % 7 == 0 else "grade"
                try:
                    answer(rater, pair, kind, None if kind == "cant_tell" else number % 4)
                    answered.append((pair, kind))
                except PairComplete:
                    refused.append(rater.username)
            graded = [pair for pair, kind in answered if kind == "grade"]
            # A revision of a grade. (A can't tell changed to a grade may take the slot of
            # a rater holding the pair's lease, who is then rightly refused.)
            if graded and number % 3 == 0:
                answer(rater, graded[0], "grade", (number + 1) % 4)
            if answered and number % 5 == 0:
                answer(rater, answered[-1][0], "retract", None)
        finally:
            thread_connection.close()

    with ThreadPoolExecutor(max_workers=45) as pool:
        list(pool.map(work, range(100)))

    assert refused == []
    assert Judgement.objects.filter(query__project=project).count() > 300
    status, output = run("--check", "--project", "load")
    assert status == 0, output
