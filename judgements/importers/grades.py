"""Parsers for judgements from other tools (Quepid, TREC, RRE, LTR) and for event logs."""

from collections.abc import Iterable, Iterator

from judgements.importers.catalogue import query_by_qid, query_by_text
from judgements.importers.reading import (
    Duplicates,
    LineDict,
    Lines,
    csv_records,
    grade_of,
    json_lines,
    load_json,
    nonblank_lines,
    parse_time,
    split_lines,
    text_field,
)
from judgements.importers.rows import JudgementRow, LineError, Vocabulary

KINDS = ("grade", "cant_tell", "retract")
EVENT_COLUMNS = ("query", "document", "rater", "kind", "grade", "note", "created_at")


class _Pairs:
    """Builds one graded pair per line and reports a pair that comes back."""

    def __init__(self, vocabulary: Vocabulary, columns: tuple[str, str, str]):
        self.vocabulary, self.columns = vocabulary, columns
        self.seen = Duplicates(columns[1], "This query and document pair")

    def row(self, line: int, query: int | LineError, docid, rating) -> JudgementRow | list:
        """The pair's row, or the errors of its line (a list)."""
        document = self.vocabulary.documents.get(str(docid).strip())
        grade, problem = grade_of(rating, self.vocabulary.grades)
        if document is None or problem or type(query) is not int:
            return self._errors(line, query, document, docid, problem)
        self.seen.add((query << 32) | document, line)
        return JudgementRow(line, query, document, grade)

    def _errors(self, line, query, document, docid, problem) -> list[LineError]:
        errors = [query] if isinstance(query, LineError) else []
        if document is None:
            message = f'"{docid}" is not a document of this project.'
            errors.append(LineError(line, self.columns[1], message))
        if problem:
            errors.append(LineError(line, self.columns[2], problem))
        return errors


def _each(result: JudgementRow | list) -> tuple | list:
    return result if type(result) is list else (result,)


def quepid_csv(chunks: Iterable[bytes], vocabulary: Vocabulary):
    """Quepid's ``query,docid,rating``; a line with only a query (unrated) is skipped."""
    pairs = _Pairs(vocabulary, ("query", "docid", "rating"))
    records = csv_records(Lines(chunks), pairs.columns, lone_first_column=True)
    for item in records:
        if isinstance(item, LineError):
            yield item
            continue
        line, record = item
        query = query_by_text(line, record["query"], vocabulary, "query")
        yield from _each(pairs.row(line, query, record["docid"], record["rating"]))
    yield from pairs.seen.errors()


def qrels(chunks: Iterable[bytes], vocabulary: Vocabulary):
    """TREC qrels: ``qid iteration docid relevance``; the iteration column is ignored."""
    pairs = _Pairs(vocabulary, ("qid", "docid", "rel"))
    for item in split_lines(Lines(chunks), ("qid", "iter", "docid", "rel")):
        if isinstance(item, LineError):
            yield item
            continue
        line, (qid, _, docid, rel) = item
        yield from _each(pairs.row(line, query_by_qid(line, qid, vocabulary, "qid"), docid, rel))
    yield from pairs.seen.errors()


def ltr(chunks: Iterable[bytes], vocabulary: Vocabulary):
    """``grade qid:N [feature:value ...] # docid query text`` (Quepid, RankLib)."""
    pairs = _Pairs(vocabulary, ("qid", "docid", "grade"))
    texts: dict[str, tuple[str, int]] = {}
    for item in nonblank_lines(Lines(chunks)):
        if isinstance(item, LineError):
            yield item
            continue
        line, text = item
        head, _, comment = text.partition("#")
        fields, tail = head.split(), comment.split(maxsplit=1)
        if len(fields) < 2 or not fields[1].startswith("qid:") or not tail:
            yield LineError(line, None, 'Expected "grade qid:N # docid query".')
            continue
        qid, query_text = fields[1][4:], tail[1].strip() if len(tail) > 1 else ""
        first_text, first_line = texts.setdefault(qid, (query_text, line))
        if first_text != query_text:
            message = f'qid:{qid} was "{first_text}" on line {first_line}.'
            yield LineError(line, "qid", message)
            continue
        query = (
            query_by_text(line, query_text, vocabulary, "query")
            if query_text
            else query_by_qid(line, qid, vocabulary, "qid")
        )
        yield from _each(pairs.row(line, query, tail[0], fields[0]))
    yield from pairs.seen.errors()


def rre_json(chunks: Iterable[bytes], vocabulary: Vocabulary):
    """RRE ratings JSON, and the variant Quepid exports."""
    data, errors = load_json(chunks)
    yield from errors
    if errors:
        return
    pairs = _Pairs(vocabulary, ("query", "relevant_documents", "gain"))
    for group in _rre_groups(data):
        if isinstance(group, LineError):
            yield group
            continue
        texts = _rre_query_texts(group)
        if not texts:
            yield LineError(group.line, "queries", "The query group names no query.")
        for text in texts:
            query = query_by_text(group.line, text, vocabulary, "query")
            for line, docid, gain in _rre_ratings(group):
                yield from _each(pairs.row(line, query, docid, gain))
    yield from pairs.seen.errors()


def _rre_groups(data) -> Iterator[LineDict | LineError]:
    if not isinstance(data, LineDict):
        yield LineError(1, None, 'Expected an object with "query_groups", "topics" or "queries".')
        return
    groups = data.get("query_groups") or data.get("queries") or []
    for topic in data.get("topics") or []:
        groups = [*groups, *(topic.get("query_groups") or [] if isinstance(topic, dict) else [])]
    if not groups:
        yield LineError(data.line, None, "The file has no query groups.")
    for group in groups:
        valid = isinstance(group, LineDict) and "relevant_documents" in group
        message = 'A query group needs "relevant_documents".'
        yield group if valid else LineError(getattr(group, "line", None), None, message)


def _rre_query_texts(group: LineDict) -> list[str]:
    queries = group.get("queries") or [group]
    placeholders = [entry.get("placeholders") for entry in queries if isinstance(entry, dict)]
    texts = [
        str(values.get("$query", next(iter(values.values()), "")))
        for values in placeholders
        if isinstance(values, dict) and values
    ]
    return texts or ([str(group["name"])] if group.get("name") else [])


def _rre_ratings(group: LineDict) -> Iterator[tuple[int, str, object]]:
    """(line, docid, gain) of every rating in the group's ``relevant_documents``."""
    ratings, line = group["relevant_documents"], group.line
    if isinstance(ratings, list):
        for entry in ratings:
            entry = entry if isinstance(entry, dict) else {}
            for docid in entry.get("document_ids") or []:
                yield getattr(entry, "line", line), docid, entry.get("gain", "")
    elif isinstance(ratings, dict):
        for key, value in ratings.items():
            if isinstance(value, list):  # Quepid: {grade: [docid, ...]}
                yield from ((line, docid, key) for docid in value)
            else:  # RRE: {docid: {"gain": grade}}
                gain = value.get("gain", "") if isinstance(value, dict) else value
                yield getattr(value, "line", line), key, gain


def events_jsonl(chunks: Iterable[bytes], vocabulary: Vocabulary):
    """Judgement events as this app exports them; see EVENT_COLUMNS."""
    yield from _events(json_lines(Lines(chunks)), vocabulary)


def events_csv(chunks: Iterable[bytes], vocabulary: Vocabulary):
    records = csv_records(Lines(chunks), ("query", "document", "rater", "grade"))
    yield from _events(records, vocabulary)


def _events(records, vocabulary: Vocabulary):
    seen = Duplicates(None, "This event")
    for item in records:
        if isinstance(item, LineError):
            yield item
            continue
        row = event_row(*item, vocabulary)
        if isinstance(row, list):
            yield from row
            continue
        key = (row.query_id, row.document_id, row.rater_id, row.kind, row.grade, row.created_at)
        seen.add(key, row.line)
        yield row
    yield from seen.errors()


def event_row(line: int, record: dict, vocabulary: Vocabulary) -> JudgementRow | list:
    query = query_by_text(line, record.get("query"), vocabulary, "query")
    document = vocabulary.documents.get(str(record.get("document", "")).strip())
    rater = vocabulary.raters.get(str(record.get("rater", "")).strip())
    kind = str(record.get("kind") or "grade").strip()
    value = record.get("grade")
    grade, problem = grade_of("" if value is None else value, vocabulary.grades)
    if kind != "grade":
        grade, problem = None, None if value in (None, "") else f"A {kind} event has no grade."
    note = text_field(record.get("note"), "note", line, limit=10_000, required=False)
    created_at, late = parse_time(record["created_at"]) if record.get("created_at") else (None, "")
    errors = [
        query if isinstance(query, LineError) else None,
        document is None and LineError(line, "document", "is not a document of the project."),
        rater is None and LineError(line, "rater", "is not a user of this site."),
        kind not in KINDS and LineError(line, "kind", f"must be one of {', '.join(KINDS)}."),
        problem and LineError(line, "grade", problem),
        note if isinstance(note, LineError) else None,
        late and LineError(line, "created_at", late),
    ]
    if errors := [error for error in errors if error]:
        return errors
    return JudgementRow(line, query, document, grade, kind, rater, note, created_at)
