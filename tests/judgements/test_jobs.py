"""Background jobs (judgements.jobs): uploads and deletions run as tasks, all or nothing,
with progress that shows while their transaction is open.

charlie (analyst) starts every job here; the roles are tested with the pages and the API.
"""

import datetime as dt

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import DataError, connection, transaction
from django.utils import timezone

from judgements import bulk, jobs, leases
from judgements.models import (
    Document,
    Hit,
    Job,
    JobUpload,
    Judgement,
    Project,
    Query,
    QueuePair,
    RankedGrades,
    RankedHits,
    ResultList,
)
from metrics.evaluate import metric_points_build
from metrics.models import MetricPoint
from metrics.refresh import metric_points_store
from metrics.registry import project_spec
from searchlogs.models import SearchEvent
from tests.factories import DocumentFactory, HitFactory, JudgementFactory, ResultListFactory

pytestmark = pytest.mark.django_db


def upload_job(project, analyst, kind: str, text: str, **options) -> Job:
    file = SimpleUploadedFile("upload.txt", text.encode())
    return jobs.job_start(
        kind=kind,
        label=file.name,
        user=analyst,
        project=project,
        options=options,
        files={"file": file},
    )


def test_a_job_stores_its_file_in_blocks_and_runs_once_committed(
    project, analyst, django_capture_on_commit_callbacks, monkeypatch
):
    monkeypatch.setattr(jobs, "BLOCK_BYTES", 8)
    with django_capture_on_commit_callbacks() as queued:
        job = upload_job(project, analyst, Job.Kind.QUERIES, "text\nhat\nscarf\n", format="csv")
    assert JobUpload.objects.filter(job_id=job.pk).count() == 2  # 15 bytes in blocks of 8
    assert job.status == Job.Status.QUEUED and job.total == 15
    assert not project.queries.exists()

    for callback in queued:
        callback()

    job.refresh_from_db()
    assert job.status == Job.Status.DONE
    assert job.result == {"rows": 2, "created": 2, "unchanged": 0}
    assert (job.done, job.total, job.percent) == (15, 15, 100)
    assert set(project.queries.values_list("text", flat=True)) == {"hat", "scarf"}
    # The stored file goes once the job ends.
    assert not JobUpload.objects.filter(job_id=job.pk).exists()


def test_a_refused_upload_records_the_apis_errors_and_writes_nothing(
    project, analyst, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = upload_job(project, analyst, Job.Kind.QUERIES, "text\nhat\nhat\n", format="csv")
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert job.errors == [{"field": "text", "line": 3, "message": "This query repeats line 2."}]
    assert not project.queries.exists()
    assert not JobUpload.objects.filter(job_id=job.pk).exists()


def test_an_unexpected_error_fails_the_job_and_is_raised_for_the_log(
    project, analyst, django_capture_on_commit_callbacks, monkeypatch
):
    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setitem(jobs.RUNNERS, Job.Kind.QUERIES, broken)
    with django_capture_on_commit_callbacks() as queued:
        job = upload_job(project, analyst, Job.Kind.QUERIES, "text\nhat\n", format="csv")
    with pytest.raises(RuntimeError, match="disk on fire"):
        jobs.job_execute(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert "failed unexpectedly" in job.errors[0]["message"]
    assert len(queued) == 1


def test_a_job_runs_only_once(project, analyst, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job = upload_job(project, analyst, Job.Kind.QUERIES, "text\nhat\n", format="csv")
    assert jobs.job_execute(job.pk) == "missing"
    assert project.queries.count() == 1


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_progress_shows_while_the_jobs_own_transaction_is_still_open(project, analyst):
    job = Job.objects.create(kind=Job.Kind.QUERIES, label="big.csv", project=project, total=100)
    progress = jobs.JobProgress(job)
    reader = connection.copy()
    try:
        with transaction.atomic():
            # The import's writes are not visible until it commits; its progress is.
            Query.objects.create(project=project, text="written, not committed")
            progress.add(40)
            progress.set_stage("Writing to the database", done=60)
            with reader.cursor() as cursor:
                cursor.execute(
                    "SELECT done, stage FROM judgements_job WHERE id = %s", [job.pk.hex]
                )
                assert cursor.fetchone() == (60, "Writing to the database")
                cursor.execute("SELECT count(*) FROM judgements_query")
                assert cursor.fetchone() == (0,)
    finally:
        reader.close()
        progress.close()


@pytest.fixture
def judged_project(project, rater):
    """Two result lists over two queries, grades, stored metrics and a search event."""
    bm25 = ResultListFactory(project=project, name="bm25")
    vector = ResultListFactory(project=project, name="vector")
    documents = [DocumentFactory(project=project, external_id=f"SKU-{n}") for n in range(4)]
    for text in ("tent", "stove"):
        for rank, document in enumerate(documents[:3], start=1):
            HitFactory(result_list=bm25, query__text=text, document=document, rank=rank)
        hit = HitFactory(result_list=vector, query__text=text, document=documents[3], rank=1)
        JudgementFactory(query=hit.query, document=documents[0], rater=rater, grade=3)
    as_of = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
    for result_list in (bm25, vector):
        metric_points_store(metric_points_build(result_list, project_spec(project), as_of=as_of))
    SearchEvent.objects.create(
        project=project,
        event_id="e1",
        kind=SearchEvent.Kind.IMPRESSION,
        session_id="s1",
        at=as_of,
        query_text="tent",
        query_key="tent",
    )
    return project


def counts(project_id: int) -> dict[str, int]:
    return {
        "queries": Query.objects.filter(project_id=project_id).count(),
        "documents": Document.objects.filter(project_id=project_id).count(),
        "lists": ResultList.objects.filter(project_id=project_id).count(),
        "hits": Hit.objects.filter(result_list__project_id=project_id).count(),
        "judgements": Judgement.objects.filter(query__project_id=project_id).count(),
        "pool": QueuePair.objects.filter(project_id=project_id).count(),
        "metrics": MetricPoint.objects.filter(result_list__project_id=project_id).count(),
        "events": SearchEvent.objects.filter(project_id=project_id).count(),
    }


def test_deleting_a_project_removes_everything_in_it_and_keeps_the_job(
    judged_project, analyst, django_capture_on_commit_callbacks
):
    project_id = judged_project.pk
    other = Project.objects.create(name="Other", slug="other")
    HitFactory(result_list__project=other)
    before_other = counts(other.pk)
    assert all(counts(project_id).values())

    with django_capture_on_commit_callbacks(execute=True):
        job = jobs.project_delete_start(project=judged_project, user=analyst)

    job.refresh_from_db()
    assert job.status == Job.Status.DONE
    assert job.project is None and job.result == {"deleted": "Outdoor gear"}
    assert job.done == job.total
    assert not Project.objects.filter(pk=project_id).exists()
    assert set(counts(project_id).values()) == {0}
    assert counts(other.pk) == before_other


def test_a_project_being_deleted_is_named_as_such_while_queued_and_running(project, analyst):
    other = Project.objects.create(name="Other", slug="other")
    assert jobs.deleting(project) is None
    job = jobs.project_delete_start(project=project, user=analyst)
    assert jobs.deleting(project) == job and jobs.deleting(other) is None
    assert list(Project.objects.filter(pk__in=jobs.projects_being_deleted())) == [project]
    # A running deletion has let go of its project (see the deadlock test below).
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, project=None)
    assert jobs.deleting(project) == job
    assert list(Project.objects.filter(pk__in=jobs.projects_being_deleted())) == [project]
    Job.objects.filter(pk=job.pk).update(status=Job.Status.DONE)
    assert jobs.deleting(project) is None
    assert not Project.objects.filter(pk__in=jobs.projects_being_deleted()).exists()


def test_a_deletion_that_lost_its_worker_no_longer_hides_its_project(project, analyst):
    job = jobs.project_delete_start(project=project, user=analyst)
    ended = timezone.now() - dt.timedelta(seconds=1)
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, lease_until=ended)
    job.refresh_from_db()
    assert job.worker_lost
    assert jobs.deleting(project) is None
    assert not Project.objects.filter(pk__in=jobs.projects_being_deleted()).exists()


def test_recovery_ends_only_jobs_whose_lease_ran_out_once_and_keeps_the_project(project, analyst):
    lost = jobs.project_delete_start(project=project, user=analyst)
    alive = jobs.result_list_delete_start(
        result_list=ResultListFactory(project=project), user=analyst
    )
    ended, ahead = timezone.now() - dt.timedelta(seconds=1), timezone.now() + dt.timedelta(hours=1)
    # A running deletion has let go of its project (see _delete_project).
    Job.objects.filter(pk=lost.pk).update(
        status=Job.Status.RUNNING, project=None, lease_until=ended, stage="Deleting hits", done=3
    )
    Job.objects.filter(pk=alive.pk).update(status=Job.Status.RUNNING, lease_until=ahead)

    assert leases.recover_abandoned() == {"jobs": 1, "runs": 0}
    assert leases.recover_abandoned() == {"jobs": 0, "runs": 0}

    lost.refresh_from_db()
    assert lost.status == Job.Status.FAILED and lost.lease_until is None
    [error] = lost.errors
    assert error["message"].startswith(f"Its worker stopped at {lost.percent} % (Deleting hits)")
    assert "Nothing was deleted" in error["message"]
    assert lost.project == project  # Its page leads back to the project, still whole.
    assert Job.objects.get(pk=alive.pk).status == Job.Status.RUNNING


def test_deleting_a_result_list_keeps_judgements_and_the_other_lists(
    judged_project, analyst, django_capture_on_commit_callbacks
):
    bm25 = judged_project.result_lists.get(name="bm25")
    vector = judged_project.result_lists.get(name="vector")
    vector_points = list(MetricPoint.objects.filter(result_list=vector).values_list("value"))
    judgements = Judgement.objects.count()

    with django_capture_on_commit_callbacks(execute=True):
        job = jobs.result_list_delete_start(result_list=bm25, user=analyst)

    job.refresh_from_db()
    assert job.status == Job.Status.DONE
    assert not ResultList.objects.filter(pk=bm25.pk).exists()
    assert not MetricPoint.objects.filter(result_list_id=bm25.pk).exists()
    assert not RankedHits.objects.filter(result_list_id=bm25.pk).exists()
    assert not RankedGrades.objects.filter(result_list_id=bm25.pk).exists()
    assert list(MetricPoint.objects.filter(result_list=vector).values_list("value")) == (
        vector_points
    )
    assert Judgement.objects.count() == judgements
    # Only the pairs the vector list returns are left in the pool.
    pool = set(QueuePair.objects.values_list("query_id", "document_id"))
    assert pool == set(vector.hits.values_list("query_id", "document_id"))


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_deletion_reports_progress_while_it_runs_and_never_waits_on_its_own_row(
    judged_project, analyst, settings, monkeypatch
):
    # As in production: the job's row is committed before a worker runs it (the dummy
    # backend keeps the task for this test to run), so the progress connection and the
    # deletion's transaction meet on real row locks.
    settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"}}
    job = jobs.project_delete_start(project=judged_project, user=analyst)
    seen = run_watching(job, monkeypatch, "done")
    assert not Project.objects.filter(slug="outdoor").exists()
    # Every step was visible to another connection as it happened.
    assert seen == list(range(job.total))


def run_watching(job: Job, monkeypatch, column: str) -> list:
    """Run ``job`` as a worker would (to its end, done); return its row's ``column`` as
    another connection read it each time the job set its stage."""
    seen = []
    reader = connection.copy()
    original = jobs.JobProgress.set_stage

    def watched(progress, stage, *, done=None):
        original(progress, stage, done=done)
        with reader.cursor() as cursor:
            cursor.execute(f"SELECT {column} FROM judgements_job WHERE id = %s", [job.pk.hex])
            seen.append(cursor.fetchone()[0])

    monkeypatch.setattr(jobs.JobProgress, "set_stage", watched)
    try:
        assert jobs.job_execute(job.pk) == Job.Status.DONE
    finally:
        reader.close()
    return seen


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_failed_deletion_deletes_nothing_and_the_job_leads_back_to_the_project(
    judged_project, analyst, settings, monkeypatch
):
    settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"}}
    before = counts(judged_project.pk)
    # The last statement fails, after every row of the project has been deleted.
    failing = [*bulk.PROJECT_TABLES_SQL, "SELECT 1 / 0 WHERE %(project)s > 0"]
    monkeypatch.setattr(bulk, "PROJECT_TABLES_SQL", failing)
    job = jobs.project_delete_start(project=judged_project, user=analyst)
    with pytest.raises(DataError, match="division by zero"):
        jobs.job_execute(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.project == judged_project
    assert counts(judged_project.pk) == before
    assert jobs.deleting(judged_project) is None
