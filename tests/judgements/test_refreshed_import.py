"""Large imports with their pairs refreshed once, set-based (judgements.derived.pairs)
instead of by the triggers: the same derived tables, also while raters grade."""

import datetime as dt
import inspect
import re
import threading
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from judgements import imports, jobs
from judgements.derived import oracles, pairs
from judgements.models import Job, Judgement, PairGrade, QueuePair, QueueRequest, ResultList
from judgements.services import judgement_submit
from tests.factories import HitFactory, UserFactory
from tests.judgements.test_jobs import run_watching
from tests.judgements.test_queue_concurrency import project_with_pairs


def graded(project, rater, query, document, kind="grade", value=None, source="api"):
    judgement_submit(
        rater=rater,
        project=project,
        query=query,
        document=document,
        kind=kind,
        grade=value,
        source=source,
        deduplicate=False,
    )


def quepid(project, rows) -> bytes:
    lines = ["query,docid,rating"]
    lines += [f"{query.text},{document.external_id},{grade}" for query, document, grade in rows]
    return ("\n".join(lines) + "\n").encode()


def imported(project, content: bytes):
    return imports.judgement_import(
        project=project, upload=[content], file_format="quepid", uploaded_by=None
    )


def refreshed_queries(captured) -> list[str]:
    """The statements of the set-based refresh, either way (both lock the pairs' rows)."""
    return [query["sql"] for query in captured if "refresh_locked" in query["sql"]]


def recounted(captured) -> bool:
    """Whether the refresh counted the pairs again from the log."""
    return any("rebuild_answers" in query["sql"] for query in captured)


def replaced(captured) -> bool:
    """Whether the refresh replaced the import rater's grade in each pair's old ones."""
    return any("unnest(locked.grades, locked.raters)" in query["sql"] for query in captured)


def graded_later_by_the_import_rater(project, query, document) -> None:
    """An event of the project's import rater on the pair, dated an hour from now: it
    stays that rater's current answer after an import dated now."""
    Judgement.objects.create(
        query=query,
        document=document,
        rater=imports.import_rater(project),
        grade=0,
        source=Judgement.Source.IMPORT,
        created_at=timezone.now() + dt.timedelta(hours=1),
    )


@pytest.fixture
def project(db):
    """4 queries x 6 hits, pool depth 4 (so ranks 5 and 6 are outside the pool), two
    judges per pair, with raters' grades, a can't tell, a revision, a machine judge's
    grade and an analyst's request for more grades on one pair below the pool."""
    project = project_with_pairs(queries=4, hits_per_query=6, judges_per_pair=2)
    project.pool_depth = 4
    project.save(update_fields=["pool_depth"])
    hits = list(ResultList.objects.get(project=project).hits.order_by("query_id", "rank"))
    ann, bob = (UserFactory(roles=["rater"]) for _ in range(2))
    graded(project, ann, hits[0].query, hits[0].document, value=3)
    graded(project, bob, hits[0].query, hits[0].document, value=1)
    graded(project, ann, hits[1].query, hits[1].document, kind="cant_tell")
    graded(project, ann, hits[2].query, hits[2].document, value=0)
    graded(project, ann, hits[2].query, hits[2].document, value=2)  # a revision
    graded(project, bob, hits[4].query, hits[4].document, value=2)  # rank 5, outside
    judge = UserFactory(roles=["rater"])
    graded(project, judge, hits[3].query, hits[3].document, value=3, source="machine")
    QueueRequest.objects.create(
        project=project,
        query=hits[5].query,
        document=hits[5].document,
        wanted=3,
        requested_by=UserFactory(roles=["analyst"]),
    )
    return project


def every_hit(project):
    hits = ResultList.objects.get(project=project).hits.select_related("query", "document")
    return [(hit.query, hit.document, (hit.rank + hit.query_id) % 4) for hit in hits]


@pytest.mark.django_db
def test_a_large_import_leaves_every_derived_table_as_the_oracles_compute_it(project, monkeypatch):
    monkeypatch.setattr(pairs, "REFRESH_ROWS", 10)
    extra = HitFactory(result_list=ResultList.objects.get(project=project), rank=7)

    with CaptureQueriesContext(connection) as captured:
        result = imported(project, quepid(project, every_hit(project)))

    assert result.created == 4 * 6 + 1
    assert refreshed_queries(captured), "the import did not take the refreshed path"
    # One grade per pair, of the import rater: the rater's grade replaced, no recount.
    assert replaced(captured) and not recounted(captured)
    assert extra.query.text in {query.text for query, _, _ in every_hit(project)}
    assert list(oracles.differences(project)) == []
    # The import rater's grade is one more on every pooled pair, the machine's none.
    pool = {(pair.query_id, pair.document_id): pair for pair in QueuePair.objects.all()}
    assert len(pool) == 4 * 4 + 1
    assert {pair.grades for pair in pool.values()} >= {1, 2, 3}


@pytest.mark.django_db
@pytest.mark.parametrize("later_event", [False, True], ids=["replaced", "recounted"])
def test_a_refreshed_import_logs_each_step_with_its_seconds(
    project, monkeypatch, caplog, later_event
):
    """What a large import's time went on, step by step (tests/bench/bench_export.py
    prints it beside the raw COPY)."""
    monkeypatch.setattr(pairs, "REFRESH_ROWS", 1)
    if later_event:
        hit = ResultList.objects.get(project=project).hits.first()
        graded_later_by_the_import_rater(project, hit.query, hit.document)

    with caplog.at_level("INFO", logger=pairs.__name__):
        imported(project, quepid(project, every_hit(project)))

    steps = [record.step for record in caplog.records if hasattr(record, "step")]
    counting = ["current answers read"] if later_event else []
    assert steps == [
        "pairs named", "pool rows locked", "pair grades rows locked", "events inserted",
        *counting, "pair grades counted", "summaries refreshed", "packed log refreshed",
        "pool counted",
    ]  # fmt: skip
    assert all(record.seconds >= 0 for record in caplog.records if hasattr(record, "step"))
    assert list(oracles.differences(project)) == []


def test_every_step_has_a_stage_to_show_while_it_runs():
    named = re.findall(r'step\("([^"]+)"\)', inspect.getsource(pairs))
    assert len(named) >= 7
    assert set(named) == set(pairs.STEPS)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_large_import_run_as_a_job_shows_each_step_as_its_stage_while_it_runs(
    project, monkeypatch, settings
):
    """Past the file's end a large import spends most of its time (some twenty seconds
    for a million rows): its job's page names each step as it starts, visible to another
    connection while the job's transaction is open."""
    monkeypatch.setattr(pairs, "REFRESH_ROWS", 1)
    # The worker runs the job once its row is committed (the dummy backend keeps the
    # task for the test to run), as in production: the progress is written through a
    # connection of its own, which sees only committed rows.
    settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"}}
    file = SimpleUploadedFile("grades.csv", quepid(project, every_hit(project)))
    job = jobs.job_start(
        kind=Job.Kind.JUDGEMENTS,
        label=file.name,
        user=UserFactory(roles=["analyst"]),
        project=project,
        options={"format": "quepid"},
        files={"file": file},
    )
    seen = run_watching(job, monkeypatch, "stage")

    steps = [
        "pairs named", "pool rows locked", "pair grades rows locked", "events inserted",
        "pair grades counted", "summaries refreshed", "packed log refreshed",
        "pool counted",
    ]  # fmt: skip
    assert seen == [
        "Writing to the database",  # the file's end
        *(f"Writing to the database: {pairs.STEPS[name]}" for name in steps),
    ]
    job.refresh_from_db()
    assert job.result["created"] == len(every_hit(project)) and job.stage == ""
    assert pairs.step_started.get() is None  # nobody is told of a later import's steps
    assert list(oracles.differences(project)) == []


@pytest.mark.django_db
def test_an_import_of_new_pairs_alone_adds_their_rows(project, monkeypatch):
    monkeypatch.setattr(pairs, "REFRESH_ROWS", 1)
    hits = ResultList.objects.get(project=project).hits.order_by("query_id", "rank")
    fresh = [(hit.query, hit.document, 2) for hit in hits if hit.rank == 6]

    with CaptureQueriesContext(connection) as captured:
        imported(project, quepid(project, fresh))

    assert refreshed_queries(captured)
    assert list(oracles.differences(project)) == []


@pytest.mark.django_db
def test_a_second_import_replaces_the_first_ones_grades(project, monkeypatch):
    monkeypatch.setattr(pairs, "REFRESH_ROWS", 1)
    imported(project, quepid(project, every_hit(project)))
    again = [(query, document, (grade + 1) % 4) for query, document, grade in every_hit(project)]

    with CaptureQueriesContext(connection) as captured:
        imported(project, quepid(project, again))

    assert replaced(captured) and not recounted(captured)
    assert list(oracles.differences(project)) == []
    rater = imports.import_rater(project).pk
    first_pair = PairGrade.objects.get(query=again[0][0], document=again[0][1])
    assert first_pair.raters.count(rater) == 1
    assert first_pair.grades[first_pair.raters.index(rater)] == again[0][2]


@pytest.mark.django_db
def test_an_import_with_an_event_of_its_rater_dated_later_is_recounted_from_the_log(
    project, monkeypatch
):
    """That later event stays the rater's current answer on its pair, not the file's
    grade: the pairs are counted again from the log."""
    monkeypatch.setattr(pairs, "REFRESH_ROWS", 1)
    rows = every_hit(project)
    graded_later_by_the_import_rater(project, *rows[1][:2])

    with CaptureQueriesContext(connection) as captured:
        imported(project, quepid(project, rows))

    assert recounted(captured) and not replaced(captured)
    assert list(oracles.differences(project)) == []


@pytest.mark.django_db
def test_a_pair_staged_twice_is_recounted_from_the_log(project, monkeypatch):
    """Which of a pair's two events is the newer (the rater's current answer) is the
    insert's order: a pair format's file refuses a repeated pair, and insert_counted
    counts such pairs again from the log rather than guess."""
    monkeypatch.setattr(pairs, "REFRESH_ROWS", 1)
    rater, moment = imports.import_rater(project), timezone.now()
    rows = [(query.pk, document.pk, grade) for query, document, grade in every_hit(project)]
    rows.append((rows[0][0], rows[0][1], (rows[0][2] + 2) % 4))
    with connection.cursor() as cursor:
        insert = staged_grades(cursor, rows, rater.pk, moment)
        with CaptureQueriesContext(connection) as captured:
            added = pairs.insert_counted(
                project.pk, "staged", insert, len(rows), (rater.pk, moment)
            )

    assert added == len(rows)
    assert recounted(captured) and not replaced(captured)
    assert list(oracles.differences(project)) == []


@pytest.mark.django_db
@pytest.mark.parametrize("later_event", [False, True], ids=["replaceable", "rater later"])
def test_a_pair_formats_import_is_refreshed_from_fewer_rows_when_it_can_replace(
    project, monkeypatch, later_event
):
    """From REPLACE_ROWS rows (below REFRESH_ROWS) a pair format's import replaces its
    rater's grade; when it cannot (an event of that rater dated later), the triggers
    count it, as any import of that size."""
    rows = every_hit(project)
    monkeypatch.setattr(pairs, "REPLACE_ROWS", len(rows))
    if later_event:
        graded_later_by_the_import_rater(project, *rows[1][:2])

    with CaptureQueriesContext(connection) as captured:
        imported(project, quepid(project, rows))

    if later_event:
        assert not refreshed_queries(captured)
    else:
        assert replaced(captured) and not recounted(captured)
    assert list(oracles.differences(project)) == []


@pytest.mark.django_db
def test_an_insert_of_another_kind_is_left_to_the_triggers_below_refresh_rows(
    project, monkeypatch
):
    """Without ``graded_by`` (events of several raters or moments) nothing can be
    replaced: REPLACE_ROWS does not apply."""
    monkeypatch.setattr(pairs, "REPLACE_ROWS", 1)
    rater, moment = imports.import_rater(project), timezone.now()
    rows = [(query.pk, document.pk, grade) for query, document, grade in every_hit(project)]
    with connection.cursor() as cursor:
        insert = staged_grades(cursor, rows, rater.pk, moment)
        with CaptureQueriesContext(connection) as captured:
            added = pairs.insert_counted(project.pk, "staged", insert, len(rows))

    assert added == len(rows)
    assert not refreshed_queries(captured)
    assert list(oracles.differences(project)) == []


@pytest.mark.django_db
def test_a_small_import_is_left_to_the_triggers(project):
    hits = ResultList.objects.get(project=project).hits.order_by("query_id", "rank")[:3]

    with CaptureQueriesContext(connection) as captured:
        imported(project, quepid(project, [(hit.query, hit.document, 1) for hit in hits]))

    assert not refreshed_queries(captured)
    assert list(oracles.differences(project)) == []


def wait_until_a_backend_waits_on_a_lock(timeout: float = 20) -> None:
    from django.db import connections

    with connections["default"].cursor() as cursor:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            # Inside a transaction the view keeps its first snapshot unless cleared.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE wait_event_type = 'Lock' AND datname = current_database()"
            )
            if cursor.fetchone()[0]:
                return
            time.sleep(0.02)
    raise AssertionError("no rater waited on the import's locks")


def staged_grades(cursor, rows, rater: int, moment):
    """Stage ``rows`` (query, document, grade) in the temporary table "staged"; return the
    insert that appends them as grades of ``rater`` dated ``moment`` and counts them."""
    cursor.execute(
        "CREATE TEMP TABLE staged (query_id bigint, document_id bigint, grade smallint)"
        " ON COMMIT DROP"
    )
    cursor.executemany("INSERT INTO staged VALUES (%s, %s, %s)", rows)

    def insert() -> int:
        cursor.execute(
            "INSERT INTO judgements_judgement (query_id, document_id, rater_id, kind,"
            " grade, note, created_at, source, source_event_id)"
            " SELECT query_id, document_id, %s, 'grade', grade, '', %s, 'import', ''"
            " FROM staged",
            [rater, moment],
        )
        return cursor.rowcount

    return insert


def import_pausing_after_its_insert(project, rows, paused, resume, replacing=False):
    """insert_counted() over ``rows`` (query, document, grade) of the import rater,
    pausing between its insert and its refresh; ``replacing``: as a pair format's
    import, which replaces the rater's grade in each pair's (``graded_by``)."""
    rater = imports.import_rater(project)
    moment = timezone.now()
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            insert_now = staged_grades(cursor, rows, rater.pk, moment)

            def insert() -> int:
                inserted = insert_now()
                paused.set()
                assert resume.wait(30)
                return inserted

            graded_by = (rater.pk, moment) if replacing else None
            pairs.insert_counted(project.pk, "staged", insert, len(rows), graded_by)
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize("replacing", [False, True], ids=["recounted", "replaced"])
@pytest.mark.parametrize(
    ("rank", "judged_before"),
    [(1, True), (1, False), (4, True), (4, False)],
    ids=["pool pair judged", "new pool pair", "judged pair below", "new pair below"],
)
def test_a_rater_grading_a_pair_of_the_import_meanwhile_is_counted_with_it(
    rank, judged_before, replacing, monkeypatch
):
    """The import locks the pool rows of its pairs, then the pair grades rows they have,
    before its insert: a rater grading one of them waits for the import and then counts
    it. A pair below the pool without a row gets the rater's row first (nothing of the
    import's holds it), and the import, finding it, counts the pair again."""
    monkeypatch.setattr(pairs, "REFRESH_ROWS", 1)
    project = project_with_pairs(queries=3, hits_per_query=4, judges_per_pair=3)
    project.pool_depth = 3
    project.save(update_fields=["pool_depth"])
    hits = list(ResultList.objects.get(project=project).hits.order_by("query_id", "rank"))
    target = hits[rank - 1]
    ann, bob = UserFactory(roles=["rater"]), UserFactory(roles=["rater"])
    if judged_before:
        graded(project, ann, target.query, target.document, value=1)
    rows = [(hit.query_id, hit.document_id, 2) for hit in hits]
    paused, resume = threading.Event(), threading.Event()
    importer = threading.Thread(
        target=import_pausing_after_its_insert, args=(project, rows, paused, resume, replacing)
    )
    importer.start()
    assert paused.wait(30)

    def rate() -> None:
        try:
            graded(project, bob, target.query, target.document, value=3)
        finally:
            connection.close()

    rater = threading.Thread(target=rate)
    rater.start()
    if judged_before or rank <= project.pool_depth:
        wait_until_a_backend_waits_on_a_lock()
    else:
        rater.join(30)  # nothing of the import's holds the new pair: the grade commits
        assert not rater.is_alive()
    resume.set()
    importer.join(60)
    rater.join(60)

    assert Judgement.objects.filter(query=target.query, document=target.document).count() == (
        3 if judged_before else 2
    )
    assert list(oracles.differences(project)) == []
    if rank <= project.pool_depth:
        pair = QueuePair.objects.get(query=target.query, document=target.document)
        assert pair.grades == (3 if judged_before else 2)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize("replacing", [False, True], ids=["recounted", "replaced"])
def test_an_import_waits_for_a_rater_who_holds_a_pool_pair_without_deadlock(
    replacing, monkeypatch
):
    """A rater's grade locks its pool pair's row, then its pair grades row (through the
    triggers). An import that locked the pair grades first and the pool rows later would
    wait on the rater while the rater waited on it; it takes the pool rows first."""
    from judgements.queue import pair_has_room
    from judgements.services import judgement_record

    monkeypatch.setattr(pairs, "REFRESH_ROWS", 1)
    project = project_with_pairs(queries=2, hits_per_query=3, judges_per_pair=2)
    hits = list(ResultList.objects.get(project=project).hits.order_by("query_id", "rank"))
    target, bob = hits[1], UserFactory(roles=["rater"])
    graded(project, UserFactory(roles=["rater"]), target.query, target.document, value=0)
    holding, failures = threading.Event(), []

    def rate() -> None:
        try:
            with transaction.atomic():
                pair_has_room(
                    rater=bob, project=project, query_id=target.query_id,
                    document_id=target.document_id,
                )  # fmt: skip
                holding.set()
                wait_until_a_backend_waits_on_a_lock()
                judgement_record(rater=bob, query=target.query, document=target.document, grade=3)
        except Exception as error:
            failures.append(error)
        finally:
            connection.close()

    def import_all() -> None:
        try:
            resume = threading.Event()
            resume.set()
            rows = [(hit.query_id, hit.document_id, 2) for hit in hits]
            import_pausing_after_its_insert(project, rows, threading.Event(), resume, replacing)
        except Exception as error:
            failures.append(error)

    rater = threading.Thread(target=rate)
    rater.start()
    assert holding.wait(30)
    importer = threading.Thread(target=import_all)
    importer.start()
    rater.join(60)
    importer.join(60)

    assert failures == []
    assert Judgement.objects.filter(query=target.query, document=target.document).count() == 3
    assert list(oracles.differences(project)) == []


@pytest.mark.django_db
def test_inside_a_deferred_load_the_import_leaves_its_pairs_to_the_loads_rebuild(
    project, monkeypatch
):
    from judgements.derived import rebuild

    monkeypatch.setattr(pairs, "REFRESH_ROWS", 1)
    with transaction.atomic():
        with rebuild.deferred():
            with CaptureQueriesContext(connection) as captured:
                imported(project, quepid(project, every_hit(project)))
            # The import's own deferral, had it one, ended inside the load's.
            assert rebuild.is_deferred()
            assert list(oracles.differences(project)) != []
        assert not rebuild.is_deferred()
        rebuild.repair(project.pk)

    assert not refreshed_queries(captured)
    assert list(oracles.differences(project)) == []
