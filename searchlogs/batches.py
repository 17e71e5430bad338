"""A batch of search events checked as a whole: the rules no single line can break.

An event id used twice; a click before any results page of its session; a dwell for
an unknown click, for a click of another session, or earlier than its click. Events
stored by earlier batches count. A batch is taken a block of events at a time
(searchlogs.columns) and keeps only what these checks and the result need.
"""

from collections import Counter
from dataclasses import dataclass, field
from itertools import repeat

import numpy as np
from django.db import connection

from judgements.importers.reading import Duplicates
from judgements.importers.rows import LineError
from judgements.models import Project
from searchlogs.columns import EventColumns
from searchlogs.matching import normalised, query_keys
from searchlogs.parsing import Kind

UNMATCHED_SHOWN = 10
NEVER = np.iinfo(np.int64).max


@dataclass(frozen=True)
class IngestResult:
    """What a batch held and did. ``unmatched_texts``: the most frequent unmatched
    normalised query texts of the batch with their counts."""

    rows: int
    created: int
    already_stored: int
    kinds: dict[str, int] = field(default_factory=dict)
    unmatched: int = 0
    unmatched_texts: list[tuple[str, int]] = field(default_factory=list)
    # UBI events of actions other than clicks: checked, counted, not stored.
    other_actions: dict[str, int] = field(default_factory=dict)


class _Kept:
    """One kind's events as the checks need them: lines, session numbers, times (in
    microseconds) and names (a click's event id, a dwell's click)."""

    def __init__(self):
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.names: list[str] = []

    def add(self, rows: np.ndarray, events: EventColumns, sessions: np.ndarray, names) -> None:
        self.parts.append((events.line[rows], sessions[rows], events.at[rows]))
        if names is not None:
            self.names += [names[row] for row in rows.tolist()]

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Lines, sessions and times, in line order (``names`` too, from then on)."""
        if not self.parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
        lines, sessions, at = (np.concatenate(part) for part in zip(*self.parts, strict=True))
        order = np.argsort(lines, kind="stable")
        if self.names:
            self.names = [self.names[row] for row in order.tolist()]
        self.parts = [(lines[order], sessions[order], at[order])]
        return self.parts[0]


class Batch:
    """Takes a batch's events a block at a time; then its whole-batch errors and result."""

    def __init__(self, project: Project):
        self.project = project
        self.keys = query_keys(project.queries.values_list("id", "text"))
        self.ids = Duplicates("id", "This event id")
        self.kinds = np.zeros(len(Kind), np.int64)
        self.unmatched: Counter[str] = Counter()
        self.query_ids: set[int] = set()
        self.sessions: dict[str, int] = {}  # session id -> its number in the batch
        self.kept = {kind: _Kept() for kind in Kind}
        self.rows = 0

    def take(self, events: EventColumns) -> tuple[list[str], list[int | None]]:
        """Remember what the checks need of ``events``; return their query keys and ids."""
        size = len(events)
        self.rows += size
        self.kinds += np.bincount(events.kind, minlength=len(Kind))
        self.ids.extend(np.fromiter(map(hash, events.event_id), np.int64, size), events.line)
        numbers = self.sessions
        sessions = np.array([numbers.setdefault(name, len(numbers)) for name in events.session],
                            np.int64)  # fmt: skip
        for kind, names in ((Kind.IMPRESSION, None), (Kind.CLICK, events.event_id),
                            (Kind.DWELL, events.click)):  # fmt: skip
            rows = np.flatnonzero(events.kind == kind)
            self.kept[kind].add(rows, events, sessions, names)
        return self._matched(events)

    def _matched(self, events: EventColumns) -> tuple[list[str], list[int | None]]:
        texts = events.query_text
        normal = {text: normalised(text) for text in set(texts)}
        keys = list(map(normal.__getitem__, texts))
        pages = (events.kind == Kind.IMPRESSION).tolist()
        ids = [self.keys.get(key) if page else None for key, page in zip(keys, pages, strict=True)]
        unmatched = [row for row, page in enumerate(pages) if page and ids[row] is None]
        unmatched.sort(key=events.line.__getitem__)
        self.unmatched.update(keys[row] for row in unmatched)
        self.query_ids.update(query for query in set(ids) if query is not None)
        return keys, ids

    def check(self) -> None:
        """The whole-batch checks that need no database (``errors`` finishes them)."""
        self.repeated, self.late_clicks, self.odd_dwells = [], [], []
        if self.rows:
            names = list(self.sessions)
            self.repeated = list(self.ids.errors())
            self.late_clicks = self._late_clicks(names)
            self.odd_dwells = self._odd_dwells(names)

    def errors(self) -> list[LineError]:
        """Repeated ids, clicks before any results page of their session, dwells of
        unknown clicks (or of another session's, or earlier than theirs); by line."""
        sessions = {session for _, session, _ in self.late_clicks}
        pages = _stored_first_pages(self.project, sessions)
        message = 'No results page of session "{}" at or before this click.'
        errors = [LineError(line, "session", message.format(session))
                  for line, session, moment in self.late_clicks
                  if pages.get(session, NEVER) > moment]  # fmt: skip
        unknown = {click for _, click, _, _, found in self.odd_dwells if found is None}
        clicks = _stored_clicks(self.project, unknown)
        for line, click, session, moment, found in self.odd_dwells:
            if error := _dwell_error(click, session, moment, found or clicks.get(click)):
                errors.append(LineError(line, *error))
        return [*self.repeated, *sorted(errors, key=lambda error: error.line)]

    def _late_clicks(self, names: list[str]) -> list[tuple[int, str, int]]:
        """Clicks with no results page of their session before them in the batch."""
        _, page_sessions, page_times = self.kept[Kind.IMPRESSION].arrays()
        first = np.full(len(names), NEVER)
        np.minimum.at(first, page_sessions, page_times)
        lines, sessions, times = self.kept[Kind.CLICK].arrays()
        late = np.flatnonzero(first[sessions] > times)
        return list(zip(lines[late].tolist(), [names[s] for s in sessions[late].tolist()],
                        times[late].tolist(), strict=True))  # fmt: skip

    def _odd_dwells(self, names: list[str]) -> list[tuple]:
        """Dwells whose click is not in the batch, or is another session's or later:
        (line, click, session, time, the batch's click's session and time or None)."""
        _, click_sessions, click_times = self.kept[Kind.CLICK].arrays()
        lines, sessions, times = self.kept[Kind.DWELL].arrays()
        clicked = self.kept[Kind.DWELL].names
        # A click id used twice is an error of its own; the later click is the one kept.
        index = dict(zip(self.kept[Kind.CLICK].names, range(len(click_times)), strict=True))
        found = np.fromiter(map(index.get, clicked, repeat(-1)), np.int64, len(clicked))
        known = found >= 0
        odd = ~known
        odd[known] = (click_sessions[found[known]] != sessions[known]) | (
            times[known] < click_times[found[known]]
        )
        return [
            (int(lines[row]), clicked[row], names[sessions[row]], int(times[row]),
             (names[click_sessions[found[row]]], int(click_times[found[row]]))
             if found[row] >= 0 else None)
            for row in np.flatnonzero(odd).tolist()
        ]  # fmt: skip

    def result(self, created: int) -> IngestResult:
        kinds = {Kind(kind).label: int(count) for kind, count in enumerate(self.kinds) if count}
        return IngestResult(
            rows=self.rows,
            created=created,
            already_stored=self.rows - created,
            kinds=kinds,
            unmatched=sum(self.unmatched.values()),
            unmatched_texts=self.unmatched.most_common(UNMATCHED_SHOWN),
        )


def _dwell_error(click: str, session: str, moment: int, found) -> tuple[str, str] | None:
    """What is wrong with a dwell of ``click``, given the click's session and time."""
    if found is None:
        return "click", f'No click "{click}" in this batch or stored.'
    click_session, click_moment = found
    if click_session != session:
        return "click", f'Click "{click}" belongs to session "{click_session}", not "{session}".'
    if moment < click_moment:
        return "time", f'is before click "{click}".'
    return None


def _stored_first_pages(project: Project, sessions: set[str]) -> dict[str, int]:
    """The time (in microseconds since 1970) of each session's first stored page."""
    if not sessions:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT session_id, (extract(epoch FROM min(at)) * 1000000)::bigint"
            " FROM searchlogs_searchevent WHERE project_id = %s AND kind = %s"
            " AND session_id = ANY(%s) GROUP BY session_id",
            [project.pk, Kind.IMPRESSION, list(sessions)],
        )
        return dict(cursor.fetchall())


def _stored_clicks(project: Project, click_ids: set[str]) -> dict[str, tuple[str, int]]:
    """The session and time (in microseconds since 1970) of each stored click."""
    if not click_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT event_id, session_id, (extract(epoch FROM at) * 1000000)::bigint"
            " FROM searchlogs_searchevent WHERE project_id = %s AND kind = %s"
            " AND event_id = ANY(%s)",
            [project.pk, Kind.CLICK, list(click_ids)],
        )
        return {event: (session, moment) for event, session, moment in cursor.fetchall()}
