"""Background jobs: large uploads and deletions run as a task (django.tasks).

The request stores the job (and the uploaded file, in blocks, in the database, so
that a worker in another container can read it), queues the task once its
transaction commits, and returns at once. The task runs the same import service a
small upload runs in the request, all or nothing, and reports how far it got on the
job's row through a database connection of its own, which the page and the API poll.
In development and tests the immediate backend runs the task in-process; in
production a ``db_worker`` process of django-tasks-db does.
"""

import contextlib
import logging
import struct
import time
from collections.abc import Iterable, Iterator

from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection, models, transaction
from django.db.models import Q
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.utils import timezone

from config.api.errors import import_errors
from judgements import bulk, leases
from judgements.derived import pairs
from judgements.importers import ImportRejected, LineError
from judgements.importers.progress import ProgressBar
from judgements.models import Job, JobUpload, Project, ResultList
from judgements.uploads import UPLOADS, summary

logger = logging.getLogger(__name__)

BLOCK_BYTES = 1 << 20
ACTIVE = (Job.Status.QUEUED, Job.Status.RUNNING)


def job_start(
    *,
    kind: str,
    label: str,
    user,
    project: Project | None,
    options: dict | None = None,
    files: dict | None = None,
    total: int = 0,
) -> Job:
    """Store a job (and its uploaded ``files``, by part) and queue it to run.

    The task is queued when the transaction commits, so that the worker finds the
    job's rows. Returns the job; with the immediate backend it has run by then.
    """
    from judgements.tasks import job_run

    files = files or {}
    with transaction.atomic():
        job = Job.objects.create(
            kind=kind,
            label=label[:300],
            project=project,
            options=options or {},
            created_by=user if user and user.is_authenticated else None,
            total=total or (files["file"].size if "file" in files else 0),
        )
        for part, upload in files.items():
            if upload is not None:
                _store(job, part, upload.chunks(BLOCK_BYTES))
        transaction.on_commit(lambda: job_run.enqueue(str(job.pk)))
    return job


def _store(job: Job, part: str, chunks: Iterable[bytes]) -> None:
    """Write the upload's blocks with one binary COPY: an INSERT would send each block as
    text twice its size (hex) for PostgreSQL to decode, which took 12 s for 200 MB."""
    rows = _CopyStream(_binary_rows(job.pk, part, _blocks(chunks)))
    with connection.cursor() as cursor:
        cursor.cursor.copy_expert(
            "COPY judgements_jobupload (job_id, part, number, data) FROM STDIN (FORMAT binary)",
            rows,
            size=BLOCK_BYTES,
        )


def _binary_rows(job_id, part: str, blocks: Iterable[bytes]) -> Iterator[bytes]:
    """The rows in PostgreSQL's binary COPY format: a header, then per row the number of
    fields and each field's length and bytes, and -1 at the end."""
    yield b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)
    name = part.encode()
    for number, data in enumerate(blocks):
        yield struct.pack("!hi", 4, 16) + job_id.bytes + struct.pack("!i", len(name)) + name
        yield struct.pack("!iii", 4, number, len(data))
        yield data
    yield struct.pack("!h", -1)


class _CopyStream:
    """A file to read from, over pieces of bytes as they come."""

    def __init__(self, pieces: Iterator[bytes]):
        self.pieces, self.pending = pieces, b""

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self.pending) < size:
            piece = next(self.pieces, None)
            if piece is None:
                break
            self.pending += piece
        if size < 0:
            size = len(self.pending)
        data, self.pending = self.pending[:size], self.pending[size:]
        return data


def _blocks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The chunks cut into ``BLOCK_BYTES`` blocks (a file held in memory is one chunk)."""
    pending = b""
    for chunk in chunks:
        pending += chunk
        while len(pending) >= BLOCK_BYTES:
            yield pending[:BLOCK_BYTES]
            pending = pending[BLOCK_BYTES:]
    if pending:
        yield pending


def stored_chunks(job_id, part: str, progress: "JobProgress | None" = None) -> Iterator[bytes]:
    """The blocks of one uploaded part, one query per block, so memory stays flat."""
    blocks = JobUpload.objects.filter(job_id=job_id, part=part)
    numbers = list(blocks.order_by("number").values_list("number", flat=True))
    for number in numbers:
        data = bytes(blocks.filter(number=number).values_list("data", flat=True).get())
        if progress is not None:
            progress.add(len(data))
        yield data
    if progress is not None:
        progress.finish()


class JobProgress(ProgressBar):
    """A ProgressBar whose drawing is an UPDATE of the job's row.

    The work runs in one transaction (so that it is all or nothing); progress is
    written through a second connection in autocommit, so that it shows at once.
    """

    def __init__(self, job: Job, *, stage: str = "", stopping=None):
        super().__init__(None, total=job.total)
        self.job_id, self.stage = job.pk, stage
        self.side = None
        self.stopping = stopping

    def add(self, amount: int) -> None:
        self._stop_if_asked()
        super().add(amount)

    def _draw(self, now: float) -> None:
        self.write(done=self.done, stage=self.stage)

    def finish(self) -> None:
        self.set_stage("Writing to the database")

    def _stop_if_asked(self) -> None:
        """Each report is a point where the work may stop: its worker was told to stop
        (leases.graceful_stop), so the job hands itself back, rolled back."""
        if self.stopping is not None and self.stopping.is_set():
            raise leases.StopRequested

    def set_stage(self, stage: str, *, done: int | None = None) -> None:
        self._stop_if_asked()
        self.stage = stage
        if done is not None:
            self.done = done
        self._draw(time.monotonic())

    def write(self, **fields) -> None:
        if self.side is None:
            self.side = connection.copy()
        names = ", ".join(f"{name} = %s" for name in fields)
        with self.side.cursor() as cursor:
            # Progress never waits: if the job's own transaction holds the row (or
            # anything else does), this report is skipped and the next one goes through.
            # Waiting would deadlock the job, which waits for this call to return.
            cursor.execute(
                f"UPDATE judgements_job SET {names}, updated_at = %s WHERE id = ("
                "SELECT id FROM judgements_job WHERE id = %s FOR UPDATE SKIP LOCKED)",
                [*fields.values(), timezone.now(), self.job_id],
            )

    def close(self) -> None:
        if self.side is not None:
            self.side.close()


def job_execute(job_id) -> str:
    """Run a queued job to its end and record the outcome on its row; returns the status.

    An import that is refused records the same errors the API answers with; anything
    unexpected fails the job (nothing was written) and is raised again for the log.
    """
    job = Job.objects.filter(pk=job_id, status=Job.Status.QUEUED).first()
    if job is None:
        return "missing"
    started = {"started_at": timezone.now(), "lease_until": leases.lease_end()}
    _save(job, status=Job.Status.RUNNING, **started)
    with leases.graceful_stop() as stopping, leases.Heartbeat(_renew(job), name=f"job {job.pk}"):
        return _execute(job, JobProgress(job, stage="Reading the file", stopping=stopping))


def _renew(job: Job):
    def renew(cursor) -> None:
        # As the progress reports: a row held by anything else is left to the next beat.
        cursor.execute(
            "UPDATE judgements_job SET lease_until = %s WHERE id = ("
            "SELECT id FROM judgements_job WHERE id = %s AND status = 'running' "
            "FOR UPDATE SKIP LOCKED)",
            [leases.lease_end(), job.pk],
        )

    return renew


def _execute(job: Job, progress: JobProgress) -> str:
    handed_back = False
    try:
        result = RUNNERS.get(job.kind, _run_upload)(job, progress)
    except leases.StopRequested:
        handed_back = True
        _hand_back(job)
    except ImportRejected as rejected:
        _finish(job, Job.Status.FAILED, errors=import_errors(rejected))
    except ValidationError as error:
        _finish(job, Job.Status.FAILED, errors=[_error(message) for message in error.messages])
    except Exception:
        message = "The job failed unexpectedly and wrote nothing; the error is in the server log."
        _finish(job, Job.Status.FAILED, errors=[_error(message)])
        raise
    else:
        _finish(job, Job.Status.DONE, result=result)
    finally:
        progress.close()
        if not handed_back:
            JobUpload.objects.filter(job_id=job.pk).delete()
    return job.status


def _hand_back(job: Job) -> None:
    """Queue the job again, its upload kept: its worker is stopping (a deploy) and its
    transaction rolled back, so the next worker runs it from the start."""
    from judgements.tasks import job_run

    fields = {"status": Job.Status.QUEUED, "started_at": None, "done": 0, "lease_until": None}
    _save(job, stage="Handed back by a stopping worker: waiting for the next one", **fields)
    job_run.enqueue(str(job.pk))
    logger.warning("Job %s was handed back by its stopping worker and queued again", job.pk)


def _error(message: str) -> dict:
    return LineError(None, None, message)._asdict()


def _save(job: Job, **fields) -> None:
    for name, value in fields.items():
        setattr(job, name, value)
    job.updated_at = timezone.now()
    job.save(update_fields=[*fields, "updated_at"])


def _finish(job: Job, status: str, *, result=None, errors=None) -> None:
    done = job.total if status == Job.Status.DONE else job.done
    fields = {"status": status, "finished_at": timezone.now(), "done": done, "stage": ""}
    fields["lease_until"] = None
    _save(job, result=result or {}, errors=errors or [], **fields)


def _run_upload(job: Job, progress: JobProgress) -> dict:
    upload = UPLOADS[job.kind]
    parts = JobUpload.objects.filter(job_id=job.pk).values_list("part", flat=True).distinct()
    files = {
        part: stored_chunks(job.pk, part, progress if part == "file" else None) for part in parts
    }
    if job.project is None:
        raise ValidationError("The project was deleted before the upload ran.")
    with pairs.stages_told(progress.set_stage):
        result = upload.run(
            project=job.project, files=files, user=job.created_by, options=job.options
        )
    return summary(job.kind, result)


# Deletions. A project or result list of a hundred thousand hits takes tens of seconds
# to delete (the rating queue's triggers recount every pool pair it loses), so it runs
# as a job too; the request that asks for it returns at once.


def project_delete_start(*, project: Project, user) -> Job:
    """Queue the deletion of ``project`` and everything in it."""
    return job_start(
        kind=Job.Kind.DELETE_PROJECT,
        label=project.name,
        user=user,
        project=project,
        # The id as well: the running job lets go of its project row (see below).
        options={"slug": project.slug, "project": project.pk},
        total=len(bulk.PROJECT_TABLES_SQL) + len(bulk.dependent_rows_sql()),
    )


def result_list_delete_start(*, result_list: ResultList, user) -> Job:
    """Queue the deletion of one result list and its hits; judgements stay."""
    return job_start(
        kind=Job.Kind.DELETE_RESULT_LIST,
        label=result_list.name,
        user=user,
        project=result_list.project,
        options={"result_list": result_list.pk},
        total=len(bulk.result_list_tables_sql()),
    )


def _project_deletions():
    """Deletions queued or running; one whose worker was lost (its lease ran out) does
    not count, or its project would stay hidden until a worker recovers the job."""
    lease = Q(lease_until__isnull=True) | Q(lease_until__gte=timezone.now())
    running = Q(status=Job.Status.RUNNING) & lease
    jobs = Job.objects.filter(kind=Job.Kind.DELETE_PROJECT)
    return jobs.filter(Q(status=Job.Status.QUEUED) | running)


def deleting(project: Project) -> Job | None:
    """The job deleting ``project``, while it is queued or running.

    Found by the project's id in the job's options, not by its ``project``: a running
    deletion has already let go of that (see ``_delete_project``).
    """
    return _project_deletions().filter(options__project=project.pk).first()


def projects_being_deleted():
    """The ids of projects a queued or running job is deleting, as a subquery."""
    target = Cast(KT("options__project"), models.BigIntegerField())
    return _project_deletions().annotate(target=target).values("target")


def _delete_project(job: Job, progress: JobProgress) -> dict:
    def step(done: int, statement: str) -> None:
        progress.set_stage(f"Deleting {bulk.table_of(statement)}", done=done)

    # Let go of the project first, in a transaction of its own, so that the deletion's
    # transaction (which detaches the project's other jobs) leaves this row to progress.
    Job.objects.filter(pk=job.pk).update(project=None)
    try:
        with transaction.atomic():
            # The whole project goes, so the foreign keys into it need no checking.
            bulk.skip_foreign_key_checks()
            bulk.project_delete_fast(job.options["slug"], progress=step)
    except Exception:
        _project_keep(job)
        raise
    return {"deleted": job.label}


def _project_keep(job: Job) -> None:
    """After a failed deletion (rolled back: the project is whole), point the job at its
    project again, so that its page leads back there. Never hides the first error."""
    with contextlib.suppress(DatabaseError):
        project_id = job.options.get("project")
        if Project.objects.filter(pk=project_id).exists():
            Job.objects.filter(pk=job.pk).update(project_id=project_id)


def _delete_result_list(job: Job, progress: JobProgress) -> dict:
    def step(done: int, statement: str) -> None:
        progress.set_stage(f"Deleting {bulk.table_of(statement)}", done=done)

    with transaction.atomic():
        bulk.result_list_delete_fast(job.options["result_list"], progress=step)
    return {"deleted": job.label}


RUNNERS = {
    Job.Kind.DELETE_PROJECT: _delete_project,
    Job.Kind.DELETE_RESULT_LIST: _delete_result_list,
}


def jobs_recover() -> int:
    """End as failed each running job whose worker was lost (its lease ran out), saying
    where it stopped; its upload is deleted. Returns how many (see judgements.leases)."""
    recovered = 0
    with transaction.atomic():
        for job in leases.abandoned(Job.objects):
            _finish(job, Job.Status.FAILED, errors=[_error(lost_reason(job))])
            JobUpload.objects.filter(job_id=job.pk).delete()
            if job.kind == Job.Kind.DELETE_PROJECT:
                _project_keep(job)
            logger.warning("Job %s lost its worker: ended as failed", job.pk)
            recovered += 1
    return recovered


def lost_reason(job: Job) -> str:
    """Why a job whose worker was lost failed: where it stopped, and since when."""
    where = f"at {job.percent} %" if job.percent is not None else "before its end"
    if job.stage:
        where += f" ({job.stage})"
    since = leases.last_heartbeat(job.lease_until)
    nothing = "deleted" if job.kind in DELETIONS else "imported"
    return (
        f"Its worker stopped {where}: no heartbeat since {leases.stopped_at(since)}. "
        f"Nothing was {nothing}: the job ran in one transaction, which ended with its worker."
    )


DELETIONS = (Job.Kind.DELETE_PROJECT, Job.Kind.DELETE_RESULT_LIST)
