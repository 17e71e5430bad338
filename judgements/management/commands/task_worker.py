"""Run the task worker (django-tasks-db's ``db_worker``), and outlive database outages.

``db_worker`` exits on the first error reaching the database, and a worker that is
gone runs no metrics refresh until someone restarts it. This one closes its
connections and tries again, waiting 1 s, then 2, 4, ... up to ``--retry-max``
seconds between tries, and logs each outage once per try. Its options are
``db_worker``'s.

It also recovers work whose worker died (judgements.leases): a thread looks for jobs and
machine judge runs whose lease ran out when the worker starts, and every half lease.
"""

import logging
import time

from django.db import connections
from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand

from config.health import DATABASE_DOWN
from judgements.leases import Recoverer

logger = logging.getLogger("django_tasks_db")
FIRST_RETRY_SECONDS = 1.0


class Command(DbWorkerCommand):
    help = "Run the database task worker; retry the database instead of exiting when it is down."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument(
            "--retry-max",
            type=float,
            default=30.0,
            help="The longest wait between tries to reach the database, in seconds.",
        )

    def handle(self, *args, retry_max: float, **options):
        recoverer = Recoverer().start()
        try:
            return self._handle(*args, retry_max=retry_max, **options)
        finally:
            recoverer.stop()

    def _handle(self, *args, retry_max: float, **options):
        delay = FIRST_RETRY_SECONDS
        while True:
            started = time.monotonic()
            try:
                return super().handle(*args, **options)
            except DATABASE_DOWN as error:
                connections.close_all()
                if time.monotonic() - started > 2 * retry_max:
                    delay = FIRST_RETRY_SECONDS  # It ran well for a while: a new outage.
                reason = (str(error).strip() or type(error).__name__).splitlines()[0]
                logger.warning(
                    "The database is unavailable (%s); the worker tries again in %.0f s.",
                    reason,
                    delay,
                )
                time.sleep(delay)
                delay = min(2 * delay, retry_max)
