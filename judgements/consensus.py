"""Each judged pair's consensus of a set of events' current grades, in numpy.

The rule of every policy lives in ``metrics.core.consensus`` only; this reads the
current grades of the filtered events (``Judgement.objects.current()``) with one
COPY and hands them to it. ``PairConsensus`` is a sequence of dict rows (a page is
built only when sliced, as DRF's paginator does) that can also be read back by SQL
(``sql()``), which the streamed exports do.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.db import connection

from config.pgcopy import copy_rows
from metrics.core.consensus import consensus, policy_names
from metrics.core.segments import offsets_from_lengths, pair_keys

COLUMNS = ("query_id", "document_id", "consensus", "raters", "min_grade", "max_grade", "spread")
SQL_TYPES = ("bigint", "bigint", "float8", "integer", "smallint", "smallint", "float8")
GRADE_COLUMNS = [("query_id", ">i8"), ("document_id", ">i8"), ("grade", ">i2")]


@dataclass(frozen=True)
class PairConsensus(Sequence):
    """One row per judged pair, by (query, document): the consensus, how many current
    grades, the lowest, the highest and their spread (population standard deviation)."""

    query_id: np.ndarray
    document_id: np.ndarray
    consensus: np.ndarray
    raters: np.ndarray
    min_grade: np.ndarray
    max_grade: np.ndarray
    spread: np.ndarray

    def __len__(self) -> int:
        return len(self.query_id)

    def count(self, *args) -> int:
        """The number of rows (Django's paginator asks for ``count()``)."""
        return len(self)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._row(i) for i in range(*index.indices(len(self)))]
        return self._row(range(len(self))[index])

    def _row(self, i: int) -> dict:
        return {column: getattr(self, column)[i].item() for column in COLUMNS}

    def sql(self) -> str:
        """A SELECT of these rows, with the columns above, for SQL that joins them."""
        arrays = ", ".join(
            f"'{{{','.join(map(repr, getattr(self, column).tolist()))}}}'::{kind}[]"
            for column, kind in zip(COLUMNS, SQL_TYPES, strict=True)
        )
        return f"SELECT * FROM unnest({arrays}) AS pair ({', '.join(COLUMNS)})"


def pair_consensus(events, policy: str = "mean") -> PairConsensus:
    """The consensus under ``policy`` of each pair's current grades among ``events``
    (a Judgement QuerySet, filtered in any way)."""
    if policy not in policy_names():
        raise ValueError(f"policy must be one of {policy_names()}, not {policy!r}")
    grades_qs = events.current_grades().order_by().values_list("query_id", "document_id", "grade")
    sql, params = grades_qs.query.sql_with_params()
    with connection.cursor() as cursor:
        statement = cursor.cursor.mogrify(sql, params).decode()
    rows = copy_rows(statement, None, GRADE_COLUMNS)
    queries = rows["query_id"].astype(np.int64)
    documents = rows["document_id"].astype(np.int64)
    grades = rows["grade"].astype(np.float64)
    order = np.lexsort((grades, pair_keys(queries, documents)))
    queries, documents, grades = queries[order], documents[order], grades[order]
    starts = np.flatnonzero(
        np.r_[len(grades) > 0, (queries[1:] != queries[:-1]) | (documents[1:] != documents[:-1])]
    )
    counts = np.diff(np.r_[starts, len(grades)])
    offsets = offsets_from_lengths(counts)
    means = np.add.reduceat(grades, starts) / counts if len(starts) else np.zeros(0)
    squares = (grades - np.repeat(means, counts)) ** 2
    spread = np.sqrt(np.add.reduceat(squares, starts) / counts) if len(starts) else np.zeros(0)
    return PairConsensus(
        query_id=queries[starts],
        document_id=documents[starts],
        consensus=consensus(grades, offsets, policy),
        raters=counts,
        min_grade=grades[starts].astype(np.int64),
        max_grade=grades[offsets[1:] - 1].astype(np.int64),
        spread=spread,
    )
