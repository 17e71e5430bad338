"""Writing a batch's events: one COPY into the events table, fed while the log is read.

PostgreSQL stores one block of rows while this process reads the next (``CopyFeed``):
the two use a core each, so a batch takes about as long as the slower of the two
rather than their sum. The COPY goes straight into the events table, under a
savepoint. If the project already has one of the batch's event ids (the batch is
sent again), the unique index stops the COPY; the savepoint is rolled back, and the
rows, kept aside meanwhile (``EventWriter.spool``), go through a temporary table and
one INSERT that leaves out the ids already stored.
"""

import queue
import tempfile
import threading

from django.db import connection, transaction
from psycopg2 import errors as pg_errors

from judgements import bulk
from judgements.importers import ImportRejected, LineError
from judgements.staging import Staging
from searchlogs.models import SearchEvent

SPOOL_IN_MEMORY = 16 << 20
EVENTS = SearchEvent._meta.db_table


class CopyFeed:
    """``COPY ... FROM STDIN`` run by a thread of its own, fed a block at a time.

    psycopg2 sends each block with Python's lock released, so the thread that feeds
    it goes on working meanwhile. Use as a context manager: leaving it ends the COPY
    (or, on an exception, cancels it) and waits for the thread; ``error`` is then
    what the COPY raised, if anything. The connection must not be used meanwhile.
    """

    _END, _CANCEL = b"", None

    def __init__(self, sql: str):
        self.sql, self.error, self.ended = sql, None, False
        self.blocks: queue.Queue = queue.Queue(maxsize=4)
        self.thread = threading.Thread(target=self._run, name="copy-feed", daemon=True)

    def __enter__(self) -> "CopyFeed":
        # Django's connection is per thread: the COPY's thread is given this one's.
        connection.ensure_connection()
        self.raw = connection.connection
        self.thread.start()
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self._put(self._END if kind is None else self._CANCEL)
        self.thread.join()

    def send(self, data: bytes) -> None:
        if data:
            self._put(data)

    def read(self, size: int = -1) -> bytes:
        """What psycopg2 sends next (this is the COPY's file): every block waiting, so
        that this thread needs Python's lock (held by the feeding thread most of the
        time) as seldom as it can."""
        if self.ended:
            return self._END
        blocks = [self.blocks.get()]
        while blocks[-1] and not self.blocks.empty():
            blocks.append(self.blocks.get_nowait())
        if blocks[-1] is self._CANCEL:
            raise CopyCancelled
        self.ended = blocks[-1] == self._END
        return b"".join(blocks)

    def _put(self, block: bytes | None) -> None:
        # Once the COPY has failed, nothing reads the queue any more.
        while self.thread.is_alive():
            try:
                self.blocks.put(block, timeout=0.1)
                return
            except queue.Full:
                continue

    def _run(self) -> None:
        try:
            with self.raw.cursor() as cursor:
                cursor.copy_expert(self.sql, self, size=1 << 20)
        except Exception as error:
            # Raised where the COPY ends, in the thread that feeds it.
            self.error = error


class CopyCancelled(Exception):
    """The feeding thread gave the COPY up."""


class EventWriter:
    """The COPY of a batch's events, with what it needs to fall back on (see the module).

    Within ``with``: ``write`` blocks of rows (COPY's text format, in the order of
    ``columns``) while the batch has no error, ``finish``, then ``store`` them for
    good: it returns how many were new. ``cancel`` gives the COPY up (once the batch
    has an error); leaving on an exception does too.
    """

    def __init__(self, columns: dict[str, str]):
        self.columns = columns
        self.spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115
        self.sizes: list[int] = []
        self.rows, self.ended = 0, False
        self.feed: CopyFeed | None = None

    def __enter__(self) -> "EventWriter":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is not None:
            self.cancel()
        self.spool.close()

    def write(self, data: bytes, rows: int) -> None:
        if self.feed is None:
            self.checks_skipped = bulk.skip_foreign_key_checks()
            self.savepoint = transaction.savepoint_create()
            names = ", ".join(self.columns)
            self.feed = CopyFeed(f"COPY {EVENTS} ({names}) FROM STDIN").__enter__()
        self.spool.write(data)
        self.sizes.append(len(data))
        self.rows += rows
        self.feed.send(data)

    def cancel(self) -> None:
        self._end(CopyCancelled)

    def finish(self) -> None:
        """End the COPY; if it failed, undo it so that the transaction can go on."""
        self._end(None)

    def _end(self, reason) -> None:
        if self.feed is None or self.ended:
            return
        self.ended = True
        self.feed.__exit__(reason, None, None)
        if self.feed.error is None:
            transaction.savepoint_commit(self.savepoint)
        else:
            transaction.savepoint_rollback(self.savepoint)

    def store(self, project_id: int, query_ids: set[int]) -> int:
        """Make the batch's events stored (all, or the new ones); return how many."""
        if self.feed is None:
            return 0
        error = self.feed.error
        if isinstance(error, pg_errors.UniqueViolation):
            return self._insert_new()
        if error is not None:
            raise error
        if self.checks_skipped:
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL session_replication_role = origin")
            _lock_references(project_id, query_ids)
        return self.rows

    def _insert_new(self) -> int:
        staging = Staging(SearchEvent, self.columns)
        self.spool.seek(0)
        for size in self.sizes:
            staging.copy([self.spool.read(size).decode()])
        names = list(self.columns)
        return staging.insert(
            names,
            f"SELECT {', '.join(names)} FROM {staging.table} batch WHERE NOT EXISTS ("
            f"SELECT FROM {EVENTS} stored WHERE stored.project_id = batch.project_id"
            " AND stored.event_id = batch.event_id)",
        )


def _lock_references(project_id: int, query_ids: set[int]) -> None:
    """Lock the rows the events point to (as the foreign-key checks skipped would)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT count(*) FROM (SELECT FROM judgements_project WHERE id = %s"
            " FOR KEY SHARE) project), (SELECT count(*) FROM (SELECT FROM judgements_query"
            " WHERE id = ANY(%s::bigint[]) FOR KEY SHARE) queries)",
            [project_id, sorted(query_ids)],
        )
        projects, queries = cursor.fetchone()
    for found, wanted, name in ((projects, 1, "project"), (queries, len(query_ids), "query")):
        if found != wanted:
            message = f"A {name} was deleted during the import."
            raise ImportRejected([LineError(None, None, message)], 1)
