"""What a test can count of the database's work: rows read from tables."""

from django.db import connection


def rows_read(tables: list[str]) -> int:
    """Rows this transaction has read from ``tables`` so far (sequential and index)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum(coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)), 0) "
            "FROM pg_stat_xact_user_tables WHERE relname = ANY(%s)",
            [tables],
        )
        return int(cursor.fetchone()[0])
