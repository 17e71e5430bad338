"""judgements/sql/ holds the current text of every function and trigger: the test
database, migrated from scratch, has exactly those, defined exactly so."""

import re

import pytest
from django.db import connection, transaction

from judgements import sql

pytestmark = pytest.mark.django_db

SCRATCH = "sql_files_check"


def _files() -> list[str]:
    return [
        statement for concern in sql.CONCERNS for statement in sql.statements(sql.current(concern))
    ]


def _functions_in(schema: str) -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')',
                   pg_get_functiondef(p.oid)
            FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = %s
            """,
            [schema],
        )
        return {name: text.replace(f"{schema}.", "") for name, text in cursor.fetchall()}


def _normal(trigger: str) -> str:
    trigger = trigger.replace("CREATE OR REPLACE TRIGGER", "CREATE TRIGGER")
    return re.sub(r"\s+", " ", trigger.replace("public.", "")).strip().rstrip(";")


def _function_differences() -> list[str]:
    """Functions missing from one side, or defined differently."""
    in_database = _functions_in("public")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"CREATE SCHEMA {SCRATCH}")
        cursor.execute(f"SET LOCAL search_path TO {SCRATCH}")
        cursor.execute("SET LOCAL check_function_bodies TO off")
        for statement in _files():
            if statement.startswith("CREATE OR REPLACE FUNCTION"):
                cursor.execute(statement)
        in_files = _functions_in(SCRATCH)
        cursor.execute("SET LOCAL search_path TO public")
        transaction.set_rollback(True)
    return sorted(
        name
        for name in in_files.keys() | in_database.keys()
        if in_files.get(name) != in_database.get(name)
    )


def test_every_function_in_the_database_is_the_one_its_file_defines():
    assert len(_functions_in("public")) >= 18
    assert _function_differences() == []


def test_a_function_changed_in_the_database_is_a_difference():
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "CREATE OR REPLACE FUNCTION judgements_refuse_update() RETURNS trigger"
            " LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$"
        )
        cursor.execute(
            "CREATE FUNCTION judgements_stray() RETURNS integer LANGUAGE sql AS $$ SELECT 1 $$"
        )
        differences = _function_differences()
        transaction.set_rollback(True)

    assert differences == ["judgements_refuse_update()", "judgements_stray()"]


def test_every_trigger_in_the_database_is_the_one_its_file_defines_and_fires_as_it_says():
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT pg_get_triggerdef(t.oid), c.relname, t.tgname, t.tgenabled
            FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE NOT t.tgisinternal AND n.nspname = 'public'
            """
        )
        rows = cursor.fetchall()
    files = _files()

    assert sorted(
        _normal(s) for s in files if s.startswith("CREATE OR REPLACE TRIGGER")
    ) == sorted(_normal(definition) for definition, *_ in rows)
    always = sorted(
        f"ALTER TABLE {table} ENABLE ALWAYS TRIGGER {name};"
        for _, table, name, enabled in rows
        if enabled == "A"
    )
    assert sorted(s for s in files if s.startswith("ALTER TABLE")) == always
