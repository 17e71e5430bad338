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
from datetime import datetime
from typing import NamedTuple

from judgements.importers.reading import Lines, json_lines, parse_time, text_field
from judgements.importers.rows import LineError
from searchlogs.models import SearchEvent

Kind = SearchEvent.Kind
KINDS = {kind.label: kind.value for kind in Kind}
MAX_RESULTS = 1000
MAX_RANK = 2**31 - 1


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


def search_log_jsonl(chunks: Iterable[bytes]) -> Iterator[EventRow | LineError]:
    for item in json_lines(Lines(chunks)):
        if isinstance(item, LineError):
            yield item
        else:
            yield from event_row(*item)


def event_row(line: int, data: dict) -> Iterator[EventRow | LineError]:
    kind = KINDS.get(data.get("type")) if isinstance(data.get("type"), str) else None
    if kind is None:
        names = ", ".join(KINDS)
        yield LineError(line, "type", f"{_shown(data.get('type'))} is not one of: {names}.")
        return
    common = {
        "event_id": text_field(data.get("id"), "id", line, limit=200),
        "session": text_field(data.get("session"), "session", line, limit=200),
        "at": _time(data.get("time"), line),
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


def _time(value, line: int) -> datetime | LineError:
    if value is None or value == "":
        return LineError(line, "time", "is empty.")
    moment, problem = parse_time(value)
    return LineError(line, "time", problem) if problem else moment


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
    if not math.isfinite(value) or value < 0:
        return LineError(line, "seconds", f"{value} is not a number of seconds >= 0.")
    return float(value)


def _shown(value) -> str:
    return "Nothing" if value is None else f'"{str(value)[:100]}"'
