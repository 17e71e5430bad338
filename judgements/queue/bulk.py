"""The bulk grading page: a query's pairs down to a depth with each rater's answer."""

from dataclasses import dataclass

from django.db import connection


@dataclass(frozen=True)
class BulkRow:
    document_id: int
    best_rank: int
    grades: int
    answer: str  # The rater's current answer as an answer choice; "" when none.


BULK_PAIRS_SQL = """
WITH ranked AS (
    -- The query's documents down to the chosen depth, at their best rank in any list.
    SELECT hit.document_id, min(hit.rank) AS best_rank
    FROM judgements_hit hit
    WHERE hit.query_id = %(query)s AND hit.rank <= %(depth)s
    GROUP BY hit.document_id
),
newest AS (
    -- Each rater's current answer on those pairs (judgements/sql/pair_grades.sql).
    SELECT answer.document_id, answer.rater_id, answer.kind, answer.grade
    FROM (SELECT coalesce(array_agg(document_id), '{}') AS documents FROM ranked) AS pool,
         judgements_current_answers(
             array_fill(%(query)s::bigint, ARRAY[cardinality(pool.documents)]),
             pool.documents) AS answer
)
SELECT ranked.document_id, ranked.best_rank,
       count(newest.kind) FILTER (WHERE newest.kind = 'grade') AS grades,
       max(newest.kind) FILTER (WHERE newest.rater_id = %(rater)s) AS own_kind,
       max(newest.grade) FILTER (WHERE newest.rater_id = %(rater)s) AS own_grade
FROM ranked
LEFT JOIN newest USING (document_id)
GROUP BY ranked.document_id, ranked.best_rank
HAVING NOT %(unjudged)s OR count(newest.kind) FILTER (WHERE newest.kind = 'grade') = 0
ORDER BY ranked.best_rank, ranked.document_id
"""


def bulk_pairs(*, rater, query, depth: int, unjudged: bool) -> list[BulkRow]:
    """The query's pairs down to ``depth`` for the bulk page, best rank first.

    ``unjudged`` keeps only pairs without any current grade.
    """
    params = {"query": query.pk, "depth": depth, "unjudged": unjudged, "rater": rater.pk}
    with connection.cursor() as cursor:
        cursor.execute(BULK_PAIRS_SQL, params)
        rows = cursor.fetchall()
    return [
        BulkRow(document_id, best_rank, grades, _answer_choice(kind, grade))
        for document_id, best_rank, grades, kind, grade in rows
    ]


def _answer_choice(kind: str | None, grade: int | None) -> str:
    if kind == "grade":
        return str(grade)
    return "cant_tell" if kind == "cant_tell" else ""


def query_neighbours(query) -> tuple:
    """The project's queries just before and after ``query`` in text order (or None)."""
    queries = query.project.queries
    before = queries.filter(text__lt=query.text).order_by("-text").first()
    after = queries.filter(text__gt=query.text).order_by("text").first()
    return before, after
