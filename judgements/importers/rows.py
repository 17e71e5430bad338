"""What parsers yield: rows for the services to write, and errors that name their line."""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

import numpy as np

ERROR_CAP = 100


class LineError(NamedTuple):
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = ", ".join(
            part
            for part in (self.line and f"line {self.line}", self.field and f"column {self.field}")
            if part
        )
        return f"{where}: {self.message}" if where else self.message


class ImportRejected(Exception):
    """The file had errors: nothing was written. ``errors`` is capped; ``total`` is not."""

    def __init__(self, errors: list[LineError], total: int):
        super().__init__(f"{total} error(s), first: {errors[0]}")
        self.errors, self.total = errors, total


class ErrorLog:
    """Collects errors up to a cap and counts the rest."""

    def __init__(self, cap: int = ERROR_CAP):
        self.cap, self.kept, self.total = cap, [], 0

    def __bool__(self) -> bool:
        return self.total > 0

    def add(self, error: LineError) -> None:
        self.total += 1
        if len(self.kept) < self.cap:
            self.kept.append(error)

    def raise_if_any(self) -> None:
        if self.total:
            raise ImportRejected(self.kept, self.total)


@dataclass
class Vocabulary:
    """What the project knows, for turning names in a file into ids.

    With ``create_missing``, a qrels, run or pair file's unknown documents (and
    unknown query ids) become rows that name them by key, for the service to create.
    """

    grades: frozenset[int] = frozenset()
    queries: dict[str, int] = field(default_factory=dict)  # text -> id
    qids: dict[str, int] = field(default_factory=dict)  # external id (TREC qid) -> id
    documents: dict[str, int] = field(default_factory=dict)  # external id -> id
    raters: dict[str, int] = field(default_factory=dict)  # active rater's username -> id
    users: frozenset[str] = frozenset()  # every username, to tell unknown from refused
    create_missing: bool = False

    def query_text(self, query_id: int) -> str:
        if not hasattr(self, "_texts"):
            self._texts = {pk: text for text, pk in self.queries.items()}
        return self._texts.get(query_id, "")


class Skip(NamedTuple):
    """A line a parser leaves out on purpose; the import's summary counts them by reason."""

    line: int | None
    reason: str


class Note(NamedTuple):
    """A sentence for the import's summary (how a file was read)."""

    message: str


class QueryRow(NamedTuple):
    line: int
    text: str
    description: str = ""
    key: str = ""


class DocumentRow(NamedTuple):
    line: int
    external_id: str
    title: str = ""
    url: str = ""
    snippet: str = ""
    image_url: str = ""
    fields: dict | None = None


class RunInfo(NamedTuple):
    """Result list details a file carries (TREC: the tag; JSON: name, engine, time)."""

    name: str = ""
    engine: str = ""
    captured_at: datetime | None = None


class HitRow(NamedTuple):
    """A hit; ``rank`` is the file's (TREC: its rank column, or None when it is not a
    whole number), ``query_id`` None for a query to create under ``query_key``."""

    line: int
    query_id: int | None
    external_id: str
    rank: int | None
    score: float | None
    document: DocumentRow | None = None
    query_key: str = ""


class JudgementRow(NamedTuple):
    """One judgement event. ``query_id``/``document_id`` are None for a query or
    document to create under ``query_key``/``document_key``; ``rater_id`` None is the
    project's import rater, or the account of ``rater_key`` (an e-mail address), or the
    machine judge named ``machine_judge`` (its event then has source "machine").
    ``query_external_id`` is the file's own id of a query to create under its text
    (an LTR file's ``qid``), kept as the new query's external id."""

    line: int
    query_id: int | None
    document_id: int | None
    grade: int | None
    kind: str = "grade"
    rater_id: int | None = None
    note: str = ""
    created_at: datetime | None = None
    event_id: str = ""
    query_key: str = ""
    document_key: str = ""
    rater_key: str = ""
    query_external_id: str = ""
    machine_judge: str = ""


@dataclass(frozen=True, eq=False)
class JudgementBlock:
    """The judgements of many lines at once, as columns of int64 arrays: a parser
    yields one, for speed, in place of a ``JudgementRow(line, query_id, document_id,
    grade)`` per line (a grade of the project's import rater). ``rows`` gives those."""

    lines: np.ndarray
    query_ids: np.ndarray
    document_ids: np.ndarray
    grades: np.ndarray

    def __len__(self) -> int:
        return len(self.lines)

    def rows(self) -> Iterator[JudgementRow]:
        columns = (self.lines, self.query_ids, self.document_ids, self.grades)
        for values in zip(*(column.tolist() for column in columns), strict=True):
            yield JudgementRow(*values)


def one_by_one(items: Iterable) -> Iterator:
    """A parser's items with the rows of each JudgementBlock in its place."""
    for item in items:
        if isinstance(item, JudgementBlock):
            yield from item.rows()
        else:
            yield item
