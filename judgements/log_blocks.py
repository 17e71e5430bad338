"""The packed log (judgements_logblock): past moments replayed without reading the log.

A rater's current grade of a pair at a moment is their latest event on it up to then
(``metrics.core.replay``). Each grade event is therefore current over one span of
time: from when it was recorded (included) to when that rater's next event on the pair
was (excluded; never, for their last). A block holds these spans for the human events
of ``BLOCK_QUERIES`` consecutive query ids, in pair order, so that the current grades
at any moment are one comparison of two columns, with no sort: reading and sorting the
half million events before a moment halfway through a million took about a second,
reading every span of the project takes a tenth of it.

Marked, then written by readers, as the packed grades' blocks are
(``judgements.packed``): every statement that adds or removes human events inserts a
mark per block it touches (judgements/sql/log_blocks.sql: an insert, which never waits
for another writer), and a block is current while no mark of it is left.
``spans`` writes the blocks it needs that are missing or marked, then reads them in
one statement that leaves out any block still marked: a block is written after the
marks its snapshot sees are deleted (so an event committed meanwhile keeps its mark,
in READ COMMITTED too), and under the block's advisory lock, which other writers only
try (a held block is not waited for). A write that PostgreSQL refuses (a REPEATABLE
READ snapshot behind another writer of the block) is rolled back and leaves the block
as it was; the caller then replays the log itself.
"""

import io
import struct
from dataclasses import dataclass

import numpy as np
from django.db import IntegrityError, OperationalError, connection, transaction

from metrics import pgcopy

# Query ids per block: judgements/sql/log_blocks.sql divides by the same number.
BLOCK_QUERIES = 128
# The advisory locks of log blocks are (BLOCK_LOCK, block).
BLOCK_LOCK = 0x4C4F4742
# The end of a span whose rater has no later event on the pair.
NEVER = np.iinfo(np.int64).max
# The columns as stored: little-endian, numpy's own order, read without conversion.
KEY, TIME, GRADE = np.dtype("<i8"), np.dtype("<i8"), np.dtype("<i2")

QUERY_IDS_SQL = """
SELECT id FROM judgements_query
WHERE project_id = %(project)s AND (%(queries)s::bigint[] IS NULL OR id = ANY(%(queries)s))
"""
# The blocks of %(blocks)s that hold their queries' events: no mark of them is left.
# One row each, in any order.
READ_SQL = """
SELECT int4send(block.block), block.keys, block.starts, block.ends, block.grades
FROM judgements_logblock block
WHERE block.block = ANY(%(blocks)s::int4[])
  AND NOT EXISTS (SELECT FROM judgements_logblockmark mark WHERE mark.block = block.block)
"""
# Every human event of the blocks' queries, through the log's (query, document, rater,
# time) index, one range of query ids per block.
EVENTS_SQL = """
SELECT j.query_id, j.document_id, j.rater_id, j.created_at, j.id,
       (j.kind = 'grade')::int4, COALESCE(j.grade, 0)::int4
FROM unnest(%(blocks)s::int4[]) AS chosen (block)
JOIN judgements_judgement j
  ON j.query_id >= chosen.block::bigint * %(width)s
 AND j.query_id < (chosen.block::bigint + 1) * %(width)s
WHERE j.source <> 'machine'
"""
COPY_IN = "COPY judgements_logblock (block, keys, starts, ends, grades) FROM STDIN (FORMAT binary)"


@dataclass(frozen=True)
class Spans:
    """Grade events as spans of time, in pair order (each pair's by grade): the grade
    ``grades[i]`` of pair ``keys[i]`` is a rater's current answer at every moment ``t``
    with ``starts[i] <= t < ends[i]`` (microseconds since 2000-01-01 UTC)."""

    keys: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    grades: np.ndarray


def spans(project_id: int, *, query_ids=None) -> Spans | None:
    """The spans of the project's human events (of ``query_ids`` only, when given),
    writing the blocks that are missing or marked first; None when one of them could
    not be written (another transaction holds it, or PostgreSQL refused the write)."""
    queries = np.sort(
        pgcopy.copy_rows(
            QUERY_IDS_SQL, {"project": project_id, "queries": query_ids}, [("id", ">i8")]
        )["id"].astype(np.int64)
    )
    blocks = np.unique(queries // BLOCK_QUERIES).astype(np.int64).tolist()
    rows = _current(blocks)
    if len(rows) < len(blocks):
        written = {int.from_bytes(row[0], "big") for row in rows}
        if not blocks_write([block for block in blocks if block not in written]):
            return None
        rows = _current(blocks)
        if len(rows) < len(blocks):
            return None
    rows.sort(key=lambda row: int.from_bytes(row[0], "big"))
    keys, starts, ends, grades = (
        np.frombuffer(b"".join(row[column] for row in rows), dtype=kind)
        for column, kind in ((1, KEY), (2, TIME), (3, TIME), (4, GRADE))
    )
    found = Spans(keys, starts, ends, grades)
    return _of_queries(found, queries)


def _current(blocks: list[int]) -> list:
    if not blocks:
        return []
    return pgcopy.copy_fields(READ_SQL, {"blocks": blocks})


def _of_queries(found: Spans, queries: np.ndarray) -> Spans:
    """``found`` without the spans of other queries than ``queries`` (sorted): other
    projects' queries in the same blocks, or those not asked for."""
    # Spans come in key order, so each query's spans are one run, found by its bounds;
    # runs that touch are one slice (a project's queries are mostly consecutive ids).
    first = np.searchsorted(found.keys, queries << 32)
    last = np.searchsorted(found.keys, (queries + 1) << 32)
    if (last - first).sum() == len(found.keys):
        return found
    columns = (found.keys, found.starts, found.ends, found.grades)
    if not len(queries):
        return Spans(*(column[:0] for column in columns))
    breaks = np.flatnonzero(first[1:] != last[:-1]) + 1
    bounds = list(zip(first[np.r_[0, breaks]], last[np.r_[breaks - 1, -1]], strict=True))
    return Spans(*(np.concatenate([column[b:e] for b, e in bounds]) for column in columns))


def project_blocks_write(project_id: int) -> bool:
    """Write every block of the project's queries again from the log (``derived_state
    --rebuild``); returns whether all of them were written."""
    queries = pgcopy.copy_rows(
        QUERY_IDS_SQL, {"project": project_id, "queries": None}, [("id", ">i8")]
    )["id"].astype(np.int64)
    return blocks_write(np.unique(queries // BLOCK_QUERIES).tolist())


def blocks_write(blocks: list[int]) -> bool:
    """Write the given blocks again from the log, those no other transaction holds;
    returns whether all of them were written."""
    if not blocks:
        return True
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT block FROM unnest(%s::int4[]) block"
                " WHERE pg_try_advisory_xact_lock(%s, block)",
                [blocks, BLOCK_LOCK],
            )
            locked = sorted(row[0] for row in cursor.fetchall())
            if locked:
                # The marks go first: an event committed after this statement's
                # snapshot keeps its mark, whether or not the read below sees it.
                cursor.execute(
                    "DELETE FROM judgements_logblockmark WHERE block = ANY(%s::int4[])", [locked]
                )
                rows = _block_rows(locked)
                cursor.execute(
                    "DELETE FROM judgements_logblock WHERE block = ANY(%s::int4[])", [locked]
                )
                cursor.cursor.copy_expert(COPY_IN, io.BytesIO(rows))
    except (OperationalError, IntegrityError):
        # A REPEATABLE READ snapshot behind another writer of a block: rolled back.
        return False
    return len(locked) == len(blocks)


def _block_rows(blocks: list[int]) -> bytes:
    """The rows of ``blocks`` (sorted) in binary COPY's format, from the log."""
    from metrics.log_replay import LOG_COLUMNS

    events = pgcopy.copy_rows(EVENTS_SQL, {"blocks": blocks, "width": BLOCK_QUERIES}, LOG_COLUMNS)
    found = events_spans(
        (events["query_id"].astype(np.int64) << 32) | events["document_id"].astype(np.int64),
        events["rater_id"],
        events["created_at"],
        events["id"],
        events["grade"],
        events["is_grade"] != 0,
    )
    block_of = (found.keys >> 32) // BLOCK_QUERIES
    bounds = np.searchsorted(block_of, np.r_[blocks, blocks[-1] + 1])
    out = [pgcopy.COPY_SIGNATURE + bytes(8)]
    for block, begin, end in zip(blocks, bounds[:-1], bounds[1:], strict=True):
        fields = [struct.pack(">i", block)] + [
            column[begin:end].astype(kind).tobytes()
            for column, kind in (
                (found.keys, KEY),
                (found.starts, TIME),
                (found.ends, TIME),
                (found.grades, GRADE),
            )
        ]
        out.append(struct.pack(">h", len(fields)))
        out.extend(struct.pack(">i", len(field)) + field for field in fields)
    out.append(struct.pack(">h", -1))
    return b"".join(out)


def events_spans(pair_keys, raters, times, ids, grades, is_grade) -> Spans:
    """The spans of the grade events among the given events (any order): sorted by
    pair, rater, time and id, each event is its rater's current answer until the next
    event of the same pair and rater (``metrics.core.replay``'s rule)."""
    keys = np.asarray(pair_keys, dtype=np.int64)
    who = np.asarray(raters, dtype=np.int64)
    when = np.asarray(times, dtype=np.int64)
    order = np.lexsort((np.asarray(ids, dtype=np.int64), when, who, keys))
    keys, who, when = keys[order], who[order], when[order]
    last = np.ones(len(keys), dtype=bool)
    last[:-1] = (keys[1:] != keys[:-1]) | (who[1:] != who[:-1])
    ends = np.full(len(keys), NEVER, dtype=np.int64)
    ends[:-1] = np.where(last[:-1], NEVER, when[1:])
    graded = np.asarray(is_grade, dtype=bool)[order]
    values = np.asarray(grades, dtype=np.int64)[order][graded]
    keys, when, ends = keys[graded], when[graded], ends[graded]
    # Each pair's spans by grade: the consensus then sorts grades that are in order.
    by_grade = np.lexsort((values, keys))
    return Spans(keys[by_grade], when[by_grade], ends[by_grade], values[by_grade])
