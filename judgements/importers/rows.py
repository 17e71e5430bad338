"""What parsers yield: rows for the services to write, and errors that name their line."""

from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

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
    """What the project knows, for turning names in a file into ids."""

    grades: frozenset[int] = frozenset()
    queries: dict[str, int] = field(default_factory=dict)  # text -> id
    qids: dict[str, int] = field(default_factory=dict)  # TREC qid -> id
    documents: dict[str, int] = field(default_factory=dict)  # external id -> id
    raters: dict[str, int] = field(default_factory=dict)  # username -> id


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
    line: int
    query_id: int
    external_id: str
    rank: int
    score: float | None
    document: DocumentRow | None = None


class JudgementRow(NamedTuple):
    line: int
    query_id: int
    document_id: int
    grade: int | None
    kind: str = "grade"
    rater_id: int | None = None  # None: the project's import rater
    note: str = ""
    created_at: datetime | None = None
