"""Locks held by another connection while a test goes on."""

import threading
from contextlib import contextmanager

from django.db import connection, transaction


@contextmanager
def held_elsewhere(take, *, timeout: float = 30):
    """Run ``take()`` in a transaction of another connection (a thread of its own) and
    keep that transaction open until the block ends: what ``take`` locked stays locked
    meanwhile. Needs a test with ``transaction=True``."""
    held, release = threading.Event(), threading.Event()

    def hold():
        try:
            with transaction.atomic():
                take()
                held.set()
                release.wait(timeout=timeout * 4)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(timeout=timeout), "the other connection did not take its locks"
        yield
    finally:
        release.set()
        holder.join(timeout=timeout)


def advisory_lock(*keys) -> None:
    """Take a transaction's advisory lock of ``keys`` (one bigint or two ints)."""
    placeholders = ", ".join(["%s"] * len(keys))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT pg_advisory_xact_lock({placeholders})", list(keys))
