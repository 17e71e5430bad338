"""A task for tests/config/test_database_outage.py: proof that the worker runs tasks."""

from pathlib import Path

from django.tasks import task


@task()
def touch(path: str) -> None:
    Path(path).write_text("ran")
