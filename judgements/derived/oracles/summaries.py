"""The packed summaries (``judgements_querygrades``, ``judgements_rankedhits``,
``judgements_rankedgrades``), recomputed with numpy and read back."""

from collections import Counter

import numpy as np

from judgements.derived.oracles.answers import current_answers, packed, pair_consensus
from judgements.models import (
    Hit,
    QueryGrades,
    RankedGrades,
    RankedHits,
)
from metrics.core.consensus import policy_names

# judgements_querygrades, judgements_rankedhits, judgements_rankedgrades


def project_hits(project) -> dict[tuple[int, int], list[int]]:
    """Each (result list, query)'s document ids in rank order."""
    rows = (
        Hit.objects.for_project(project)
        .order_by("result_list_id", "query_id", "rank")
        .values_list("result_list_id", "query_id", "document_id")
    )
    hits: dict = {}
    for result_list, query, document in rows.iterator(chunk_size=50_000):
        hits.setdefault((result_list, query), []).append(document)
    return hits


def expected_summaries(project, answers=None, hits=None) -> tuple[dict, dict, dict]:
    """(querygrades, rankedhits, rankedgrades) from the log's current grades and the hits."""
    answers = current_answers(project) if answers is None else answers
    hits = project_hits(project) if hits is None else hits
    judged: dict = {}
    for (query, document), row in pair_consensus(answers).items():
        if row[0] > 0:
            judged.setdefault(query, {})[document] = row
    queries = set(judged) | {query for _, query in hits}
    query_rows = {
        query: (
            sum(row[0] for row in judged.get(query, {}).values()),
            len(judged.get(query, {})),
            project.pk,
        )
        for query in queries
    }
    hit_rows = {key: (len(documents), packed(documents, ">i8")) for key, documents in hits.items()}
    ideals = {query: _ideal_levels(rows) for query, rows in judged.items()}
    grade_rows = {}
    for (result_list, query), documents in hits.items():
        by_document = judged.get(query, {})
        for number, policy in enumerate(policy_names()):
            ranked = [
                by_document[d][3 + number] if d in by_document else np.nan for d in documents
            ]
            ideal, counts = ideals.get(query, {}).get(policy, ([], []))
            grade_rows[(result_list, query, policy)] = (
                query_rows[query][0],
                packed(ranked, ">f8"),
                packed(ideal, ">f8"),
                packed(counts, ">i4"),
            )
    return query_rows, hit_rows, grade_rows


def _ideal_levels(rows: dict) -> dict[str, tuple[list, list]]:
    """Per policy, each distinct consensus grade of the judged documents, highest first,
    and how many documents have it."""
    levels = {}
    for number, policy in enumerate(policy_names()):
        counted = Counter(row[3 + number] for row in rows.values())
        ideal = sorted(counted, reverse=True)
        levels[policy] = (ideal, [counted[grade] for grade in ideal])
    return levels


def stored_summaries(project) -> tuple[dict, dict, dict]:
    queries = QueryGrades.objects.filter(query__project=project)
    query_rows = {
        query: (graded, judged, project_id)
        for query, graded, judged, project_id in queries.values_list(
            "query_id", "graded", "judged", "project_id"
        )
    }
    hits = RankedHits.objects.filter(query__project=project)
    hit_rows = {
        (result_list, query): (count, bytes(documents))
        for result_list, query, count, documents in hits.values_list(
            "result_list_id", "query_id", "hits", "documents"
        ).iterator(chunk_size=20_000)
    }
    grades = RankedGrades.objects.filter(query__project=project).values_list(
        "result_list_id", "query_id", "policy", "graded", "ranked", "ideal", "ideal_documents"
    )
    grade_rows = {
        (result_list, query, policy): (graded, bytes(ranked), bytes(ideal), bytes(counts))
        for result_list, query, policy, graded, ranked, ideal, counts in grades.iterator(
            chunk_size=20_000
        )
    }
    return query_rows, hit_rows, grade_rows


def packed_state(project) -> tuple[set[int], set[str]]:
    """The project's queries waiting for a packed fill, and the policies filled."""
    from judgements.models import PackedPolicy

    waiting = QueryGrades.objects.filter(query__project=project, stale=True)
    return (
        set(waiting.values_list("query_id", flat=True)),
        set(PackedPolicy.objects.values_list("name", flat=True)),
    )
