"""Rows staged with COPY in a temporary table, then written with one INSERT ... SELECT.

The importers of judgements stage their rows here, so that an upload of any size is one
statement for the triggers (and one lock order for the queue); so does a search-log batch
sent again, to leave out the events already stored (searchlogs.writing).
"""

import io
import uuid
from collections.abc import Iterable
from datetime import datetime

from django.db import connection

from judgements import bulk
from judgements.importers import ImportRejected, LineError

COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


class Staging:
    """Rows COPY'd batch by batch into a temporary table, then written in one INSERT.

    The rating queue's triggers (migration 0004) lock the pool rows that a statement
    touches, in a fixed order. One INSERT for the whole import keeps to that order,
    where many batches, each locking its own rows, could deadlock against raters
    grading at the same time. The table is dropped when the transaction ends.
    """

    def __init__(self, model, columns: dict[str, str], *, order: str = ""):
        self.model, self.columns, self.order = model, columns, order
        self.table = f"import_{uuid.uuid4().hex}"
        self.empty = True

    def copy(self, lines: Iterable[str]) -> None:
        """Append rows given as lines of COPY's text format (see ``copy_value``)."""
        self._copy("", io.StringIO("".join(lines)))

    def copy_binary(self, data: bytes) -> None:
        """Append rows given in COPY's binary format, every column in order (see
        ``config.pgcopy.binary_copy_data``)."""
        self._copy(" (FORMAT binary)", io.BytesIO(data))

    def _copy(self, options: str, data) -> None:
        with connection.cursor() as cursor:
            if self.empty:
                definition = ", ".join(f"{name} {kind}" for name, kind in self.columns.items())
                cursor.execute(f"CREATE TEMP TABLE {self.table} ({definition}) ON COMMIT DROP")
                self.empty = False
            cursor.cursor.copy_expert(f"COPY {self.table} FROM STDIN{options}", data)

    def insert(self, names: list[str], select: str, params: dict | None = None) -> int:
        """INSERT the model's ``names`` from ``select`` (over the staging table); return
        how many rows went in."""
        if self.empty:
            return 0
        with connection.cursor() as cursor:
            # Checking each row's foreign keys at commit costs more than the rest of the
            # import; every id was resolved in this transaction, and locking the rows
            # they point to (below) keeps them from being deleted until it commits.
            skipped = bulk.skip_foreign_key_checks()
            cursor.execute(
                f"INSERT INTO {self.model._meta.db_table} ({', '.join(names)}) {select}", params
            )
            inserted = cursor.rowcount
            if skipped:
                cursor.execute("SET LOCAL session_replication_role = origin")
                self._lock_referenced_rows(cursor)
        return inserted

    def _lock_referenced_rows(self, cursor) -> None:
        keys = [key for key in self.model._meta.fields if key.many_to_one]
        keys = [key for key in keys if key.column in self.columns]
        for column, parent in ((key.column, key.related_model) for key in keys):
            # The distinct keys (NULLs aside, as count(DISTINCT) leaves them) once,
            # hashed, for both counts: a count(DISTINCT) sorts the staged rows and the IN
            # hashes them again (0.9 s against 0.55 s for a million rows' queries and
            # documents, on generated-load).
            cursor.execute(
                f"WITH wanted AS MATERIALIZED (SELECT DISTINCT {column} AS id FROM {self.table}"
                f"  WHERE {column} IS NOT NULL)"
                " SELECT (SELECT count(*) FROM wanted),"
                f" (SELECT count(*) FROM (SELECT FROM {parent._meta.db_table}"
                "  WHERE id IN (SELECT id FROM wanted) FOR KEY SHARE) locked)"
            )
            wanted, locked = cursor.fetchone()
            if locked != wanted:
                message = f"A {parent._meta.verbose_name} was deleted during the import."
                raise ImportRejected([LineError(None, None, message)], 1)


def copy_value(value) -> str:
    """A value in COPY's text format: \\N for NULL, tabs and line ends escaped."""
    if value is None:
        return "\\N"
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value).translate(COPY_ESCAPES) if isinstance(value, str) else str(value)
