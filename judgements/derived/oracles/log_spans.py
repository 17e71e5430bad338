"""The packed log's spans (``judgements_logblock``), recomputed from the log and
read back."""

import datetime as dt

import numpy as np

from judgements.models import (
    Judgement,
    LogBlock,
    LogBlockMark,
)

# Binary COPY's time unit, in which the packed log keeps its spans' times.
POSTGRES_EPOCH = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)


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
