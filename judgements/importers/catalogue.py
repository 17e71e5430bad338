"""Parsers for what gets judged: queries, documents and result lists."""

import json
import math
from collections.abc import Iterable, Iterator

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator

from judgements.importers.reading import (
    Duplicates,
    LineDict,
    Lines,
    csv_records,
    json_lines,
    load_json,
    parse_time,
    split_lines,
    text_field,
)
from judgements.importers.rows import (
    DocumentRow,
    HitRow,
    LineError,
    QueryRow,
    RunInfo,
    Vocabulary,
)

ID_KEYS = ("id", "external_id", "docid", "_id")
MAX_RANK = 2**31 - 1
DOCUMENT_KEYS = {*ID_KEYS, "title", "url", "snippet", "text", "image_url"}
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
    data, errors = load_json(chunks)
    if isinstance(data, dict) and "queries" in data:
        data = data["queries"]
    if not errors and not isinstance(data, list):
        errors = [LineError(1, None, 'Expected a list of queries or {"queries": [...]}.')]
    yield from errors
    checks = _QueryChecks()
    for entry in [] if errors else data:
        if isinstance(entry, LineDict):
            text = entry.get("text", entry.get("query"))
            description, key = entry.get("description", ""), entry.get("id", "")
            yield from checks.row(entry.line, text, description, key)
        elif isinstance(entry, str):
            yield from checks.row(None, entry, "", "")
        else:
            yield LineError(None, "queries", "Each query must be a string or an object.")
    yield from checks.errors()


class _QueryChecks:
    """The rules a query row must pass, and repeats of text or id across the file."""

    def __init__(self):
        self.texts = Duplicates("text", "This query")
        self.keys = Duplicates("id", "This id")

    def row(self, line, text, description, key) -> Iterator[QueryRow | LineError]:
        text = text_field(text, "text", line, limit=500)
        description = text_field(description, "description", line, limit=10_000, required=False)
        key = text_field(key, "id", line, limit=200, required=False)
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
    repeats = Duplicates("id", "This document id")
    for item in json_lines(Lines(chunks)):
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


def document_row(line: int, data: dict) -> DocumentRow | list[LineError]:
    """A document from a JSON object: its id, display fields, and the rest as ``fields``."""
    key = next((name for name in ID_KEYS if name in data), "id")
    values = {
        "external_id": text_field(data.get(key), key, line, limit=200),
        "title": text_field(data.get("title"), "title", line, limit=500, required=False),
        "url": _url(data.get("url"), "url", line),
        "snippet": text_field(
            data.get("snippet", data.get("text")), "snippet", line, limit=100_000, required=False
        ),
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
    """A TREC run: ``qid Q0 docid rank score tag``, one run (one tag) per file."""
    hits = _HitChecks()
    tag = None
    for item in split_lines(Lines(chunks), ("qid", "Q0", "docid", "rank", "score", "tag")):
        if isinstance(item, LineError):
            yield item
            continue
        line, (qid, _, docid, rank, score, run_tag) = item
        if tag is None:
            tag = run_tag
            yield RunInfo(name=tag)
        elif run_tag != tag:
            yield LineError(line, "tag", f'"{run_tag}" is not "{tag}": a file holds one run.')
            continue
        query = query_by_qid(line, qid, vocabulary, "qid")
        yield from hits.row(line, query, docid, rank, score)
    yield from hits.errors()


def run_json(chunks: Iterable[bytes], vocabulary: Vocabulary):
    data, errors = load_json(chunks)
    if not errors and not (isinstance(data, dict) and isinstance(data.get("queries"), list)):
        errors = [LineError(1, None, 'Expected {"name": ..., "queries": [...]}.')]
    if errors:
        yield from errors
        return
    captured_at, problem = (None, None)
    if "captured_at" in data:
        captured_at, problem = parse_time(data["captured_at"])
    if problem:
        yield LineError(data.line, "captured_at", problem)
    yield RunInfo(str(data.get("name") or ""), str(data.get("engine") or ""), captured_at)
    hits = _HitChecks()
    for entry in data["queries"]:
        if not isinstance(entry, LineDict) or not isinstance(entry.get("hits"), list):
            yield LineError(getattr(entry, "line", None), "queries", 'Needs "query" and "hits".')
            continue
        query = query_by_text(entry.line, entry.get("query"), vocabulary, "query")
        for rank, hit in enumerate(entry["hits"], start=1):
            yield from _json_hit(hits, entry.line, query, rank, hit)
    yield from hits.errors()


def _json_hit(hits: "_HitChecks", line: int, query, rank: int, hit) -> Iterator:
    if not isinstance(hit, LineDict):
        yield LineError(line, "hits", "Each hit must be an object.")
        return
    document = document_row(hit.line, hit)
    if isinstance(document, list):
        yield from document
        return
    score = hit.get("score")
    yield from hits.row(hit.line, query, document.external_id, rank, score, document)


class _HitChecks:
    """The rules a hit must pass; one rank and one appearance per document per query."""

    def __init__(self):
        self.pairs = Duplicates("docid", "This document for this query")
        self.ranks = Duplicates("rank", "This rank for this query")

    def row(self, line, query, docid, rank, score, document=None):
        errors = [query] if isinstance(query, LineError) else []
        docid = text_field(docid, "docid", line, limit=200)
        rank, score = _rank(rank, line), _score(score, line)
        errors += [value for value in (docid, rank, score) if isinstance(value, LineError)]
        if errors:
            yield from errors
            return
        self.pairs.add((query, docid), line)
        self.ranks.add((query << 32) | rank, line)
        yield HitRow(line, query, docid, rank, score, document)

    def errors(self) -> Iterator[LineError]:
        yield from self.pairs.errors()
        yield from self.ranks.errors()


def _rank(text, line: int) -> int | LineError:
    try:
        rank = int(text)
    except (TypeError, ValueError):
        return LineError(line, "rank", f'"{text}" is not a whole number.')
    if rank < 1:
        return LineError(line, "rank", f"{rank}: ranks start at 1.")
    return rank if rank <= MAX_RANK else LineError(line, "rank", f"{rank} is too large.")


def _score(text, line: int) -> float | LineError | None:
    if text is None:
        return None
    try:
        score = float(text)
    except (TypeError, ValueError):
        return LineError(line, "score", f'"{text}" is not a number.')
    return score if math.isfinite(score) else LineError(line, "score", "must be finite.")


def query_by_text(line, text, vocabulary: Vocabulary, column: str) -> int | LineError:
    query_id = vocabulary.queries.get(str(text).strip()) if text is not None else None
    if query_id is None:
        return LineError(line, column, f'"{text}" is not a query of this project.')
    return query_id


def query_by_qid(line, qid: str, vocabulary: Vocabulary, column: str) -> int | LineError:
    query_id = vocabulary.qids.get(qid)
    if query_id is None:
        return LineError(line, column, f'"{qid}" is not a query id of this project.')
    return query_id
