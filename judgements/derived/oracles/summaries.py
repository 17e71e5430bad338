"""The packed summaries (``judgements_querygrades``, ``judgements_rankedhits``,
``judgements_rankedgrades``) and their blocks (``judgements_rankedblock``),
recomputed with numpy and read back."""

import struct
from collections import Counter

import numpy as np

from judgements.derived.oracles.answers import current_answers, packed, pair_consensus
from judgements.models import (
    Hit,
    QueryGrades,
    RankedBlock,
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


def stored_blocks(project) -> dict:
    """The packed blocks (judgements_rankedblock) not marked stale read back as the
    RankedGrades rows they join, in ``stored_summaries``' shape, one query at a time:
    each code is looked up in the block's grades, each query's hits' grades are picked
    from the block's ranks one by one, and its judged grades counted into levels again.
    A query found in a block that its id does not belong to is kept under the key
    (list, query, policy, "in block", block); a block whose codes or rank ends do not
    add up, under (list, policy, "block", block)."""
    from judgements.packed import BLOCK_QUERIES

    rows = {}
    blocks = RankedBlock.objects.filter(result_list__project=project, stale=False).values_list(
        "result_list_id",
        "policy",
        "block",
        "header",
        "rank_ends",
        "grades",
        "width",
        "ranked",
        "judged",
    )
    for result_list, policy, block, header, rank_ends, grades, width, ranked, judged in blocks:
        header, grades, ranked, judged = (
            bytes(column) for column in (header, grades, ranked, judged)
        )
        queries = [struct.unpack_from(">qiii", header, at) for at in range(0, len(header), 20)]
        longest = max((hits for _, hits, _, _ in queries), default=0)
        ends = [sum(min(hits, r) for _, hits, _, _ in queries) for r in range(1, longest + 1)]
        codes = _block_codes(grades, width, ranked, judged)
        if (
            codes is None
            or list(rank_ends) != ends
            or len(codes[0]) != (ends[-1] if ends else 0)
            or len(codes[1]) != sum(count for _, _, count, _ in queries)
        ):
            rows[(result_list, policy, "block", block)] = (width, tuple(rank_ends), len(ranked))
            continue
        ranked_codes, judged_codes = codes
        dictionary = struct.unpack(f">{len(grades) // 8}d", grades)
        # Rank r (from 0) of each query with more than r hits, query after query.
        by_rank = iter(ranked_codes)
        hit_grades: dict[int, list[float]] = {query: [] for query, *_ in queries}
        for rank in range(longest):
            for query, hits, _, _ in queries:
                if rank < hits:
                    hit_grades[query].append(dictionary[next(by_rank)])
        seen = 0
        for query, _, count, graded in queries:
            key = (result_list, query, policy)
            if query // BLOCK_QUERIES != block:
                key = (*key, "in block", block)
            mine = judged_codes[seen : seen + count]
            levels = _levels_of([grades[8 * code : 8 * code + 8] for code in mine])
            rows[key] = (
                graded,
                packed(hit_grades[query], ">f8"),
                b"".join(value for value, _ in levels),
                packed([repeats for _, repeats in levels], ">i4"),
            )
            seen += count
    return rows


def _block_codes(grades: bytes, width: int, ranked: bytes, judged: bytes):
    """A block's codes (the hits', the judged grades'), or None unless its grades are
    distinct, its width the one for so many (the writer's rule) and every code one of
    them."""
    from judgements.block_layout import code_width

    distinct = len({grades[at : at + 8] for at in range(0, len(grades), 8)})
    if len(grades) % 8 or distinct != len(grades) // 8 or width != code_width(distinct):
        return None
    if len(ranked) % width or len(judged) % width:
        return None
    kind = {1: "B", 2: "H", 4: "I"}[width]
    ranked_codes = struct.unpack(f">{len(ranked) // width}{kind}", ranked)
    judged_codes = struct.unpack(f">{len(judged) // width}{kind}", judged)
    if any(code >= distinct for code in ranked_codes + judged_codes):
        return None
    return ranked_codes, judged_codes


def _levels_of(values: list[bytes]) -> list[tuple[bytes, int]]:
    """Runs of equal values (compared by their bytes) and their lengths, in order: a
    query's judged grades, highest first, as RankedGrades keeps them."""
    levels: list[tuple[bytes, int]] = []
    for value in values:
        if levels and levels[-1][0] == value:
            levels[-1] = (value, levels[-1][1] + 1)
        else:
            levels.append((value, 1))
    return levels


def stale_blocks(project) -> set[tuple[int, str, int]]:
    """The (list, policy, block) of the blocks marked stale: they wait for a reader."""
    blocks = RankedBlock.objects.filter(result_list__project=project, stale=True)
    return set(blocks.values_list("result_list_id", "policy", "block"))


def packed_state(project) -> tuple[set[int], set[str]]:
    """The project's queries waiting for a packed fill, and the policies filled."""
    from judgements.models import PackedPolicy

    waiting = QueryGrades.objects.filter(query__project=project, stale=True)
    return (
        set(waiting.values_list("query_id", flat=True)),
        set(PackedPolicy.objects.values_list("name", flat=True)),
    )
