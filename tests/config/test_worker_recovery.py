"""Work whose worker died is recovered, for real (judgements/leases.py): a task worker
process (``manage.py task_worker``, as docker-compose.yml runs it, on the django-tasks-db
queue) is killed (``kill -9``) or told to stop (SIGTERM, as a deploy) in the middle of an
import and of a machine judge's run, and a new worker takes it from there.

The lease is LEASE seconds here (30 in production). An import is held mid-way by a lock
the test takes on a table it writes (or reads), so that it is surely running when the
signal comes, however fast the machine; a run by a model server on 127.0.0.1 that takes
DELAY seconds per answer.
"""

import re
import signal
import subprocess
import time

import psycopg2
import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from judgements import jobs
from judgements.machine.runs import machine_run_start
from judgements.models import Job, JobUpload, MachineRun, MachineRunItem, Query
from tests.config.test_production import database_url, production_environment
from tests.machine.conftest import machine_events, make_judge, pool_project
from tests.model_server import ModelServer
from tests.processes import start, stop, tail

LEASE = 2
# How long after a worker's death (or stop) the work must be recovered (or handed
# back): the lease, the new worker's start (a few seconds on a loaded machine) and some.
RECOVERED_WITHIN = LEASE + 15
DELAY = 0.3
QUERY_COUNT = 300
QUERIES = "text\n" + "".join(f"query {number}\n" for number in range(QUERY_COUNT))

# Serialized, as every transactional test here: a flush would let post_migrate make the
# role groups again and the next serialized test fail to restore them.
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def workers(settings, tmp_path):
    """Start task workers on the test database (``workers()``); stopped at the end."""
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    settings.TASK_LEASE_SECONDS = LEASE
    settings.OUTBOUND_ALLOW = ["127.0.0.1"]
    environment = production_environment(
        DATABASE_URL=database_url(),
        TASKS_BACKEND="database",
        TASK_LEASE_SECONDS=str(LEASE),
        OUTBOUND_ALLOW="127.0.0.1",
        MACHINE_JUDGE_BACKOFF_SECONDS="0.01",
    )
    started = []

    def start_worker() -> subprocess.Popen:
        command = ["manage.py", "task_worker", "--interval", "0.1", "--no-startup-delay"]
        log = tmp_path / f"worker-{len(started)}.log"
        worker = start([*command, "--no-reload"], environment, log)
        started.append(worker)
        return worker

    yield start_worker
    for worker in started:
        if worker.poll() is None:
            stop(worker)


@pytest.fixture
def locker():
    """A connection of the test's own, to hold a lock on a table the import needs."""
    connection = psycopg2.connect(database_url())
    yield connection
    connection.rollback()
    connection.close()


@pytest.fixture
def charlie(analyst):
    client = Client()
    client.force_login(analyst)
    return client


def wait_for(condition, seconds: float, worker: subprocess.Popen | None = None, what=""):
    """Wait until ``condition()`` holds; fails after ``seconds`` saying what it waited for."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {seconds} s: {what}\n" + (tail(worker) if worker else ""))
        time.sleep(0.05)


def waiting_on_lock(locker, table: str) -> list[int]:
    """The server processes waiting for the lock the test holds on ``table``."""
    with locker.cursor() as cursor:
        # A new snapshot each time: this connection holds a transaction open.
        cursor.execute(
            "SELECT pid FROM pg_locks WHERE NOT granted AND relation = %s::regclass", [table]
        )
        return [row[0] for row in cursor.fetchall()]


def backends_alive(pids: list[int]) -> bool:
    with psycopg2.connect(database_url()) as probe, probe.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", [pids])
        alive = cursor.fetchone()[0]
    probe.close()
    return alive > 0


def queries_job(project, analyst) -> Job:
    file = SimpleUploadedFile("queries.csv", QUERIES.encode())
    return jobs.job_start(
        kind=Job.Kind.QUERIES,
        label=file.name,
        user=analyst,
        project=project,
        options={"format": "csv"},
        files={"file": file},
    )


def test_an_import_whose_worker_is_killed_fails_saying_where_it_stopped(
    workers, locker, project, analyst, charlie
):
    job = queries_job(project, analyst)
    with locker.cursor() as cursor:
        cursor.execute("LOCK TABLE judgements_query IN EXCLUSIVE MODE")  # Reads pass.
    first = workers()
    wait_for(lambda: waiting_on_lock(locker, "judgements_query"), 60, first, "blocked import")
    blocked = waiting_on_lock(locker, "judgements_query")
    job.refresh_from_db()
    assert job.status == Job.Status.RUNNING and job.lease_until is not None
    where = f"at {job.percent} % ({job.stage})"

    first.kill()  # SIGKILL: no handler runs, no cleanup.
    first.wait()
    killed = time.monotonic()
    # The dead worker's transaction goes on waiting for the lock; once it has it, it
    # finds its client gone and rolls back.
    locker.rollback()
    wait_for(lambda: not backends_alive(blocked), 10, what="the dead worker's backend ends")
    assert not Query.objects.filter(project=project).exists()

    # No worker runs: the page reads the expired lease and says the worker was lost.
    job.refresh_from_db()
    wait_for(lambda: Job.objects.get(pk=job.pk).worker_lost, LEASE + 1, what="lease ends")
    page = charlie.get(reverse("judgements:job", args=[job.pk]))
    assert page.status_code == 200
    assert b"Its worker stopped" in page.content
    assert b"The worker running this job stopped" in page.content
    status = charlie.get(reverse("api:job", args=[job.pk])).json()
    assert (status["status"], status["worker_lost"]) == ("running", True)
    assert Job.objects.get(pk=job.pk).status == Job.Status.RUNNING  # The page wrote nothing.

    second = workers()
    wait_for(
        lambda: Job.objects.get(pk=job.pk).status == Job.Status.FAILED,
        RECOVERED_WITHIN - (time.monotonic() - killed),
        second,
        "the job ends as failed",
    )
    job.refresh_from_db()
    [error] = job.errors
    assert re.match(
        re.escape(f"Its worker stopped {where}: no heartbeat since ") + r"\d\d:\d\d:\d\d UTC\.",
        error["message"],
    ), error["message"]
    assert "Nothing was imported" in error["message"]
    assert job.lease_until is None and job.finished_at is not None
    assert not JobUpload.objects.filter(job_id=job.pk).exists()
    assert not Query.objects.filter(project=project).exists()
    page = charlie.get(reverse("judgements:job", args=[job.pk]))
    assert b"Failed" in page.content and b"Nothing was imported" in page.content

    # The same upload runs again, on the new worker.
    again = queries_job(project, analyst)
    wait_for(lambda: Job.objects.get(pk=again.pk).finished, 30, second, "the new upload")
    assert Job.objects.get(pk=again.pk).status == Job.Status.DONE
    assert Query.objects.filter(project=project).count() == QUERY_COUNT


def test_a_stopped_worker_hands_its_import_back_and_the_next_one_runs_it(
    workers, locker, project, analyst
):
    job = queries_job(project, analyst)
    with locker.cursor() as cursor:
        # The worker blocks reading the upload, before its first progress report.
        cursor.execute("LOCK TABLE judgements_jobupload IN ACCESS EXCLUSIVE MODE")
    first = workers()
    wait_for(lambda: waiting_on_lock(locker, "judgements_jobupload"), 60, first, "blocked")
    assert Job.objects.get(pk=job.pk).status == Job.Status.RUNNING

    first.send_signal(signal.SIGTERM)
    time.sleep(0.5)  # Delivered while the worker waits for the lock.
    locker.rollback()
    assert first.wait(timeout=10) == 0, tail(first)

    job.refresh_from_db()
    assert job.status == Job.Status.QUEUED, (job.status, job.errors, tail(first))
    assert job.stage.startswith("Handed back by a stopping worker")
    assert job.lease_until is None and job.done == 0
    assert JobUpload.objects.filter(job_id=job.pk).exists()  # Kept for the next worker.
    assert not Query.objects.filter(project=project).exists()
    queued = DBTaskResult.objects.filter(task_path__endswith="job_run", status="READY")
    assert [task.args_kwargs["args"] for task in queued] == [[str(job.pk)]]

    second = workers()
    wait_for(lambda: Job.objects.get(pk=job.pk).finished, 30, second, "the job runs again")
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.errors
    assert job.result["created"] == QUERY_COUNT == Query.objects.filter(project=project).count()


@pytest.fixture
def slow_model():
    server = ModelServer(default=2).start()
    server.delay = DELAY
    yield server
    server.stop()


def start_run(slow_model, analyst):
    """A run of 20 pairs, two in flight at a time: about 3 s of answers."""
    project = pool_project(4, 5)
    judge = make_judge(project, slow_model, concurrency=2)
    return judge, machine_run_start(judge=judge, user=analyst)


def answered(run: MachineRun) -> int:
    run.refresh_from_db()
    return run.answered


def assert_finished_once_each(judge, run: MachineRun) -> None:
    """Every pair answered, each once, no claim left, and the judge takes a new run."""
    run.refresh_from_db()
    assert (run.status, run.answered, run.total) == (MachineRun.Status.DONE, 20, 20)
    assert run.items.filter(status=MachineRunItem.Status.DONE).count() == 20
    assert not run.items.exclude(status=MachineRunItem.Status.DONE).exists()
    pairs = list(machine_events(judge).values_list("query_id", "document_id"))
    assert len(pairs) == len(set(pairs)) == 20
    try:
        following = machine_run_start(judge=judge, user=None)
    except ValidationError as refused:
        pytest.fail(f"the judge refused a new run: {refused.messages}")
    assert following.reason == "Every pool pair already has a grade from this judge."


def test_a_run_whose_worker_is_killed_resumes_on_another_and_finishes(
    workers, slow_model, analyst, charlie
):
    judge, run = start_run(slow_model, analyst)
    first = workers()
    wait_for(lambda: answered(run) >= 4, 60, first, "four answers")
    first.kill()
    first.wait()
    killed = time.monotonic()
    run.refresh_from_db()
    at_kill = run.answered
    claimed = run.items.filter(status=MachineRunItem.Status.CLAIMED).count()
    assert run.status == MachineRun.Status.RUNNING and run.answered < 20 and claimed >= 1
    # The dead worker's claims hold their pairs; the judge refuses a second run.
    with pytest.raises(ValidationError):
        machine_run_start(judge=judge, user=analyst)

    wait_for(lambda: MachineRun.objects.get(pk=run.pk).worker_lost, LEASE + 1, what="lease")
    page = charlie.get(judge.get_absolute_url())
    assert page.status_code == 200 and b'data-testid="run-worker-lost"' in page.content
    progress = charlie.get(reverse("judgements:machine_progress", args=["shop", judge.pk]))
    assert progress.json()["worker_lost"] is True

    second = workers()
    wait_for(
        lambda: MachineRun.objects.get(pk=run.pk).status == MachineRun.Status.DONE,
        RECOVERED_WITHIN - (time.monotonic() - killed) + 20 * DELAY,
        second,
        "the run resumes and finishes",
    )
    run.refresh_from_db()
    assert run.reason.startswith(f"Its worker stopped at {at_kill} of 20 pairs: no heartbeat")
    assert f"Its {claimed} claimed pairs were handed back" in run.reason, run.reason
    page = charlie.get(judge.get_absolute_url())
    assert b"run-worker-lost" not in page.content and b"were handed back" in page.content
    assert_finished_once_each(judge, run)


def test_a_stopped_worker_records_its_pairs_in_flight_and_hands_the_run_back(
    workers, slow_model, analyst
):
    judge, run = start_run(slow_model, analyst)
    first = workers()
    wait_for(lambda: answered(run) >= 4, 60, first, "four answers")
    first.send_signal(signal.SIGTERM)
    # Each thread finishes the pair it is asking about, well within a deploy's grace
    # (60 s, docker-compose.yml), and leaves the rest (below: fewer than 20 answered).
    assert first.wait(timeout=10) == 0, tail(first)

    run.refresh_from_db()
    assert run.status == MachineRun.Status.RUNNING and run.answered < 20
    assert not run.items.filter(status=MachineRunItem.Status.CLAIMED).exists()
    # No answer was lost: every pair asked was recorded.
    assert len(slow_model.requests) == run.answered == machine_events(judge).count()
    assert run.reason.startswith(f"Handed back by a stopping worker at {run.answered} of 20")
    queued = DBTaskResult.objects.filter(task_path__endswith="machine_run_task", status="READY")
    assert [task.args_kwargs["args"] for task in queued] == [[run.pk]]

    second = workers()
    wait_for(
        lambda: MachineRun.objects.get(pk=run.pk).status == MachineRun.Status.DONE,
        30,
        second,
        "the next worker finishes the run",
    )
    assert_finished_once_each(judge, run)
    assert len(slow_model.requests) == 20  # No pair was asked twice.
