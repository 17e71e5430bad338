"""Reading one field of an upload: grades, numbers, times and texts, with the error that
names the line and the field."""

import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from judgements.importers.rows import LineError


def grade_of(text, grades: frozenset[int]) -> tuple[int | None, str | None]:
    """The grade in ``text`` if it is a whole number on the scale, else an error message."""
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        return None, f"must be a number, not {_kind_of(text)}."
    return _grade_of(text, grades)


def _kind_of(value) -> str:
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else "true or false"


@lru_cache(maxsize=4096)
def _grade_of(text, grades: frozenset[int]) -> tuple[int | None, str | None]:
    # Cached: a file repeats a handful of grade spellings a million times.
    value = str(text).strip()
    if not value:
        return None, "is empty."
    number = ascii_number(value)
    if number is None:
        return None, f'"{value}" is not a number (digits 0-9 only).'
    if not number.is_integer():
        return None, f'"{value}" is not a whole number.'
    if int(number) not in grades:
        return None, f'"{value}" is outside the scale {scale_text(grades)}.'
    return int(number), None


def ascii_number(text: str) -> float | None:
    """``float(text)`` for text in ASCII digits; Python also reads Arabic-Indic or
    full-width digits, which no other tool of the chain does."""
    if not text.isascii():
        return None
    try:
        return float(text)
    except ValueError:
        return None


def scale_text(grades: Iterable[int]) -> str:
    values = sorted(grades)
    if values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}-{values[-1]}"
    return ", ".join(map(str, values))


FUTURE_SKEW = timedelta(minutes=5)


def parse_time(text) -> tuple[datetime | None, str | None]:
    """An aware ISO 8601 time, in UTC, else an error message."""
    try:
        moment = datetime.fromisoformat(str(text).strip())
    except ValueError:
        return None, f'"{text}" is not an ISO 8601 time.'
    if moment.tzinfo is None:
        return None, f'"{text}" needs a time zone (for example Z or +00:00).'
    try:
        # PostgreSQL refuses offsets beyond 15:59 that Python accepts.
        return moment.astimezone(UTC), None
    except OverflowError:
        return None, f'"{text}" is out of range.'


def past_time(text) -> tuple[datetime | None, str | None]:
    """``parse_time``, refusing times later than now (plus a few minutes of clock skew):
    an event dated in the future would stay its rater's current answer until then."""
    moment, problem = parse_time(text)
    if moment is not None and moment > datetime.now(UTC) + FUTURE_SKEW:
        return None, f'"{text}" is in the future; events cannot be dated later than now.'
    return moment, problem


def text_field(value, name: str, line: int, *, limit: int, required=True):
    """A string field of at most ``limit`` characters, or a LineError."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return LineError(line, name, "is empty.") if required else ""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return LineError(line, name, "must be a string.")
    value = str(value).strip() if isinstance(value, str) else str(value)
    if "\x00" in value:
        return LineError(line, name, "contains a NUL character.")
    if len(value) > limit:
        return LineError(line, name, f"is longer than {limit} characters.")
    return value


def key_field(value, name: str, line: int, *, limit: int = 200):
    """An identifier (a document id): text without spaces or line ends, which would
    break the whitespace-separated qrels and run files it is exported to."""
    key = text_field(value, name, line, limit=limit)
    if isinstance(key, str) and _WHITESPACE.search(key):
        return LineError(line, name, f"{key[:100]!r} contains whitespace; ids cannot.")
    return key


_WHITESPACE = re.compile(r"\s")
MISSING_VALUES = {"nan", "null", "none", "n/a", "#n/a"}


def single_line_text(value, name: str, line: int, *, limit: int):
    """A one-line text such as a query; a spreadsheet's missing-value marker is refused."""
    text = text_field(value, name, line, limit=limit)
    if isinstance(text, str) and text.lower() in MISSING_VALUES:
        return LineError(line, name, f'"{text}" is how spreadsheets write a missing value.')
    if isinstance(text, str) and ("\n" in text or "\r" in text):
        return LineError(line, name, "contains a line break (is a quote left open?).")
    return text
