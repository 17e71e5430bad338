"""Fast bulk writes for large imports and generated load: COPY and reserved id ranges."""

import io
from contextlib import contextmanager

import numpy as np
from django.apps import apps
from django.db import connection, transaction
from django.db.models import ForeignKey

from config import pgcopy


def reserve_ids(model, count: int) -> int:
    """Reserve ``count`` consecutive primary keys of ``model`` and return the first.

    The table is locked until the transaction ends, so that no other writer takes an
    id from the range between ``nextval`` and ``setval``.
    """
    table = model._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f'LOCK TABLE "{table}" IN SHARE ROW EXCLUSIVE MODE')
        cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
        (sequence,) = cursor.fetchone()
        cursor.execute("SELECT nextval(%s)", [sequence])
        (first,) = cursor.fetchone()
        cursor.execute("SELECT setval(%s, %s)", [sequence, first + max(count, 1) - 1])
    return first


def copy_columns(model, columns: dict[str, np.ndarray | list]) -> int:
    """COPY equally long columns into ``model``'s table; return the number of rows.

    The columns go over in COPY's binary format, laid out by numpy
    (``config.pgcopy.binary_copy_data``): no value is formatted as text, and none is
    parsed back. Timestamps are numpy datetime64 in UTC; no value may be NULL.
    """
    names = list(columns)
    rows = len(columns[names[0]])
    if rows == 0:
        return 0
    table = model._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attname, format_type(atttypid, NULL) FROM pg_attribute"
            " WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
            [table],
        )
        types = dict(cursor.fetchall())
        data = pgcopy.binary_copy_data([(columns[name], types[name]) for name in names])
        quoted = ", ".join(f'"{name}"' for name in names)
        cursor.cursor.copy_expert(
            f'COPY "{table}" ({quoted}) FROM STDIN WITH (FORMAT binary)', io.BytesIO(data)
        )
    return rows


def skip_foreign_key_checks() -> bool:
    """Skip foreign-key triggers until the transaction ends, where the role allows it.

    Django's foreign keys are DEFERRABLE INITIALLY DEFERRED, so millions of COPY'd
    rows queue millions of checks that run at COMMIT and take minutes. Generated rows
    reference only ids reserved in the same transaction, so the checks cannot fail.
    Only a superuser may set ``session_replication_role``; for other roles the checks
    run as usual (slower, equally correct). Returns whether they are skipped.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        (is_superuser,) = cursor.fetchone()
        if is_superuser:
            cursor.execute("SET LOCAL session_replication_role = replica")
    return bool(is_superuser)


PROJECT_TABLES_SQL = [
    # Jobs about the project stay, so that a finished deletion can still be read.
    "UPDATE judgements_job SET project_id = NULL WHERE project_id = %(project)s",
    # The packed summaries go first, so that the triggers of migration 0008 find no
    # query left to recompute when pair grades and hits go.
    "DELETE FROM judgements_rankedgrades WHERE result_list_id IN"
    " (SELECT id FROM judgements_resultlist WHERE project_id = %(project)s)",
    "DELETE FROM judgements_rankedhits WHERE result_list_id IN"
    " (SELECT id FROM judgements_resultlist WHERE project_id = %(project)s)",
    "DELETE FROM judgements_querygrades WHERE query_id IN"
    " (SELECT id FROM judgements_query WHERE project_id = %(project)s)",
    # The packed log before the judgements too: its delete trigger recounts only the
    # rows there are.
    "DELETE FROM judgements_querylog WHERE project_id = %(project)s",
    # Pair grades go before the judgements, so that the delete trigger on judgements
    # (migration 0005) finds no pair left to recount.
    "DELETE FROM judgements_pairgrade WHERE project_id = %(project)s",
    "DELETE FROM judgements_queuerequest WHERE project_id = %(project)s",
    "DELETE FROM judgements_queueskip WHERE project_id = %(project)s",
    # Machine judges' rows point at judgements, queries and documents: they go first.
    *(
        f"DELETE FROM judgements_{table} WHERE judge_id IN"
        " (SELECT id FROM judgements_machinejudge WHERE project_id = %(project)s)"
        for table in ("machinecanary", "machineanswer")
    ),
    "DELETE FROM judgements_machinerunitem WHERE run_id IN (SELECT run.id FROM"
    " judgements_machinerun run JOIN judgements_machinejudge judge ON judge.id = run.judge_id"
    " WHERE judge.project_id = %(project)s)",
    "DELETE FROM judgements_machinerun WHERE judge_id IN"
    " (SELECT id FROM judgements_machinejudge WHERE project_id = %(project)s)",
    "DELETE FROM judgements_machinegate WHERE project_id = %(project)s",
    # Search endpoints: their captures and tries point at result lists and templates.
    *(
        f"DELETE FROM judgements_{table} WHERE endpoint_id IN"
        " (SELECT id FROM judgements_searchendpoint WHERE project_id = %(project)s)"
        for table in ("capture", "captureschedule", "searchtemplate")
    ),
    "DELETE FROM judgements_searchendpoint WHERE project_id = %(project)s",
    # The pool and its leases go by name too, so that deleting the hits below can skip
    # the queue's triggers (judgements.derived.rebuild.deferred); the tallies follow.
    "DELETE FROM judgements_queuelease WHERE query_id IN"
    " (SELECT id FROM judgements_query WHERE project_id = %(project)s)",
    "DELETE FROM judgements_queuepair WHERE project_id = %(project)s",
    "DELETE FROM judgements_queuepooltally WHERE project_id = %(project)s",
    "DELETE FROM judgements_queueratertally WHERE project_id = %(project)s",
    # Before the judgements, so that their delete trigger finds no row to count again.
    "DELETE FROM judgements_queryactivity WHERE project_id = %(project)s",
    "DELETE FROM judgements_judgement WHERE query_id IN"
    " (SELECT id FROM judgements_query WHERE project_id = %(project)s)",
    # The judges' accounts stay (without a password or a role, they cannot sign in).
    "DELETE FROM judgements_machinejudge WHERE project_id = %(project)s",
    "DELETE FROM judgements_hit WHERE query_id IN"
    " (SELECT id FROM judgements_query WHERE project_id = %(project)s)",
    "DELETE FROM judgements_resultlist WHERE project_id = %(project)s",
    "DELETE FROM judgements_document WHERE project_id = %(project)s",
    "DELETE FROM judgements_query WHERE project_id = %(project)s",
    "DELETE FROM judgements_project WHERE id = %(project)s",
]


def project_delete_fast(slug: str, *, progress=None) -> None:
    """Delete a project and its rows with set-based SQL.

    ``Project.delete()`` collects every related row in Python first, which takes
    minutes for a generated project of millions of rows. Rows of other apps that
    point at the project's rows (stored metrics, search logs) go first, so that
    nothing is left behind even when foreign-key checks are skipped. ``progress`` is
    called with the number of statements run and the next one, before each.
    """
    from judgements.derived.rebuild import deferred

    # All or nothing, whoever calls it: outside a transaction each statement would
    # commit alone (and the triggers' deferral needs one).
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT id FROM judgements_project WHERE slug = %s", [slug])
        row = cursor.fetchone()
        if row is None:
            return
        # Every derived row of the project is deleted by name above: no trigger needs to
        # recount what goes.
        with deferred():
            _run_all(cursor, [*dependent_rows_sql(), *PROJECT_TABLES_SQL], row[0], progress)


def _run_all(cursor, statements: list[str], key: int, progress) -> None:
    for done, statement in enumerate(statements):
        if progress is not None:
            progress(done, statement)
        cursor.execute(statement, {"project": key, "result_list": key})


def table_of(statement: str) -> str:
    """The table a DELETE or UPDATE statement writes, without its app prefix, for people."""
    words = statement.split()
    table = words[words.index("FROM") + 1] if words[0] == "DELETE" else words[1]
    return table.split("_", 1)[-1]


RESULT_LIST_TABLES_SQL = [
    # As for a project: the packed summaries first, so that the triggers on hits find
    # nothing of this list left to recompute; the pool is recounted by those triggers.
    "DELETE FROM judgements_rankedgrades WHERE result_list_id = %(result_list)s",
    "DELETE FROM judgements_rankedhits WHERE result_list_id = %(result_list)s",
    "DELETE FROM judgements_hit WHERE result_list_id = %(result_list)s",
    # A capture (or try) of the list, or compared with it, stays without it.
    "UPDATE judgements_capture SET result_list_id = NULL WHERE result_list_id = %(result_list)s",
    "UPDATE judgements_capture SET baseline_id = NULL WHERE baseline_id = %(result_list)s",
    "DELETE FROM judgements_resultlist WHERE id = %(result_list)s",
]


def result_list_tables_sql() -> list[str]:
    """Every statement that deletes a result list, rows of other apps that point at it
    (stored metrics) first."""
    from judgements.models import ResultList

    owned = {ResultList: "%(result_list)s"}
    return [*dependent_rows_sql(owned), *RESULT_LIST_TABLES_SQL]


def result_list_delete_fast(result_list_id: int, *, progress=None) -> None:
    """Delete one result list and its hits with set-based SQL; judgements stay.

    Unlike a whole project, the pool changes: foreign keys are checked and the queue's
    triggers run, so pairs only this list brought into the pool leave it.
    """
    with connection.cursor() as cursor:
        _run_all(cursor, result_list_tables_sql(), result_list_id, progress)


def dependent_rows_sql(owned: dict | None = None) -> list[str]:
    """A DELETE for each foreign key from another app to the ``owned`` rows (by default
    a project's)."""
    from judgements.models import Document, Project, Query, ResultList

    owned = owned or {
        Project: "%(project)s",
        Query: "SELECT id FROM judgements_query WHERE project_id = %(project)s",
        Document: "SELECT id FROM judgements_document WHERE project_id = %(project)s",
        ResultList: "SELECT id FROM judgements_resultlist WHERE project_id = %(project)s",
    }
    statements = []
    # Auto-created models are the many-to-many tables, such as a project's raters.
    for model in apps.get_models(include_auto_created=True):
        if model._meta.app_label == "judgements" and not model._meta.auto_created:
            continue
        for field in model._meta.concrete_fields:
            if isinstance(field, ForeignKey) and field.related_model in owned:
                statements.append(
                    f"DELETE FROM {model._meta.db_table} WHERE {field.column} IN "
                    f"({owned[field.related_model]})"
                )
    return statements


def estimated_rows(model) -> int:
    """PostgreSQL's estimate of a table's row count (instant, unlike COUNT(*))."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [model._meta.db_table]
        )
        return max(int(cursor.fetchone()[0]), 0)


def analyze(*models) -> None:
    """Refresh the planner's statistics of ``models``' tables after a bulk load, so that
    the statements that follow (triggers included) are planned for their real size."""
    with connection.cursor() as cursor:
        for model in models:
            cursor.execute(f'ANALYZE "{model._meta.db_table}"')


# Adding a row to a table's indexes one by one costs a multiple m of what building them
# costs per row, so building the indexes of old and new rows alike pays while the old
# ones number less than (m - 1) times the new. Hits: m is about 2.8 (generate_load's 3M
# hits and 1M judgements, bench_generate_load: 27.8 s more to COPY them into indexed
# tables than into bare ones, 9.8 s to index them afterwards). Judgements, whose five
# indexes take each new row in the middle (generated events share their 30 days with
# every other generated project's): about 6 (1M events beside 2.35M, make bench's
# database, quiet: 17.0 s into the indexed table; 3.8 s into the bare one and 7.3 s to
# index all 3.35M after).
INDEX_REBUILD_RATIO = 2
INDEX_REBUILD_RATIOS = {"judgements_judgement": 5}


def rebuild_pays(new_rows: int, model) -> bool:
    """Whether dropping ``model``'s indexes for a load of ``new_rows`` and building them
    again after (``indexes_deferred``) costs less than adding each row to them."""
    ratio = INDEX_REBUILD_RATIOS.get(model._meta.db_table, INDEX_REBUILD_RATIO)
    return new_rows * ratio >= estimated_rows(model)


@contextmanager
def indexes_deferred(*models):
    """Drop the secondary indexes of ``models``' tables and rebuild them on exit.

    Building an index once over sorted data is many times faster than updating it
    for every row of a bulk COPY. Unique constraints are dropped and re-added too,
    so they are checked again, all at once, when they are re-added. Must run inside
    a transaction: if anything fails, the drops roll back with it.
    """
    saved = []
    with connection.cursor() as cursor:
        for model in models:
            saved += _drop_secondary_indexes(cursor, model._meta.db_table)
    yield
    with connection.cursor() as cursor:
        # Sorting in memory instead of in temporary files makes the rebuild several
        # times faster; SET LOCAL ends with the transaction.
        cursor.execute("SET LOCAL maintenance_work_mem = '512MB'")
        for statement in saved:
            cursor.execute(statement)


def _drop_secondary_indexes(cursor, table: str) -> list[str]:
    cursor.execute(
        """
        SELECT c.conname, pg_get_constraintdef(c.oid)
        FROM pg_constraint c WHERE c.conrelid = %s::regclass AND c.contype = 'u'
        """,
        [table],
    )
    recreate = [
        f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" {definition}'
        for name, definition in cursor.fetchall()
    ]
    for statement in recreate:
        name = statement.split('ADD CONSTRAINT "')[1].split('"')[0]
        cursor.execute(f'ALTER TABLE "{table}" DROP CONSTRAINT "{name}"')
    cursor.execute(
        """
        SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
        FROM pg_index i
        WHERE i.indrelid = %s::regclass AND NOT i.indisprimary
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
        """,
        [table],
    )
    for name, definition in cursor.fetchall():
        cursor.execute(f"DROP INDEX {name}")
        recreate.append(definition)
    return recreate
