import importlib

from django.db import migrations

# Two of the queue's functions (0007) joined common table expressions with each other.
# A CTE has no index, and PostgreSQL planned those joins as nested loops over them, so
# their cost grew with the square of the pairs a statement touched: adding a result
# list of 1,000 queries (100,000 hits, 10,000 pool pairs) to a project of 4,000
# queries took 141 s, 12.7 s of it in judgements_queue_repool and 128 s in
# judgements_queue_recount (562 million rows compared). Both now reach the other side
# per pair through an index, in time linear in the pairs, with the same answers.
#
# judgements_queue_repool: which touched pairs left the pool is asked of the hits per
# pair (their (query, document) index) instead of an anti-join with the "pooled" CTE;
# the statement's sub-queries share one snapshot, so the answer is the same.
POOLED_ANTI_JOIN = """
          AND NOT EXISTS (
              SELECT FROM pooled
              WHERE pooled.query_id = pair.query_id AND pooled.document_id = pair.document_id)
"""
POOL_CONDITION_PER_PAIR = """
          AND NOT EXISTS (
              SELECT FROM judgements_hit hit
              JOIN judgements_resultlist run ON run.id = hit.result_list_id
              JOIN judgements_project project ON project.id = run.project_id
              WHERE hit.query_id = pair.query_id AND hit.document_id = pair.document_id
                AND (hit.rank <= project.pool_depth
                     OR EXISTS (SELECT FROM judgements_queuerequest request
                                WHERE request.query_id = hit.query_id
                                  AND request.document_id = hit.document_id)))
"""


# judgements_queue_recount: each touched pair's newest event per rater is found with a
# LATERAL index range read of judgement_latest_idx, instead of a DISTINCT ON over all
# their events joined back to the touched pairs.
PAIRS_JOINED_TO_NEWEST = """
    WITH touched AS (
        SELECT DISTINCT pair.id, pair.query_id, pair.document_id, pair.project_id
        FROM judgements_queuepair pair
        JOIN unnest(pair_queries, pair_documents) AS changed (query_id, document_id)
            USING (query_id, document_id)
    ),
    newest AS (
        -- Each rater's newest event per touched pair: their current answer.
        SELECT DISTINCT ON (event.query_id, event.document_id, event.rater_id)
            event.query_id, event.document_id, event.rater_id, event.kind,
            (event.created_at AT TIME ZONE 'UTC')::date AS day
        FROM judgements_judgement event
        JOIN touched USING (query_id, document_id)
        ORDER BY event.query_id, event.document_id, event.rater_id,
                 event.created_at DESC, event.id DESC
    ),
"""
NEWEST_PER_PAIR = """
    WITH touched AS MATERIALIZED (
        SELECT DISTINCT pair.id, pair.query_id, pair.document_id, pair.project_id
        FROM judgements_queuepair pair
        JOIN unnest(pair_queries, pair_documents) AS changed (query_id, document_id)
            USING (query_id, document_id)
    ),
"""
COUNTED_FROM_NEWEST = """
        FROM touched
        LEFT JOIN newest USING (query_id, document_id)
"""
COUNTED_PER_PAIR = """
        FROM touched
        LEFT JOIN LATERAL (
            -- Each rater's newest event on this pair: their current answer.
            SELECT DISTINCT ON (event.rater_id)
                event.kind, event.rater_id, (event.created_at AT TIME ZONE 'UTC')::date AS day
            FROM judgements_judgement event
            WHERE event.query_id = touched.query_id AND event.document_id = touched.document_id
            ORDER BY event.rater_id, event.created_at DESC, event.id DESC
        ) AS newest ON true
"""


def _of_0007(name: str) -> str:
    sql = importlib.import_module("judgements.migrations.0007_queue_requests").QUEUE_REQUEST_SQL
    start = sql.index(f"CREATE OR REPLACE FUNCTION {name}(")
    return sql[start : sql.index("END $$;", start) + len("END $$;")]


def _replaced(sql: str, *changes: tuple[str, str]) -> str:
    for old, new in changes:
        if old not in sql:
            raise RuntimeError(f"0007's queue functions are not the ones this replaces: {old}")
        sql = sql.replace(old, new)
    return sql


def _linear_functions() -> str:
    repool = _replaced(
        _of_0007("judgements_queue_repool"), (POOLED_ANTI_JOIN, POOL_CONDITION_PER_PAIR)
    )
    recount = _replaced(
        _of_0007("judgements_queue_recount"),
        (PAIRS_JOINED_TO_NEWEST, NEWEST_PER_PAIR),
        (COUNTED_FROM_NEWEST, COUNTED_PER_PAIR),
    )
    return f"{recount}\n{repool}"


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0008_grade_summaries"),
    ]

    operations = [
        migrations.RunSQL(
            _linear_functions(),
            f"{_of_0007('judgements_queue_recount')}\n{_of_0007('judgements_queue_repool')}",
        ),
    ]
