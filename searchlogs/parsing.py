"""A search log in JSON Lines parsed into event rows and line-numbered errors; no database.

One JSON object per line, in one of three shapes (``time`` is ISO 8601 with a zone):

- ``{"type": "impression", "id", "session", "time", "query", "results": [docid, ...],
  "answered": false}``: a results page; ``results`` (the ranked external ids shown)
  and ``answered`` (the page answered the query without a click) are optional.
- ``{"type": "click", "id", "session", "time", "document", "rank"}``: ranks from 1.
- ``{"type": "dwell", "id", "session", "time", "click", "seconds"}`` or with
  ``"end_of_session": true`` instead of ``seconds``: how long after the click
  ``click`` (its event id) the searcher came back, or that they never did.

The rules that need the whole batch (an event id used twice; a click before any
results page of its session; a dwell for an unknown click) are checked by the
service, which also sees the events already stored.
"""

import math
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from judgements.importers.fields import parse_time, text_field
from judgements.importers.json_reading import json_object
from judgements.importers.reading import Lines, nonblank_lines
from judgements.importers.rows import LineError
from searchlogs.models import SearchEvent

Kind = SearchEvent.Kind
KINDS = {kind.label: kind.value for kind in Kind}
MAX_RESULTS = 1000
MAX_RANK = 2**31 - 1
# Clocks disagree a little; an event further ahead than this is refused as not yet
# having happened (a far-future time would otherwise sort after every real one).
CLOCK_SKEW = timedelta(minutes=5)


class EventRow(NamedTuple):
    line: int
    event_id: str
    kind: int
    session: str
    at: datetime
    query_text: str = ""
    documents: tuple[str, ...] = ()
    answered: bool = False
    document: str = ""
    rank: int | None = None
    click: str = ""
    dwell: float | None = None
    end_of_session: bool = False


def search_log_jsonl(
    chunks: Iterable[bytes], *, now: datetime | None = None
) -> Iterator[EventRow | LineError]:
    """Parse a JSON Lines upload into event rows and line-numbered errors.

    Times later than ``now`` (the current time) plus ``CLOCK_SKEW`` are errors.
    """
    latest = (now or datetime.now(UTC)) + CLOCK_SKEW
    for item in nonblank_lines(Lines(chunks)):
        if isinstance(item, LineError):
            yield item
        else:
            yield from line_events(*item, latest)


def line_events(line: int, text: str, latest: datetime) -> list[EventRow | LineError]:
    """The event of one line (or its errors); nothing for a blank line."""
    if not text.strip():
        return []
    item = json_object(line, text)
    if isinstance(item, LineError):
        return [item]
    data = item[1]
    row = _plain_event(line, data, latest)
    return [row] if row is not None else list(event_row(line, data, latest))


def event_row(line: int, data: dict, latest: datetime) -> Iterator[EventRow | LineError]:
    """The event of one line, field by field, with an error for each bad field."""
    kind = KINDS.get(data.get("type")) if isinstance(data.get("type"), str) else None
    if kind is None:
        names = ", ".join(KINDS)
        yield LineError(line, "type", f"{_shown(data.get('type'))} is not one of: {names}.")
        return
    common = {
        "event_id": text_field(data.get("id"), "id", line, limit=200),
        "session": text_field(data.get("session"), "session", line, limit=200),
        "at": _time(data.get("time"), line, latest),
    }
    specific = _SPECIFIC[kind](line, data)
    errors = [v for v in (*common.values(), *specific.values()) if isinstance(v, LineError)]
    if errors:
        yield from errors
        return
    yield EventRow(line, kind=kind, **common, **specific)


def _impression(line: int, data: dict) -> dict:
    return {
        "query_text": text_field(data.get("query"), "query", line, limit=500),
        "documents": _results(data.get("results", []), line),
        "answered": _flag(data.get("answered", False), "answered", line),
    }


def _click(line: int, data: dict) -> dict:
    return {
        "document": text_field(data.get("document"), "document", line, limit=200),
        "rank": _rank(data.get("rank"), line),
    }


def _dwell(line: int, data: dict) -> dict:
    values = {
        "click": text_field(data.get("click"), "click", line, limit=200),
        "end_of_session": _flag(data.get("end_of_session", False), "end_of_session", line),
    }
    seconds = data.get("seconds")
    if values["end_of_session"] is True:
        if seconds is not None:
            message = "Give seconds or end_of_session, not both."
            values["dwell"] = LineError(line, "seconds", message)
        return values
    values["dwell"] = _seconds(seconds, line)
    return values


_SPECIFIC = {Kind.IMPRESSION: _impression, Kind.CLICK: _click, Kind.DWELL: _dwell}


def _time(value, line: int, latest: datetime) -> datetime | LineError:
    if value is None or value == "":
        return LineError(line, "time", "is empty.")
    moment, problem = parse_time(value)
    if problem:
        return LineError(line, "time", problem)
    if moment > latest:
        minutes = CLOCK_SKEW.total_seconds() / 60
        message = f'"{value}" is in the future (more than {minutes:g} minutes from now).'
        return LineError(line, "time", message)
    return moment


def _results(value, line: int) -> tuple[str, ...] | LineError:
    if not isinstance(value, list):
        return LineError(line, "results", "must be a list of document ids.")
    if len(value) > MAX_RESULTS:
        return LineError(line, "results", f"has more than {MAX_RESULTS} documents.")
    ids = [text_field(item, "results", line, limit=200) for item in value]
    problem = next((item for item in ids if isinstance(item, LineError)), None)
    return problem or tuple(ids)


def _flag(value, name: str, line: int) -> bool | LineError:
    return value if isinstance(value, bool) else LineError(line, name, "must be true or false.")


def _rank(value, line: int) -> int | LineError:
    if isinstance(value, bool) or not isinstance(value, int):
        return LineError(line, "rank", f"{_shown(value)} is not a whole number.")
    if not 1 <= value <= MAX_RANK:
        return LineError(line, "rank", f"{value}: ranks start at 1.")
    return value


def _seconds(value, line: int) -> float | LineError:
    if value is None:
        return LineError(line, "seconds", "is missing (or give end_of_session: true).")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return LineError(line, "seconds", f"{_shown(value)} is not a number.")
    try:
        seconds = float(value)
    except OverflowError:  # An integer beyond a double's range (10**400).
        return LineError(line, "seconds", "is too large a number of seconds.")
    if not math.isfinite(seconds) or seconds < 0:
        return LineError(line, "seconds", f"{value} is not a number of seconds >= 0.")
    return seconds


def _shown(value) -> str:
    return "Nothing" if value is None else f'"{str(value)[:100]}"'


def _plain_event(line: int, data: dict, latest: datetime) -> EventRow | None:
    """The event of a line whose every field has its plain, valid form; else None.

    Nearly every line of a real log is plain: strings with nothing to strip,
    numbers of the right type, a time with its zone. Checking that directly
    is several times faster than :func:`event_row`'s field-by-field checks,
    which run (and name every problem) whenever this gives up, so the rows
    and the errors are the same either way.
    """
    kind, event_id, session = data.get("type"), data.get("id"), data.get("session")
    if type(kind) is not str or not _plain(event_id) or not _plain(session):
        return None
    at = _plain_time(data.get("time"), latest)
    if at is None:
        return None
    if kind == "impression":
        query, results, answered = (
            data.get("query"),
            data.get("results", []),
            data.get("answered", False),
        )
        if not _plain(query, 500) or type(answered) is not bool or type(results) is not list:
            return None
        if len(results) > MAX_RESULTS or not all(_plain(result) for result in results):
            return None
        return EventRow(line, event_id, KINDS["impression"], session, at, query, tuple(results),
                        answered)  # fmt: skip
    if kind == "click":
        document, rank = data.get("document"), data.get("rank")
        if not _plain(document) or type(rank) is not int or not 1 <= rank <= MAX_RANK:
            return None
        return EventRow(line, event_id, KINDS["click"], session, at, document=document, rank=rank)
    if kind == "dwell":
        return _plain_dwell(line, data, event_id, session, at)
    return None


def _plain_dwell(line: int, data: dict, event_id: str, session: str, at: datetime):
    click, seconds = data.get("click"), data.get("seconds")
    end_of_session = data.get("end_of_session", False)
    if not _plain(click) or type(end_of_session) is not bool:
        return None
    if end_of_session:
        if seconds is not None:
            return None
    elif not _plain_seconds(seconds):
        return None
    dwell = None if end_of_session else float(seconds)
    return EventRow(line, event_id, KINDS["dwell"], session, at, click=click, dwell=dwell,
                    end_of_session=end_of_session)  # fmt: skip


def _plain_seconds(value) -> bool:
    """A float, or an int small enough to convert exactly, that is finite and >= 0."""
    exact = type(value) is float or (type(value) is int and value < 2**53)
    return exact and 0 <= value < math.inf


def _plain(value, limit: int = 200) -> bool:
    """True for a string ``text_field`` would keep as it is (nothing to strip, no NUL)."""
    return (
        type(value) is str
        and 0 < len(value) <= limit
        and not value[0].isspace()
        and not value[-1].isspace()
        and "\x00" not in value
    )


def _plain_time(value, latest: datetime) -> datetime | None:
    """``parse_time``'s answer for a plain time string no later than ``latest``, else None."""
    if type(value) is not str or not value or value[0].isspace() or value[-1].isspace():
        return None
    try:
        moment = datetime.fromisoformat(value)
        if moment.tzinfo is None:
            return None
        moment = moment.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return moment if moment <= latest else None
