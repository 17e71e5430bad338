"""Every derived table of a project recomputed in Python from its sources, and read back.

Each oracle recomputes one table from the judgement log, the hits, the projects and
analysts' requests, without the SQL that keeps it (``judgements/sql/``): consensus
comes from the numpy core (``metrics.core.consensus``), the packed rows are packed
with numpy, the pool is the rule of ``judgements.queue`` written out. ``stored``
reads what the table holds in the same shape, so that the two compare with ``==``;
floats compare by their bits. ``manage.py derived_state`` and the tests use these
functions, and nothing else decides what a derived table should hold.

One module per group of tables: ``answers`` (current answers, pair grades),
``summaries`` (the packed rows), ``log_spans`` (the packed log),
``pool`` (the rating pool and its tallies) and ``metrics`` (the metrics app's tables);
``differences`` here compares every one.
"""

from collections.abc import Iterator
from dataclasses import dataclass

from judgements.derived.oracles.answers import (
    bits,
    current_answers,
    expected_pair_grades,
    stored_pair_grades,
)
from judgements.derived.oracles.log_spans import expected_log_spans, stored_log_spans
from judgements.derived.oracles.metrics import (
    expected_latest_points,
    expected_mark_projects,
    expected_query_activity,
    expected_revision_counts,
    stored_latest_points,
    stored_mark_projects,
    stored_query_activity,
    stored_revision_counts,
)
from judgements.derived.oracles.pool import (
    expected_pool,
    expected_tallies,
    stored_pool,
    stored_tallies,
)
from judgements.derived.oracles.summaries import (
    expected_summaries,
    packed_state,
    project_hits,
    stored_summaries,
)

# What the tests and derived_state read one by one, beside differences().
__all__ = [
    "Difference",
    "bits",
    "current_answers",
    "differences",
    "expected_pair_grades",
    "expected_pool",
    "expected_query_activity",
    "expected_summaries",
    "expected_tallies",
    "stored_pair_grades",
    "stored_pool",
    "stored_query_activity",
    "stored_summaries",
    "stored_tallies",
]

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
    waiting, filled = packed_state(project)
    for name, have, want in zip(names, stored_summaries(project), expected, strict=True):
        if name == "judgements_rankedgrades":
            # Marked, then filled (judgements.packed): a query waiting for its fill, or a
            # policy not filled yet, is not compared.
            have, want = (
                {k: row for k, row in rows.items() if k[1] not in waiting and k[2] in filled}
                for rows in (have, want)
            )
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
    yield from _compare(
        "judgements_querylog", stored_log_spans(project), expected_log_spans(project)
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


def _compare(table: str, stored: dict, expected: dict) -> Iterator[Difference]:
    for key in sorted(stored.keys() | expected.keys(), key=_sortable):
        have, want = stored.get(key), expected.get(key)
        if have != want:
            yield Difference(table, _as_tuple(key), _as_tuple(have), _as_tuple(want))


def _as_tuple(value) -> tuple | None:
    return value if value is None or isinstance(value, tuple) else (value,)


def _sortable(key) -> tuple:
    return tuple(str(part) for part in _as_tuple(key))
