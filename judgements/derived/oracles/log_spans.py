"""The packed log's spans (``judgements_querylog``), recomputed from the log and read
back."""

import datetime as dt

import numpy as np

from judgements.models import Judgement, QueryLog

# Binary COPY's time unit, in which the packed log keeps its spans' times.
POSTGRES_EPOCH = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
NEVER = np.iinfo(np.int64).max


def expected_log_spans(project) -> dict:
    """Each human grade event of the project's queries as the span of time it was its
    rater's current answer: (query, document, start, end) in microseconds since
    2000-01-01 UTC (end None: no later event of the rater on the pair) -> the (grade,
    rater) of such spans, sorted. The rule of Judgement.objects.current(), event by
    event."""
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
    return {key: tuple(sorted(grades)) for key, grades in spans.items()}


def _add_span(spans: dict, event: tuple, end: int | None) -> None:
    query, document, rater, kind, grade, created_at = event
    if kind == "grade":
        key = (query, document, _microseconds(created_at), end)
        spans.setdefault(key, []).append((grade, rater))


def _microseconds(moment: dt.datetime) -> int:
    return (moment - POSTGRES_EPOCH) // dt.timedelta(microseconds=1)


def stored_log_spans(project) -> dict:
    """judgements_querylog read back in ``expected_log_spans``' shape; a row whose spans
    are out of order (pair, then grade) or not its query's is kept under the key
    ("order", query), one whose project is not its query's under ("project", query)."""
    projects = dict(project.queries.values_list("pk", "project_id"))
    spans: dict = {}
    rows = QueryLog.objects.filter(query__project=project).values_list(
        "query_id", "project_id", "keys", "starts", "ends", "grades", "raters"
    )
    for query_id, project_id, *columns in rows:
        keys, starts, ends, grades, raters = (
            np.frombuffer(bytes(column), dtype=kind).tolist()
            for column, kind in zip(columns, (">i8", ">i8", ">i8", ">i2", ">i4"), strict=True)
        )
        if project_id != projects[query_id]:
            spans[("project", query_id)] = (project_id,)
        pairs = list(zip(keys, grades, strict=True))
        if pairs != sorted(pairs) or any(key >> 32 != query_id for key in keys):
            spans[("order", query_id)] = ()
        for key, start, end, grade, rater in zip(keys, starts, ends, grades, raters, strict=True):
            span = (key >> 32, key & 0xFFFFFFFF, start, None if end == NEVER else end)
            spans.setdefault(span, []).append((grade, rater))
    return {key: tuple(sorted(grades)) for key, grades in spans.items()}
