"""Every migration goes back: a database migrated forward, then back to before the
judgements app, then forward again, ends with the same functions, triggers and tables."""

import subprocess
import sys
from urllib.parse import urlsplit, urlunsplit

import psycopg2
import pytest
from django.db import connection

from tests.config.test_production import ROOT, database_url, production_environment

SCRATCH = "reverse_migrations_check"

SCHEMA = """
SELECT 'function ' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ') '
       || md5(pg_get_functiondef(p.oid))
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'
UNION ALL
SELECT 'trigger ' || pg_get_triggerdef(t.oid) || ' ' || t.tgenabled::text
FROM pg_trigger t WHERE NOT t.tgisinternal
UNION ALL
SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type
FROM information_schema.columns WHERE table_schema = 'public'
UNION ALL
SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
"""


def _scratch_url() -> str:
    parts = urlsplit(database_url())
    return urlunsplit(parts._replace(path=f"/{SCRATCH}"))


def _admin(statement: str) -> None:
    settings = connection.settings_dict
    server = psycopg2.connect(
        dbname="postgres",
        user=settings["USER"] or None,
        password=settings["PASSWORD"] or None,
        host=settings["HOST"] or None,
        port=settings["PORT"] or None,
    )
    server.autocommit = True
    with server.cursor() as cursor:
        cursor.execute(statement)
    server.close()


def _migrate(*target: str) -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", *target],
        cwd=ROOT,
        env=production_environment(DATABASE_URL=_scratch_url()),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def _schema() -> list[str]:
    scratch = psycopg2.connect(_scratch_url())
    with scratch.cursor() as cursor:
        cursor.execute(SCHEMA)
        rows = sorted(row for (row,) in cursor.fetchall())
    scratch.close()
    return rows


@pytest.fixture
def scratch_database(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        _admin(f"DROP DATABASE IF EXISTS {SCRATCH}")
        _admin(f"CREATE DATABASE {SCRATCH}")
        yield
        _admin(f"DROP DATABASE IF EXISTS {SCRATCH}")


@pytest.mark.usefixtures("scratch_database")
def test_every_migration_goes_back_and_forward_again():
    _migrate()
    forward = _schema()

    _migrate("judgements", "zero")
    back = _schema()
    _migrate()

    assert not any("judgements_" in row for row in back)
    assert sum(row.startswith("function judgements_") for row in forward) >= 18
    assert _schema() == forward
