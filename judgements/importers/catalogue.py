"""Parsers for what gets judged: queries, documents and result lists."""

import itertools
import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator

from judgements.importers.csv_reading import csv_records
from judgements.importers.fields import (
    ascii_number,
    key_field,
    parse_time,
    single_line_text,
    text_field,
)
from judgements.importers.json_reading import JsonValue, LineDict, json_lines, json_values
from judgements.importers.reading import Duplicates, Lines, nonblank_lines
from judgements.importers.rows import (
    DocumentRow,
    HitRow,
    LineError,
    Note,
    QueryRow,
    RunInfo,
    Skip,
    Vocabulary,
)

ID_KEYS = ("id", "external_id", "docid", "_id")
# Where IR toolkits (pyserini, ir_datasets) keep a document's text.
SNIPPET_KEYS = ("snippet", "contents", "text", "body")
MAX_RANK = 2**31 - 1
LAYOUT_PEEK_BYTES = 1 << 16  # how far a documents file is read to tell its layout
DOCUMENT_KEYS = {*ID_KEYS, *SNIPPET_KEYS, "title", "url", "image_url"}
_url_validator = URLValidator()


def queries_csv(chunks: Iterable[bytes], vocabulary: Vocabulary | None = None):
    lines = Lines(chunks)
    checks = _QueryChecks()
    for item in csv_records(lines, ("text|query",)):
        if isinstance(item, LineError):
            yield item
            continue
        line, record = item
        text = record["text"] if "text" in record else record["query"]
        yield from checks.row(line, text, record.get("description", ""), record.get("id", ""))
    yield from checks.errors()


def queries_json(chunks: Iterable[bytes], vocabulary: Vocabulary | None = None):
    checks, found = _QueryChecks(), False
    for item in json_values(chunks, {"item", "queries.item"}.__contains__, {"queries": list}):
        if isinstance(item, LineError):
            yield item
            continue
        found, entry = True, item.value
        if isinstance(entry, LineDict):
            text = entry.get("text", entry.get("query"))
            description, key = entry.get("description", ""), entry.get("id", "")
            yield from checks.row(entry.line, text, description, key)
        elif isinstance(entry, str):
            yield from checks.row(item.line, entry, "", "")
        else:
            yield LineError(item.line, "queries", "Each query must be a string or an object.")
    if not found:
        yield LineError(1, None, 'Expected a list of queries or {"queries": [...]}.')
    yield from checks.errors()


class _QueryChecks:
    """The rules a query row must pass, and repeats of text or id across the file."""

    def __init__(self):
        self.texts = Duplicates("text", "This query")
        self.keys = Duplicates("id", "This id")

    def row(self, line, text, description, key) -> Iterator[QueryRow | LineError]:
        text = single_line_text(text, "text", line, limit=500)
        description = text_field(description, "description", line, limit=10_000, required=False)
        key = text_field(key, "id", line, limit=200, required=False) if key != "" else ""
        if isinstance(key, str) and key:
            key = key_field(key, "id", line)
        errors = [value for value in (text, description, key) if isinstance(value, LineError)]
        if errors:
            yield from errors
            return
        self.texts.add(text, line or 0)
        if key:
            self.keys.add(key, line or 0)
        yield QueryRow(line or 0, text, description, key)

    def errors(self) -> Iterator[LineError]:
        yield from self.texts.errors()
        yield from self.keys.errors()


def documents_jsonl(chunks: Iterable[bytes], vocabulary: Vocabulary | None = None):
    """One document object per line; or, as anserini's and pyserini's JsonCollection
    also read them, a JSON array of documents, or documents printed over several
    lines one after another (a file whose first line is a lone ``{``)."""
    repeats = Duplicates("id", "This document id")
    chunks, layout = _json_layout(chunks)
    items = json_lines(Lines(chunks)) if layout == "lines" else _json_documents(chunks, layout)
    for item in items:
        if isinstance(item, LineError):
            yield item
            continue
        document = document_row(*item)
        if isinstance(document, list):
            yield from document
        else:
            repeats.add(document.external_id, document.line)
            yield document
    yield from repeats.errors()


def _json_layout(chunks: Iterable[bytes]) -> tuple[Iterator[bytes], str]:
    """The upload's chunks, unchanged, and how its documents are laid out: ``lines``
    (JSON Lines), ``array`` (a JSON array) or ``objects`` (pretty-printed objects)."""
    chunks, head = iter(chunks), b""
    for chunk in chunks:
        head += chunk
        start = head.removeprefix(b"\xef\xbb\xbf").lstrip()
        if b"\n" in start or len(head) > LAYOUT_PEEK_BYTES:
            break
    start = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if start.startswith(b"["):
        layout = "array"
    elif start.split(b"\n", 1)[0].strip() == b"{":
        layout = "objects"
    else:
        layout = "lines"
    return itertools.chain([head], chunks), layout


def _json_documents(
    chunks: Iterator[bytes], layout: str
) -> Iterator[tuple[int, dict] | LineError]:
    """``(line, object)`` per document of a JSON array or of objects one after another."""
    objects = layout == "objects"
    wanted = "".__eq__ if objects else "item".__eq__
    for item in json_values(chunks, wanted, multiple_values=objects):
        if isinstance(item, LineError):
            yield item
        elif isinstance(item.value, dict):
            yield item.line, item.value
        else:
            yield LineError(item.line, None, "Each document must be a JSON object.")


def document_row(line: int, data: dict) -> DocumentRow | list[LineError]:
    """A document from a JSON object: its id, display fields, and the rest as ``fields``.

    The snippet raters see is ``snippet``, else the text IR toolkits write under
    ``contents``, ``text`` or ``body``.
    """
    key = next((name for name in ID_KEYS if name in data), "id")
    snippet = next((name for name in SNIPPET_KEYS if data.get(name) not in (None, "")), "snippet")
    values = {
        "external_id": key_field(data.get(key), key, line),
        "title": text_field(data.get("title"), "title", line, limit=500, required=False),
        "url": _url(data.get("url"), "url", line),
        "snippet": text_field(data.get(snippet), snippet, line, limit=100_000, required=False),
        "image_url": _url(data.get("image_url"), "image_url", line),
    }
    errors = [value for value in values.values() if isinstance(value, LineError)]
    if errors:
        return errors
    fields = {name: value for name, value in data.items() if name not in DOCUMENT_KEYS}
    try:
        stored = json.dumps(fields, allow_nan=False)
    except ValueError:
        return [LineError(line, None, "A field holds NaN or Infinity, which JSON lacks.")]
    if "\\u0000" in stored:
        return [LineError(line, None, "A field contains a NUL character.")]
    return DocumentRow(line, fields=fields, **values)


def _url(value, name: str, line: int) -> str | LineError:
    text = text_field(value, name, line, limit=2000, required=False)
    if isinstance(text, LineError) or not text:
        return text
    try:
        _url_validator(text)
    except ValidationError:
        return LineError(line, name, f'"{text[:100]}" is not a URL.')
    return text


def run_trec(chunks: Iterable[bytes], vocabulary: Vocabulary):
    """A TREC run: ``qid Q0 docid rank score tag [more columns]``; the file is one run.

    As in trec_eval, lines whose first field starts with ``#`` are comments, columns
    after the tag are ignored, and so is the rank column: the service orders each
    query's hits by score, then document id, both descending. The tag is a label:
    the list is named after the first line's, and a file whose tag changes from
    line to line (trectools' test runs tag each line R or NR) is still one run, as
    trec_eval reads it; the summary says so.
    """
    hits, unknown, tag = _HitChecks(), _Unknown("qid", "query ids"), None
    other_tags: Counter[str] = Counter()
    for item in nonblank_lines(Lines(chunks)):
        if isinstance(item, LineError):
            yield item
            continue
        line, parts = item[0], item[1].split()
        if parts[0].startswith("#"):
            yield Skip(line, "comment lines")
            continue
        if len(parts) < 6:
            message = f"{len(parts)} columns where qid Q0 docid rank score tag are expected."
            yield LineError(line, None, message)
            continue
        qid, _, docid, rank, score, run_tag = parts[:6]
        if tag is None:
            tag = run_tag
            yield RunInfo(name=tag)
        elif run_tag != tag:
            other_tags[run_tag] += 1
        query, key = query_by_qid(line, qid, vocabulary, "qid", unknown)
        yield from hits.trec_row(line, query, docid, rank, score, key)
    if other_tags:
        yield Note(_tags_note(tag, other_tags))
    yield from unknown.errors()
    yield from hits.errors()


def _tags_note(first: str, others: Counter) -> str:
    shown = ", ".join(f'"{name[:60]}" ({count:,} lines)' for name, count in others.most_common(5))
    more = f" and {len(others) - 5:,} more" if len(others) > 5 else ""
    return (
        f'The tag column changes from line to line ({len(others) + 1:,} tags: "{first[:60]}" '
        f"first, then {shown}{more}). Read as one run, as trec_eval reads it: the tag is "
        f'a label, and the list is named after the first line\'s ("{first[:60]}").'
    )


def run_json(chunks: Iterable[bytes], vocabulary: Vocabulary):
    """A result list as JSON; each query's hits are ranked in list order."""
    info, hits, found = {}, _HitChecks(), False
    unknown = _Unknown("query", "queries")
    wanted = {"name", "engine", "captured_at", "queries.item"}.__contains__
    for item in json_values(chunks, wanted, {"queries": list}):
        if isinstance(item, LineError):
            yield item
        elif item.prefix != "queries.item":
            info[item.prefix] = item
        else:
            if not found:
                found = True
                yield from _run_info(info)
            yield from _json_query(hits, unknown, vocabulary, item)
    if not found:
        yield LineError(1, None, 'Expected {"name": ..., "queries": [...]}.')
    yield from unknown.errors()
    yield from hits.errors()


def _run_info(info: dict[str, JsonValue]) -> Iterator[RunInfo | LineError]:
    captured_at, problem = None, None
    if "captured_at" in info:
        captured_at, problem = parse_time(info["captured_at"].value)
    if problem:
        yield LineError(info["captured_at"].line, "captured_at", problem)
    name, engine = (str(info[key].value) if key in info else "" for key in ("name", "engine"))
    yield RunInfo(name, engine, captured_at)


def _json_query(hits, unknown, vocabulary: Vocabulary, item: JsonValue) -> Iterator:
    entry = item.value
    if not isinstance(entry, LineDict) or not isinstance(entry.get("hits"), list):
        yield LineError(item.line, "queries", 'Each query needs "query" and "hits" (a list).')
        return
    query = query_by_text(entry.line, entry.get("query"), vocabulary, "query", unknown)
    key = ""
    if query is None and vocabulary.create_missing:
        key = single_line_text(entry.get("query"), "query", entry.line, limit=500)
        query, key = (key, "") if isinstance(key, LineError) else (None, key)
    for rank, hit in enumerate(entry["hits"], start=1):
        if not isinstance(hit, LineDict):
            yield LineError(entry.line, "hits", "Each hit must be an object.")
            continue
        document = document_row(hit.line, hit)
        if isinstance(document, list):
            yield from document
            continue
        score = hit.get("score")
        yield from hits.row(hit.line, query, document.external_id, rank, score, document, key)


class _HitChecks:
    """The rules a hit must pass; one appearance per document per query."""

    def __init__(self):
        self.pairs = Duplicates("docid", "This document for this query")

    def row(self, line, query, docid, rank, score, document=None, key="") -> tuple | list:
        """The hit (in a tuple), or the errors of its line (a list)."""
        errors = [query] if isinstance(query, LineError) else []
        docid, score = key_field(docid, "docid", line), _score(score, line)
        errors += [value for value in (docid, score) if isinstance(value, LineError)]
        if errors:
            return errors
        if query is None and not key:
            return ()  # An unknown query, reported once at the end of the file.
        self.pairs.add((query if query is not None else key, docid), line)
        return (HitRow(line, query, docid, rank, score, document, key),)

    def trec_row(self, line, query, docid: str, rank: str, score: str, key: str):
        """``row`` for the fields of a TREC line: whitespace-free strings, so shorter."""
        number = ascii_number(score)
        if (
            type(query) is int
            and len(docid) <= 200
            and number is not None
            and math.isfinite(number)
        ):
            self.pairs.add((query, docid), line)
            return (HitRow(line, query, docid, _file_rank(rank), number),)
        return self.row(line, query, docid, _file_rank(rank), score, key=key)

    def errors(self) -> Iterator[LineError]:
        yield from self.pairs.errors()


def _file_rank(text: str) -> int | None:
    # Kept only to tell whether trec_eval's order differs from the file's ranks.
    if text.isascii() and text.isdigit() and len(text) < 19:
        return int(text)
    number = ascii_number(text)
    whole = number is not None and number.is_integer() and abs(number) < 2**62
    return int(number) if whole else None


def _score(text, line: int) -> float | LineError | None:
    if text is None:
        return None
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        return LineError(line, "score", "must be a number.")
    score = ascii_number(str(text).strip())
    if score is None:
        return LineError(line, "score", f'"{text}" is not a number.')
    return score if math.isfinite(score) else LineError(line, "score", "must be finite.")


class _Unknown:
    """Names the file gives that the project lacks, reported once at the end of the file:
    "2,934 unknown documents, e.g. ..." rather than a line each."""

    SHOWN = 5

    def __init__(self, column: str, what: str):
        self.column, self.what, self.names, self.first_line = column, what, {}, None

    def add(self, line: int | None, name: str) -> None:
        if name not in self.names:
            self.names[name] = line
            self.first_line = self.first_line or line

    def errors(self) -> Iterator[LineError]:
        if not self.names:
            return
        examples = ", ".join(
            f'"{name[:60]}" (line {line})' for name, line in list(self.names.items())[: self.SHOWN]
        )
        message = (
            f"{len(self.names):,} {self.what} unknown to the project, e.g. {examples}. "
            "Import them first, or import with create_missing to create them."
        )
        yield LineError(self.first_line, self.column, message)


def query_by_text(line, text, vocabulary: Vocabulary, column: str, unknown=None):
    """The id of the query named by ``text``; None (noted in ``unknown``) or a LineError
    when the project has no such query."""
    if isinstance(text, dict | list | bool):
        return LineError(line, column, "must be a string.")
    query_id = vocabulary.queries.get(str(text).strip()) if text is not None else None
    if query_id is not None:
        return query_id
    if unknown is None or text is None or not str(text).strip():
        return LineError(line, column, f'"{text}" is not a query of this project.')
    if not vocabulary.create_missing:
        unknown.add(line, str(text).strip())
    return None


def query_by_qid(line, qid: str, vocabulary: Vocabulary, column: str, unknown: "_Unknown"):
    """(query id, key): the query whose external id is ``qid``; with ``create_missing``
    an unknown qid gives (None, qid), a query to create; otherwise (None, "") noted in
    ``unknown``."""
    query_id = vocabulary.qids.get(qid)
    if query_id is not None:
        return query_id, ""
    if vocabulary.create_missing:
        key = key_field(qid, column, line)
        return (key, "") if isinstance(key, LineError) else (None, key)
    unknown.add(line, qid)
    return None, ""
