"""Leases on running work, so that work whose worker died is noticed and recovered.

A task running a job or a machine judge's run renews a lease on its row (``lease_until``)
every third of ``TASK_LEASE_SECONDS``, from a thread and a connection of its own: the
work's own transaction can hold its connection for minutes, and a thread asking a model
waits on it. A row still running whose lease has run out has lost its worker (killed,
out of memory, its machine gone). Every task worker (``manage.py task_worker``) looks
for such rows when it starts and every half lease after (``recover_abandoned``):

- a job ends as failed, saying where its worker stopped. An import or a deletion runs
  in one transaction, which died with its connection, so nothing of it was written;
  the page says so and leads back to the uploads to run it again.
- a run's pairs claimed by the dead worker are handed back and the run is queued again;
  the pairs already answered stay answered. The run's reason says so.

Pages never write (tests/test_reads_never_write.py): until a worker has recovered the
row, they read the expired lease and say the worker was lost.

A worker told to stop (SIGTERM, as a deploy sends; ``graceful_stop``) stops taking
tasks after the current one; a run's threads each finish the pair they are asking about
(recorded), claim no more, and the run is queued again for the next worker; a job hands
itself back at its next progress report (``StopRequested``: its transaction rolls back,
it is queued again with its upload kept) or, past its last report, finishes.
"""

import contextlib
import datetime as dt
import logging
import signal
import threading
from collections.abc import Callable, Iterator

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

logger = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def lease_seconds() -> float:
    return settings.TASK_LEASE_SECONDS


def lease_end() -> dt.datetime:
    """When a lease renewed now runs out."""
    return timezone.now() + dt.timedelta(seconds=lease_seconds())


def abandoned(queryset) -> list:
    """The rows of ``queryset`` (jobs or machine runs) still running whose lease has run
    out, oldest first, each locked for the caller's transaction; a row a live task holds
    (renewing its lease, reporting or claiming) is skipped, left to the next look."""
    running = queryset.filter(status="running", lease_until__lt=timezone.now())
    return list(running.select_for_update(skip_locked=True).order_by("lease_until"))


def last_heartbeat(lease_until: dt.datetime) -> dt.datetime:
    """When the heartbeat that set ``lease_until`` came."""
    return lease_until - dt.timedelta(seconds=lease_seconds())


class Heartbeat:
    """Within ``with``, call ``renew(cursor)`` every third of the lease from a thread on a
    connection of its own, closed at the end. A failed renewal is logged and tried again
    at the next beat: a database that is briefly away must not end the work."""

    def __init__(self, renew: Callable, *, name: str):
        self.renew, self.name = renew, name
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, name=f"heartbeat {name}", daemon=True)

    def __enter__(self) -> "Heartbeat":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        self.thread.join()

    def _beat(self) -> None:
        try:
            while not self.stopped.wait(lease_seconds() / 3):
                try:
                    with connection.cursor() as cursor:
                        self.renew(cursor)
                except DatabaseError as error:
                    logger.warning("The lease of %s was not renewed: %s", self.name, _line(error))
                    connection.close()
        finally:
            connection.close()


class StopRequested(Exception):
    """The worker running this task was told to stop: the work hands itself back."""


@contextlib.contextmanager
def graceful_stop() -> Iterator[threading.Event]:
    """An event set once the worker running this task is told to stop (SIGTERM, SIGINT),
    for the work to stop where it chooses. Only in the main thread of a django-tasks-db
    worker (elsewhere the event is never set): the worker's own handler still runs after
    this one, so it takes no task after this one, and a second signal ends the task."""
    from django_tasks_db.management.commands.db_worker import Worker

    stopping = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stopping
        return
    previous = {number: signal.getsignal(number) for number in STOP_SIGNALS}
    if not all(isinstance(getattr(h, "__self__", None), Worker) for h in previous.values()):
        yield stopping
        return

    def stop(number, frame) -> None:
        stopping.set()
        previous[number](number, frame)

    for number in STOP_SIGNALS:
        signal.signal(number, stop)
    try:
        yield stopping
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def recover_abandoned() -> dict[str, int]:
    """End the jobs and resume the runs whose lease has run out; returns how many of each.

    Each row is taken ``FOR UPDATE SKIP LOCKED`` with its lease checked again, so that
    workers recovering at once recover each row once, and a row a live task holds waits.
    """
    from judgements.jobs import jobs_recover
    from judgements.machine.runs import runs_recover

    return {"jobs": jobs_recover(), "runs": runs_recover()}


class Recoverer:
    """A task worker's thread that calls ``recover_abandoned`` at once and then every
    half lease, on a connection of its own; a database that is away is tried again."""

    def __init__(self):
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="recover abandoned", daemon=True)

    def start(self) -> "Recoverer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()

    def _run(self) -> None:
        try:
            while True:
                try:
                    recovered = recover_abandoned()
                except DatabaseError as error:
                    logger.warning("Abandoned work could not be looked for: %s", _line(error))
                    connection.close()
                else:
                    if any(recovered.values()):
                        logger.warning("Recovered work whose worker stopped: %s", recovered)
                if self.stopped.wait(lease_seconds() / 2):
                    return
        finally:
            connection.close()


def _line(error: Exception) -> str:
    return (str(error).strip() or type(error).__name__).splitlines()[0]


def stopped_at(when: dt.datetime | None) -> str:
    """ "05:12:03 UTC", for a reason that says since when no heartbeat came."""
    if when is None:
        return "an unknown time"
    return timezone.localtime(when, dt.UTC).strftime("%H:%M:%S UTC")
