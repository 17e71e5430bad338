"""The packed log (judgements_querylog): past moments replayed without reading the log.

A rater's current grade of a pair at a moment is their latest event on it up to then
(``metrics.core.replay``). Each grade event is therefore current over one span of
time: from when it was recorded (included) to when that rater's next event on the pair
was (excluded; never, for their last). Each query's row holds these spans for its human
events, in pair order, kept by triggers on the log in the writer's transaction
(judgements/sql/query_log.sql), so that the current grades at any moment are one
comparison of two columns, with no sort: reading and sorting the million events of
the bench's project took 2-4 s, its spans' rows a tenth of it. Reading writes nothing.
"""

from dataclasses import dataclass

import numpy as np

from config import pgcopy

# The end of a span whose rater has no later event on the pair.
NEVER = np.iinfo(np.int64).max

# The project's rows (of %(queries)s only, when not NULL), joined in chunks of about 128
# query ids, each chunk numbered by its first query (rows of ~100 kB: one row of
# megabytes costs PostgreSQL and libpq about twice as much).
READ_SQL = """
SELECT int8send(min(log.query_id)),
       string_agg(log.keys, ''::bytea ORDER BY log.query_id),
       string_agg(log.starts, ''::bytea ORDER BY log.query_id),
       string_agg(log.ends, ''::bytea ORDER BY log.query_id),
       string_agg(log.grades, ''::bytea ORDER BY log.query_id),
       string_agg(log.raters, ''::bytea ORDER BY log.query_id)
FROM judgements_querylog log
WHERE log.project_id = %(project)s
  AND (%(queries)s::bigint[] IS NULL OR log.query_id = ANY(%(queries)s))
GROUP BY log.query_id / 128
"""


@dataclass(frozen=True)
class Spans:
    """Grade events as spans of time, in pair order (each pair's by grade): the grade
    ``grades[i]`` of pair ``keys[i]`` is rater ``raters[i]``'s current answer at every
    moment ``t`` with ``starts[i] <= t < ends[i]`` (microseconds since 2000-01-01 UTC)."""

    keys: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    grades: np.ndarray
    raters: np.ndarray

    def current(self, moment: int) -> "Spans":
        """The spans that hold ``moment`` (binary COPY's microseconds), in the same order."""
        held = (self.starts <= moment) & (self.ends > moment)
        return Spans(*(column[held] for column in (
            self.keys, self.starts, self.ends, self.grades, self.raters)))  # fmt: skip


def spans(project_id: int, *, query_ids=None) -> Spans:
    """The spans of the project's human events (of ``query_ids`` only, when given)."""
    rows = pgcopy.copy_fields(READ_SQL, {"project": project_id, "queries": query_ids})
    keys, starts, ends, grades, raters = pgcopy.joined_chunks(rows, key=0, width=6)
    return Spans(
        pgcopy.unpacked(keys, ">i8"),
        pgcopy.unpacked(starts, ">i8"),
        pgcopy.unpacked(ends, ">i8"),
        pgcopy.unpacked(grades, ">i2"),
        pgcopy.unpacked(raters, ">i4"),
    )
