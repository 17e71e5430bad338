"""Every derived table of a project recomputed in Python from its sources, and read back.

Each oracle recomputes one table from the judgement log, the hits, the projects and
analysts' requests, without the SQL that keeps it (``judgements/sql/``): consensus
comes from the numpy core (``metrics.core.consensus``), the packed rows are packed
with numpy, the pool is the rule of ``judgements.queue`` written out. ``stored``
reads what the table holds in the same shape, so that the two compare with ``==``;
floats compare by their bits. ``manage.py derived_state`` and the tests use these
functions, and nothing else decides what a derived table should hold.
"""

import datetime as dt
import struct
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from django.db import connection
from django.db.models import Max, Q
from django.utils import timezone

from judgements.models import (
    Hit,
    Judgement,
    LogBlock,
    LogBlockMark,
    PairGrade,
    QueryActivity,
    QueryGrades,
    QueuePair,
    QueuePoolTally,
    QueueRaterTally,
    QueueRequest,
    RankedBlock,
    RankedGrades,
    RankedHits,
)
from metrics.core.consensus import consensus, policy_names

# Binary COPY's time unit, in which the packed log keeps its spans' times.
POSTGRES_EPOCH = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)


class Bits(float):
    """A float that equals another only bit for bit (so 0.0 and -0.0 differ), and
    prints as a float."""

    def __eq__(self, other) -> bool:
        return isinstance(other, float) and _bits(self) == _bits(other)

    def __ne__(self, other) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(_bits(self))


def _bits(value: float) -> int:
    return int(np.float64(value).view(np.int64))


def bits(value) -> Bits | None:
    """A float compared bit for bit (None for None or NaN)."""
    if value is None or np.isnan(value):
        return None
    return Bits(value)


def packed(values, kind: str) -> bytes:
    return np.asarray(values, dtype=kind).tobytes()


def current_answers(project) -> dict[tuple[int, int], dict[int, tuple]]:
    """Each rater's newest event per pair (their current answer), as (kind, grade,
    created_at) by rater id, per (query id, document id)."""
    events = (
        Judgement.objects.for_project(project)
        .current()
        .values_list("query_id", "document_id", "rater_id", "kind", "grade", "created_at")
    )
    answers: dict = {}
    for query, document, rater, kind, grade, created_at in events.iterator(chunk_size=20_000):
        answers.setdefault((query, document), {})[rater] = (kind, grade, created_at)
    return answers


def pair_consensus(answers: dict) -> dict[tuple[int, int], tuple]:
    """Each pair's current grades: (count, lowest, highest, consensus by policy, in the
    order of ``policy_names()``)."""
    pairs = list(answers)
    grades = [sorted(grade for grade, _ in _graded(answers[pair])) for pair in pairs]
    offsets = np.concatenate([[0], np.cumsum([len(each) for each in grades])]).astype(np.int64)
    flat = np.fromiter((g for each in grades for g in each), dtype=np.float64, count=offsets[-1])
    by_policy = [consensus(flat, offsets, policy) for policy in policy_names()]
    return {
        pair: (
            len(grades[n]),
            grades[n][0] if grades[n] else None,
            grades[n][-1] if grades[n] else None,
            *[float(values[n]) for values in by_policy],
        )
        for n, pair in enumerate(pairs)
    }


def _graded(answers: dict) -> list[tuple[int, int]]:
    """A pair's current grades as (grade, rater), sorted by grade then rater: the order
    of judgements_pairgrade's aligned arrays."""
    return sorted((grade, rater) for rater, (kind, grade, _) in answers.items() if kind == "grade")


# judgements_pairgrade


def expected_pair_grades(project, answers=None) -> dict:
    """Each pair's (count, lowest, highest, grades sorted, their raters aligned)."""
    answers = current_answers(project) if answers is None else answers
    expected = {}
    for pair, pair_answers in answers.items():
        graded = _graded(pair_answers)
        grades = tuple(grade for grade, _ in graded)
        expected[pair] = (
            len(grades),
            grades[0] if grades else None,
            grades[-1] if grades else None,
            grades,
            tuple(rater for _, rater in graded),
        )
    return expected


def stored_pair_grades(project) -> dict:
    rows = PairGrade.objects.filter(project=project).values_list(
        "query_id", "document_id", "graded", "lowest", "highest", "grades", "raters"
    )
    return {
        (query, document): (graded, lowest, highest, tuple(grades), tuple(raters))
        for query, document, graded, lowest, highest, grades, raters in rows.iterator(
            chunk_size=20_000
        )
    }


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


# judgements_logblock


def log_span_blocks(project) -> tuple[set[int], set[int]]:
    """The blocks of the project's queries (judgements.log_blocks.BLOCK_QUERIES), and
    those of them that hold their events: written, with no mark left."""
    from judgements.log_blocks import BLOCK_QUERIES

    blocks = {query // BLOCK_QUERIES for query in project.queries.values_list("pk", flat=True)}
    marked = set(LogBlockMark.objects.filter(block__in=blocks).values_list("block", flat=True))
    written = set(LogBlock.objects.filter(block__in=blocks).values_list("block", flat=True))
    return blocks, written - marked


def expected_log_spans(project, blocks: set[int]) -> dict:
    """Each human grade event of the project's queries in ``blocks``, as the span of time
    it was its rater's current answer: (query, document, start, end) in microseconds
    since 2000-01-01 UTC (end None: no later event of the rater on the pair) -> the
    grades of such spans, sorted. The rule of Judgement.objects.current(), event by event."""
    from judgements.log_blocks import BLOCK_QUERIES

    events = (
        Judgement.objects.for_project(project)
        .exclude(source="machine")
        .order_by("query_id", "document_id", "rater_id", "created_at", "id")
        .values_list("query_id", "document_id", "rater_id", "kind", "grade", "created_at")
    )
    spans: dict = {}
    previous = None
    for event in events.iterator(chunk_size=20_000):
        query, document, rater, _, _, created_at = event
        if previous is not None and previous[:3] == (query, document, rater):
            _add_span(spans, previous, _microseconds(created_at))
        elif previous is not None:
            _add_span(spans, previous, None)
        previous = event
    if previous is not None:
        _add_span(spans, previous, None)
    return {
        key: tuple(sorted(grades))
        for key, grades in spans.items()
        if key[0] // BLOCK_QUERIES in blocks
    }


def _add_span(spans: dict, event: tuple, end: int | None) -> None:
    query, document, _, kind, grade, created_at = event
    if kind == "grade":
        key = (query, document, _microseconds(created_at), end)
        spans.setdefault(key, []).append(grade)


def _microseconds(moment: dt.datetime) -> int:
    return (moment - POSTGRES_EPOCH) // dt.timedelta(microseconds=1)


def stored_log_spans(project, blocks: set[int]) -> dict:
    """``blocks`` of judgements_logblock read back in ``expected_log_spans``' shape, the
    spans of the project's queries only; a block whose spans are out of order (pair,
    then grade) is kept under the key ("order", block)."""
    from judgements.log_blocks import GRADE, KEY, NEVER, TIME

    queries = set(project.queries.values_list("pk", flat=True))
    spans: dict = {}
    rows = LogBlock.objects.filter(block__in=blocks).values_list(
        "block", "keys", "starts", "ends", "grades"
    )
    for block, *columns in rows:
        keys, starts, ends, grades = (
            np.frombuffer(bytes(column), dtype=kind).tolist()
            for column, kind in zip(columns, (KEY, TIME, TIME, GRADE), strict=True)
        )
        if list(zip(keys, grades, strict=True)) != sorted(zip(keys, grades, strict=True)):
            spans[("order", block)] = ()
        for key, start, end, grade in zip(keys, starts, ends, grades, strict=True):
            query, document = key >> 32, key & 0xFFFFFFFF
            if query in queries:
                span = (query, document, start, None if end == NEVER else end)
                spans.setdefault(span, []).append(grade)
    return {key: tuple(sorted(grades)) for key, grades in spans.items()}


# judgements_queuepair, judgements_queuepooltally, judgements_queueratertally


def expected_pool(project, answers=None) -> dict:
    """The pool: every pair in the top ``pool_depth`` hits of a result list, or asked for
    by an analyst (at any depth), with its best rank, current grades, how many more it
    needs, who answered it on which UTC day (grade or can't tell) and the grades asked for.
    """
    answers = current_answers(project) if answers is None else answers
    wanted: dict = {}
    requests = QueueRequest.objects.filter(project=project)
    for query, document, count in requests.values_list("query_id", "document_id", "wanted"):
        wanted[(query, document)] = max(wanted.get((query, document), 0), count)
    best: dict = {}
    rows = Hit.objects.for_project(project).values_list("query_id", "document_id", "rank")
    for query, document, rank in rows.iterator(chunk_size=50_000):
        pair = (query, document)
        if rank <= project.pool_depth or pair in wanted:
            best[pair] = min(best.get(pair, rank), rank)
    pool = {}
    for pair, rank in best.items():
        current = answers.get(pair, {})
        grades = sum(kind == "grade" for kind, _, _ in current.values())
        answered = {
            str(rater): created_at.astimezone(dt.UTC).date().isoformat()
            for rater, (kind, _, created_at) in current.items()
            if kind != "retract"
        }
        needed = max(project.judges_per_pair, wanted.get(pair, 0)) - grades
        pool[pair] = (rank, grades, needed, answered, wanted.get(pair, 0))
    return pool


def stored_pool(project) -> dict:
    rows = QueuePair.objects.filter(project=project).values_list(
        "query_id", "document_id", "best_rank", "grades", "needed", "answered", "wanted"
    )
    return {
        (query, document): tuple(state)
        for query, document, *state in rows.iterator(chunk_size=20_000)
    }


def expected_tallies(project, pool: dict) -> tuple[dict, dict]:
    """(open pairs by project, (answered, still open, answered today) by rater) of a pool
    as ``expected_pool`` gives it; no row where every count is 0."""
    today = timezone.now().astimezone(dt.UTC).date().isoformat()
    open_pairs = sum(needed > 0 for _, _, needed, _, _ in pool.values())
    per_rater: dict = {}
    for _, _, needed, answered, _ in pool.values():
        for rater, day in answered.items():
            done, still_open, on_day = per_rater.get(int(rater), (0, 0, 0))
            per_rater[int(rater)] = (done + 1, still_open + (needed > 0), on_day + (day == today))
    return ({project.pk: open_pairs} if open_pairs else {}), per_rater


def stored_tallies(project) -> tuple[dict, dict]:
    today = timezone.now().astimezone(dt.UTC).date()
    pool = dict(
        QueuePoolTally.objects.filter(project=project).values_list("project_id", "open_pairs")
    )
    raters = {
        rater: (answered, still_open, on_day if day == today else 0)
        for rater, answered, still_open, day, on_day in QueueRaterTally.objects.filter(
            project=project
        ).values_list("rater_id", "answered", "answered_open", "day", "answered_on_day")
    }
    return pool, raters


# metrics_latestmetricpoint, metrics_revisioncount

LATEST_FIELDS = (
    "as_of", "value", "dcg", "idcg", "judged", "retrieved", "judgements", "zero_idcg",
)  # fmt: skip


def expected_latest_points(project) -> dict:
    """The newest stored per-query point of each (result list, metric, query)."""
    from metrics.models import MetricPoint

    points = (
        MetricPoint.objects.filter(result_list__project=project, query__isnull=False)
        .order_by("result_list_id", "metric", "query_id", "-as_of", "-id")
        .distinct("result_list_id", "metric", "query_id")
        .values_list("result_list_id", "metric", "query_id", *LATEST_FIELDS)
    )
    return {tuple(key): _floats_as_bits(row) for *key, row in _keyed(points, 3)}


def stored_latest_points(project) -> dict:
    from metrics.models import LatestMetricPoint

    points = LatestMetricPoint.objects.filter(result_list__project=project).values_list(
        "result_list_id", "metric", "query_id", *LATEST_FIELDS
    )
    return {tuple(key): _floats_as_bits(row) for *key, row in _keyed(points, 3)}


def _keyed(rows, width: int) -> Iterator[tuple]:
    for row in rows.iterator(chunk_size=20_000):
        yield (*row[:width], row[width:])


def _floats_as_bits(row: tuple) -> tuple:
    return tuple(bits(value) if isinstance(value, float) else value for value in row)


def expected_query_activity(project) -> dict:
    """Each (query, project)'s created_at of the query's newest human event, from the log."""
    events = Judgement.objects.filter(query__project=project).exclude(
        source=Judgement.Source.MACHINE
    )
    newest = events.values("query_id").annotate(newest=Max("created_at"))
    return {(row["query_id"], project.pk): row["newest"] for row in newest}


def stored_query_activity(project) -> dict:
    """The largest ``newest`` of the rows of each (query, project) of
    judgements_queryactivity that name the project or one of its queries."""
    rows = (
        QueryActivity.objects.filter(
            Q(project=project) | Q(query_id__in=project.queries.values("pk"))
        )
        .values("query_id", "project_id")
        .annotate(newest=Max("newest"))
    )
    return {(row["query_id"], row["project_id"]): row["newest"] for row in rows}


def expected_revision_counts(project) -> dict:
    """Revisions per query and UTC hour from the whole log, for the queries not marked
    stale (a stale query's counts wait for the next refresh, and readers take its
    revisions from the log meanwhile)."""
    from metrics.revisions import PROJECT_HOURLY_SQL

    with connection.cursor() as cursor:
        cursor.execute(PROJECT_HOURLY_SQL, {"project": project.pk, "as_of": "infinity"})
        counts = {(query, hour): count for query, hour, count in cursor.fetchall()}
    stale = _stale_queries(project)
    return {key: count for key, count in counts.items() if key[0] not in stale}


def stored_revision_counts(project) -> dict:
    from metrics.models import RevisionCount

    stale = _stale_queries(project)
    rows = RevisionCount.objects.filter(query__project=project).values_list(
        "query_id", "hour", "revisions"
    )
    return {(query, hour): count for query, hour, count in rows if query not in stale}


OVERALL_SUM_FIELDS = (
    "total", "counted", "unreturned", "judged", "retrieved", "judgements", "zero_idcg",
    "queries_judged", "queries_returned",
)  # fmt: skip


def expected_overall_sums(project) -> dict:
    """Each kept sum (``metrics.overall``) as its list's latest points make it: a list
    whose sums were thrown away has none to check, and its next refresh writes them."""
    from metrics.models import LatestMetricPoint, OverallSum, UnreturnedQuery
    from metrics.overall import sums_of_columns
    from metrics.registry import MetricSpec

    expected = {}
    for result_list_id, metric in OverallSum.objects.filter(
        result_list__project=project
    ).values_list("result_list_id", "metric"):
        latest = LatestMetricPoint.objects.filter(result_list_id=result_list_id, metric=metric)
        rows = latest.order_by("query_id").values_list(
            "value", "judged", "retrieved", "judgements", "zero_idcg"
        )
        names = ("value", "judged", "retrieved", "judgements", "zero_idcg")
        table = np.array(list(rows), dtype=object).reshape(-1, len(names))
        columns = {
            name: table[:, n].astype(type(0.0 if n == 0 else 0)) for n, name in enumerate(names)
        }
        unreturned = UnreturnedQuery.objects.filter(result_list_id=result_list_id, metric=metric)
        sums = sums_of_columns(MetricSpec.parse(metric), columns, unreturned.count())
        expected[(result_list_id, metric)] = tuple(sums[name] for name in OVERALL_SUM_FIELDS)
    return expected


def stored_overall_sums(project) -> dict:
    from metrics.models import OverallSum

    rows = OverallSum.objects.filter(result_list__project=project).values_list(
        "result_list_id", "metric", *OVERALL_SUM_FIELDS
    )
    return {tuple(row[:2]): tuple(row[2:]) for row in rows}


def expected_unreturned_queries(project) -> dict:
    """For each kept sum of a mean over all queries, the judged queries (a current
    grade now) without a latest point of the list, but those marked stale (their
    refresh counts them again)."""
    from metrics.models import LatestMetricPoint, OverallSum
    from metrics.registry import MetricSpec

    judged = set(
        QueryGrades.objects.filter(query__project=project, judged__gt=0).values_list(
            "query_id", flat=True
        )
    ) - _stale_queries(project)
    expected = {}
    for result_list_id, metric in OverallSum.objects.filter(
        result_list__project=project
    ).values_list("result_list_id", "metric"):
        if MetricSpec.parse(metric).mean_over != "all":
            continue
        latest = LatestMetricPoint.objects.filter(result_list_id=result_list_id, metric=metric)
        returned = set(latest.values_list("query_id", flat=True))
        for query_id in judged - returned:
            expected[(result_list_id, metric, query_id)] = ()
    return expected


def stored_unreturned_queries(project) -> dict:
    from metrics.models import OverallSum, UnreturnedQuery

    kept = set(
        OverallSum.objects.filter(result_list__project=project).values_list(
            "result_list_id", "metric"
        )
    )
    stale = _stale_queries(project)
    rows = UnreturnedQuery.objects.filter(result_list__project=project).values_list(
        "result_list_id", "metric", "query_id"
    )
    return {tuple(row): () for row in rows if tuple(row[:2]) in kept and row[2] not in stale}


def _packed_state(project) -> tuple[set[int], set[str]]:
    """The project's queries waiting for a packed fill, and the policies filled."""
    from judgements.models import PackedPolicy

    waiting = QueryGrades.objects.filter(query__project=project, stale=True)
    return (
        set(waiting.values_list("query_id", flat=True)),
        set(PackedPolicy.objects.values_list("name", flat=True)),
    )


def stored_mark_projects(project) -> dict:
    """The project each stale mark of the project's queries names, and each mark that
    names the project: {query: (project,)}."""
    from metrics.models import StaleQuery

    marks = StaleQuery.objects.filter(Q(query__project=project) | Q(project=project))
    return {query: (named,) for query, named in marks.values_list("pk", "project_id")}


def expected_mark_projects(project) -> dict:
    """Each stale mark of the project's queries names the project."""
    return dict.fromkeys(_stale_queries(project), (project.pk,))


def _stale_queries(project) -> set[int]:
    from metrics.models import StaleQuery

    return set(StaleQuery.objects.filter(query__project=project).values_list("pk", flat=True))


# Every table at once


@dataclass(frozen=True)
class Difference:
    """One row on which a derived table and its recomputation disagree; ``stored`` or
    ``expected`` is None where the row is missing on that side."""

    table: str
    key: tuple
    stored: tuple | None
    expected: tuple | None


def differences(project) -> Iterator[Difference]:
    """Every difference between the project's derived tables and their recomputation,
    table by table."""
    answers = current_answers(project)
    hits = project_hits(project)
    yield from _compare(
        "judgements_pairgrade", stored_pair_grades(project), expected_pair_grades(project, answers)
    )
    names = ("judgements_querygrades", "judgements_rankedhits", "judgements_rankedgrades")
    expected = expected_summaries(project, answers, hits)
    waiting, filled = _packed_state(project)
    for name, have, want in zip(names, stored_summaries(project), expected, strict=True):
        if name == "judgements_rankedgrades":
            # Marked, then filled (judgements.packed): a query waiting for its fill, or a
            # policy not filled yet, is not compared.
            have, want = (
                {k: row for k, row in rows.items() if k[1] not in waiting and k[2] in filled}
                for rows in (have, want)
            )
            # The blocks join the same rows, but for those marked stale, which wait
            # for a reader (judgements.packed.blocks_refresh).
            from judgements.packed import BLOCK_QUERIES

            stale = stale_blocks(project)
            blocks = {
                key: row
                for key, row in stored_blocks(project).items()
                if key[1] not in waiting and key[2] in filled
            }
            joined = {
                key: row
                for key, row in want.items()
                if (key[0], key[2], key[1] // BLOCK_QUERIES) not in stale
            }
            yield from _compare("judgements_rankedblock", blocks, joined)
        if name == "judgements_querygrades":
            # A query left with neither pairs nor hits may keep an emptied row.
            have = {key: row for key, row in have.items() if key in want or row[:2] != (0, 0)}
        yield from _compare(name, have, want)
    activity = stored_query_activity(project), expected_query_activity(project)
    yield from _compare("judgements_queryactivity", *activity)
    pool = expected_pool(project, answers)
    yield from _compare("judgements_queuepair", stored_pool(project), pool)
    names = ("judgements_queuepooltally", "judgements_queueratertally")
    for name, have, want in zip(
        names, stored_tallies(project), expected_tallies(project, pool), strict=True
    ):
        yield from _compare(name, have, want)
    # The packed log's blocks that hold their events; marked or missing ones wait for a
    # reader of a past moment (judgements.log_blocks).
    _, current = log_span_blocks(project)
    yield from _compare(
        "judgements_logblock",
        stored_log_spans(project, current),
        expected_log_spans(project, current),
    )
    yield from _compare(
        "metrics_latestmetricpoint",
        stored_latest_points(project),
        expected_latest_points(project),
    )
    yield from _compare(
        "metrics_revisioncount",
        stored_revision_counts(project),
        expected_revision_counts(project),
    )
    yield from _compare(
        "metrics_stalequery", stored_mark_projects(project), expected_mark_projects(project)
    )
    yield from _compare(
        "metrics_overallsum", stored_overall_sums(project), expected_overall_sums(project)
    )
    yield from _compare(
        "metrics_unreturnedquery",
        stored_unreturned_queries(project),
        expected_unreturned_queries(project),
    )


def _compare(table: str, stored: dict, expected: dict) -> Iterator[Difference]:
    for key in sorted(stored.keys() | expected.keys(), key=_sortable):
        have, want = stored.get(key), expected.get(key)
        if have != want:
            yield Difference(table, _as_tuple(key), _as_tuple(have), _as_tuple(want))


def _as_tuple(value) -> tuple | None:
    return value if value is None or isinstance(value, tuple) else (value,)


def _sortable(key) -> tuple:
    return tuple(str(part) for part in _as_tuple(key))
