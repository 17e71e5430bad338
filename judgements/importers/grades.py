"""Parsers for judgements from other tools (Quepid, TREC, RRE, LTR, OpenSearch) and for
event logs (this app's, and a Quepid book's per-rater judgements)."""

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from itertools import compress

import numpy as np

from judgements.importers.catalogue import _Unknown, query_by_qid, query_by_text
from judgements.importers.csv_reading import CsvBlock, csv_records
from judgements.importers.fields import grade_of, key_field, past_time, scale_text, text_field
from judgements.importers.json_reading import LineDict, json_lines, json_values
from judgements.importers.reading import Duplicates, LineBlock, Lines, nonblank_lines, unzipped
from judgements.importers.rows import (
    JudgementBlock,
    JudgementRow,
    LineError,
    Note,
    Skip,
    Vocabulary,
)

KINDS = ("grade", "cant_tell", "retract")
EVENT_COLUMNS = ("id", "query", "document", "rater", "kind", "grade", "note", "created_at")
UNRATED = "unrated (no grade)"
COMMENTS = "comment lines"


class _Pairs:
    """Builds graded pairs: resolves documents, checks grades and repeats.

    Unknown documents are reported once at the end of the file (or, with
    ``create_missing``, become rows to create); so are grades outside the scale, in
    one message that names the scale and the file's grades.
    """

    def __init__(self, vocabulary: Vocabulary, columns: tuple[str, str, str]):
        self.vocabulary, self.columns = vocabulary, columns
        self.seen = Duplicates(columns[1], "This query and document pair")
        self.unknown = _Unknown(columns[1], "documents")
        self.unknown_queries = _Unknown(columns[0], "queries")
        self.off_scale: list[tuple[int, float]] = []

    def row(self, line: int, query, docid, rating, **event) -> tuple | list:
        """The pair's row (in a tuple), or the errors of its line (a list); ``query`` is
        an id, a LineError, None for an unknown query, or a ``(None, key)`` query to
        create."""
        if type(query) is int and type(docid) is str and not event:
            # The common case, kept short: a file of known queries and documents.
            document = self.vocabulary.documents.get(docid)
            grade, problem = grade_of(rating, self.vocabulary.grades)
            if document is not None and problem is None:
                self.seen.add((query << 32) | document, line)
                return (JudgementRow(line, query, document, grade),)
        return list(self._row(line, query, docid, rating, **event))

    def block(self, lines, query_ids: np.ndarray, docids: list[str], ratings: list[str]):
        """``row``'s rows for many lines at once (``query_ids`` known), as a
        JudgementBlock, when each is its common case; else None, and nothing is noted."""
        documents = list(map(self.vocabulary.documents.get, docids))
        grades = {rating: grade_of(rating, self.vocabulary.grades) for rating in set(ratings)}
        if None in documents or any(problem for _, problem in grades.values()):
            return None
        # row() makes each pair's key in Python, where a query id past 31 bits overflows.
        if query_ids.size and query_ids.max() >= 1 << 31:
            return None
        document_ids = np.array(documents, np.int64)
        values = {rating: grade for rating, (grade, _) in grades.items()}
        numbers = np.fromiter(map(values.__getitem__, ratings), np.int64, len(ratings))
        if isinstance(lines, range):
            lines = np.arange(lines.start, lines.stop, dtype=np.int64)
        lines = np.asarray(lines, np.int64)
        self.seen.extend((query_ids << 32) | document_ids, lines)
        return JudgementBlock(lines, query_ids, document_ids, numbers)

    def _row(self, line: int, query, docid, rating, **event) -> Iterator[JudgementRow | LineError]:
        # A LineError is a tuple too, but no query to create.
        to_create = isinstance(query, tuple) and not isinstance(query, LineError)
        query_id, query_key = query if to_create else (query, "")
        grade, problem = self._grade(line, rating)
        document_id, document_key = self._document(line, docid)
        errors = [query_id] if isinstance(query_id, LineError) else []
        errors += [document_key] if isinstance(document_key, LineError) else []
        errors += [LineError(line, self.columns[2], problem)] if problem else []
        if errors:
            yield from errors
            return
        if grade is None or (query_id is None and not query_key):
            return  # Off the scale or unknown: reported at the end of the file.
        if document_id is None and not document_key:
            return
        if query_id and document_id and not event.get("rater_key"):
            self.seen.add((query_id << 32) | document_id, line)
        else:
            key = (query_id or query_key, document_id or document_key, event.get("rater_key"))
            self.seen.add(key, line)
        yield JudgementRow(
            line, query_id, document_id, grade, query_key=query_key, document_key=document_key,
            **event,
        )  # fmt: skip

    def _grade(self, line: int, rating) -> tuple[int | None, str | None]:
        grade, problem = grade_of(rating, self.vocabulary.grades)
        if problem and "outside the scale" in problem:
            self.off_scale.append((line, float(str(rating).strip())))
            return None, None
        return grade, problem

    def _document(self, line: int, docid) -> tuple[int | None, str | LineError]:
        name = str(docid).strip() if isinstance(docid, str | int) else docid
        if isinstance(name, str) and (found := self.vocabulary.documents.get(name)) is not None:
            return found, ""
        if not isinstance(name, str) or not name:
            return None, LineError(line, self.columns[1], "must be a document id.")
        if self.vocabulary.create_missing:
            return None, key_field(name, self.columns[1], line)
        self.unknown.add(line, name)
        return None, ""

    def errors(self) -> Iterator[LineError]:
        yield from self.unknown_queries.errors()
        yield from self.unknown.errors()
        if self.off_scale:
            first, _ = self.off_scale[0]
            values = [value for _, value in self.off_scale]
            message = (
                f"The project's scale is {scale_text(self.vocabulary.grades)}, but "
                f"{len(values):,} grades are outside it (from {min(values):g} to {max(values):g}, "
                "the first on this line): map the file's grades to the scale, or change the scale."
            )
            yield LineError(first, self.columns[2], message)
        yield from self.seen.errors()


def quepid_csv(chunks: Iterable[bytes], vocabulary: Vocabulary, *, blocks: bool = True):
    """Quepid's ``query,docid,rating``. Quepid pads every row to three columns, so an
    unrated query comes as ``query,,`` (or ``query`` alone): such rows are skipped.

    With ``blocks``, a block of lines that are all known queries and documents with
    grades on the scale (or unrated) comes as a JudgementBlock after its Skips; the
    rows, skips and errors are the same as line by line (a test holds them equal).
    """
    pairs = _Pairs(vocabulary, ("query", "docid", "rating"))
    records = csv_records(Lines(chunks), pairs.columns, lone_first_column=True, blocks=blocks)
    for item in records:
        if isinstance(item, LineError):
            yield item
        elif isinstance(item, CsvBlock):
            if (read := _quepid_block(item, pairs)) is not None:
                yield from read
            else:
                for line, record in item.records():
                    yield from _quepid_line(line, record, pairs)
        else:
            yield from _quepid_line(*item, pairs)
    yield from pairs.errors()


def _quepid_line(line: int, record: dict[str, str], pairs: "_Pairs") -> Iterator:
    if not record["docid"].strip() or not record["rating"].strip():
        yield Skip(line, UNRATED)
        return
    # Quepid writes a space before a query starting with - = + or @ (its CSV guard).
    vocabulary = pairs.vocabulary
    query = query_by_text(line, record["query"], vocabulary, "query", pairs.unknown_queries)
    yield from pairs.row(
        line, _or_create(query, record["query"], vocabulary), record["docid"], record["rating"]
    )


def _quepid_block(block: CsvBlock, pairs: "_Pairs") -> list | None:
    """``_quepid_line``'s items for every line of ``block`` at once: its Skips, then a
    JudgementBlock; None when a line is not a known query's grade (or unrated)."""
    lines, queries, docids, ratings = block.lines, *map(block.columns.get, pairs.columns)
    skips = []
    if not all(map(str.strip, docids)) or not all(map(str.strip, set(ratings))):
        cells = zip(docids, ratings, strict=True)
        rated = [bool(docid.strip() and rating.strip()) for docid, rating in cells]
        skips = [Skip(line, UNRATED) for line, kept in zip(lines, rated, strict=True) if not kept]
        lines, queries, docids, ratings = (
            list(compress(column, rated)) for column in (lines, queries, docids, ratings)
        )
    known = pairs.vocabulary.queries
    query_ids = {text: known.get(text.strip()) for text in set(queries)}
    if None in query_ids.values():
        return None
    ids = np.fromiter(map(query_ids.__getitem__, queries), np.int64, len(queries))
    rows = pairs.block(lines, ids, docids, ratings)
    return None if rows is None else [*skips, rows]


def _or_create(query, text, vocabulary: Vocabulary):
    """A query to create under its text, for ``create_missing``."""
    if query is None and vocabulary.create_missing:
        return None, str(text).strip()
    return query


def qrels(chunks: Iterable[bytes], vocabulary: Vocabulary, *, blocks: bool = True):
    """TREC qrels: ``qid iteration docid relevance``; the iteration column is ignored, and
    lines whose first field starts with ``#`` are comments, as in trec_eval.

    With ``blocks``, a block of lines that are all known qids' grades of known
    documents comes as one JudgementBlock, as in ``quepid_csv``.
    """
    pairs = _Pairs(vocabulary, ("qid", "docid", "rel"))
    pairs.unknown_queries = _Unknown("qid", "query ids")
    for item in nonblank_lines(Lines(chunks), blocks=blocks):
        if isinstance(item, LineError):
            yield item
        elif isinstance(item, LineBlock):
            if (read := _qrels_block(item, pairs)) is not None:
                yield read
            else:
                for line, text in item.items():
                    yield from _qrels_line(line, text, pairs)
        else:
            yield from _qrels_line(*item, pairs)
    yield from pairs.errors()


def _qrels_line(line: int, text: str, pairs: "_Pairs") -> Iterator:
    parts = text.split()
    if parts[0].startswith("#"):
        yield Skip(line, COMMENTS)
        return
    if len(parts) != 4:
        yield LineError(line, None, f"{len(parts)} columns where qid iter docid rel are expected.")
        return
    qid, _, docid, rel = parts
    query = query_by_qid(line, qid, pairs.vocabulary, "qid", pairs.unknown_queries)
    yield from pairs.row(line, query if query[1] else query[0], docid, rel)


def _qrels_block(block: LineBlock, pairs: "_Pairs") -> JudgementBlock | None:
    """``_qrels_line``'s rows for every line of ``block`` at once; None when a line is
    a comment, has other than four columns or is not a known qid's grade."""
    if (columns := block.columns(4)) is not None:
        lines = range(block.first, block.first + len(columns[0]))
    else:
        items = list(block.items())
        parts = [text.split() for _, text in items]
        if list(map(len, parts)).count(4) != len(parts):
            return None
        lines, columns = [line for line, _ in items], list(zip(*parts, strict=True))
    qids, _, docids, ratings = columns
    known = {qid: pairs.vocabulary.qids.get(qid) for qid in set(qids)}
    if None in known.values() or any(qid.startswith("#") for qid in known):
        return None
    ids = np.fromiter(map(known.__getitem__, qids), np.int64, len(qids))
    return pairs.block(lines, ids, list(docids), list(ratings))


_LTR_HEADER = re.compile(r"#\s*qid:([^:\s]+):\s*(.*)")


def ltr(chunks: Iterable[bytes], vocabulary: Vocabulary):
    """``grade qid:N [feature:value ...] # docid [text]`` (RankLib, Quepid, ES-LTR).

    Header comments ``# qid:1: rambo*1`` (Elasticsearch-LTR) name each qid's query
    (``*1`` is a weight, dropped); other ``#`` lines are comments. A qid's query is the
    header's text, else the line's text after the docid (Quepid writes the query
    there), matched by external id first, then by text; with no text, the qid is
    the query's external id. RankLib and Elasticsearch-LTR treat that text as a
    comment: where it differs between the lines of a qid the project knows (a title
    per document, as Elasticsearch-LTR's demo writes), the qid names the query and the
    summary says so; for a qid it does not know, that is an error.
    """
    pairs = _Pairs(vocabulary, ("qid", "docid", "grade"))
    headers: dict[str, str] = {}
    decided: dict[str, tuple[str, int]] = {}
    group: list[tuple[int, str, str, str, str]] = []  # one qid's run of lines
    by_qid: list[str] = []
    for item in nonblank_lines(Lines(chunks)):
        if isinstance(item, LineError):
            yield item
            continue
        line, text = item
        if text.lstrip().startswith("#"):
            if header := _LTR_HEADER.match(text.strip()):
                headers[header[1]] = header[2].rsplit("*", 1)[0].strip()
            yield Skip(line, COMMENTS)
            continue
        head, _, comment = text.partition("#")
        fields, tail = head.split(), comment.split(maxsplit=1)
        if len(fields) < 2 or not fields[1].startswith("qid:") or not tail:
            yield LineError(line, None, 'Expected "grade qid:N # docid query".')
            continue
        qid = fields[1][4:]
        if group and group[0][1] != qid:
            yield from _ltr_group(group, headers, decided, by_qid, vocabulary, pairs)
            group = []
        group.append((line, qid, fields[0], tail[0], tail[1].strip() if len(tail) > 1 else ""))
    if group:
        yield from _ltr_group(group, headers, decided, by_qid, vocabulary, pairs)
    if by_qid:
        yield Note(
            f"{_qid_list(by_qid)}: the text after the document id differs from line to "
            "line (a title per document, as Elasticsearch-LTR's demo writes), so the "
            "qid named the query."
        )
    yield from pairs.errors()


def _qid_list(qids: list[str]) -> str:
    shown = ", ".join(f"qid:{qid}" for qid in qids[:5])
    return shown + (f" and {len(qids) - 5:,} more" if len(qids) > 5 else "")


def _ltr_group(group, headers, decided, by_qid, vocabulary: Vocabulary, pairs: _Pairs):
    """The rows of one qid's run of lines, its query named once for all of them."""
    first, qid = group[0][0], group[0][1]
    query_text = headers.get(qid)
    if query_text is None:
        texts = dict.fromkeys(text for *_, text in group)
        query_text = next(iter(texts))
        if len(texts) > 1:
            if qid not in vocabulary.qids:
                line = next(line for line, *_, text in group if text != query_text)
                message = (
                    f'qid:{qid} was "{query_text}" on line {first}. Name its query in a '
                    f'"# qid:{qid}: <query>" header line, or give the project a query '
                    f"with the id {qid}."
                )
                yield LineError(line, "qid", message)
                return
            query_text = ""
            by_qid.append(qid)
    first_text, first_line = decided.setdefault(qid, (query_text, first))
    if first_text != query_text:
        yield LineError(first, "qid", f'qid:{qid} was "{first_text}" on line {first_line}.')
        return
    query = _ltr_query(first, qid, query_text, vocabulary, pairs)
    event = (
        {"query_external_id": qid}
        if isinstance(query, tuple) and qid not in vocabulary.qids
        else {}
    )
    for line, _, grade, docid, _ in group:
        yield from pairs.row(line, query, docid, grade, **event)


def _ltr_query(line, qid: str, text: str, vocabulary: Vocabulary, pairs: _Pairs):
    by_id = vocabulary.qids.get(qid)
    if by_id is not None and (not text or vocabulary.query_text(by_id) == text):
        return by_id
    if text:
        return _or_create(
            query_by_text(line, text, vocabulary, "qid", pairs.unknown_queries), text, vocabulary
        )
    found = query_by_qid(line, qid, vocabulary, "qid", pairs.unknown_queries)
    return found if found[1] else found[0]


RRE_SHAPES = {
    "query_groups": list,
    "topics": list,
    "queries": list,
    "topics.item": dict,
    "topics.item.query_groups": list,
    "query_groups.item": dict,
    "queries.item": dict,
    "topics.item.query_groups.item": dict,
}
RRE_GROUPS = {"query_groups.item", "topics.item.query_groups.item", "queries.item"}


def rre_json(chunks: Iterable[bytes], vocabulary: Vocabulary):
    """RRE ratings JSON (and the variant Quepid exports), read as it streams in.

    Groups are under ``query_groups``, ``topics[].query_groups`` or ``queries``;
    ``relevant_documents`` is ``{docid: {"gain": g}}``, ``{g: [docid, ...]}``,
    ``[{"document_id": d, "gain": g}]`` or ``[{"document_ids": [...], "gain": g}]``.
    A group's queries are the placeholder named by ``query_placeholder`` (default
    ``$query``) of each of its queries, else the group's name.
    """
    pairs = _Pairs(vocabulary, ("query", "relevant_documents", "gain"))
    placeholder, groups = "$query", 0
    wanted = (RRE_GROUPS | {"query_placeholder"}).__contains__
    for item in json_values(chunks, wanted, RRE_SHAPES):
        if isinstance(item, LineError):
            yield item
        elif item.prefix == "query_placeholder":
            placeholder = str(item.value)
        else:
            groups += 1
            yield from _rre_group(item.value, item.line, placeholder, vocabulary, pairs)
    if not groups:
        yield LineError(
            1, None, 'The file has no query groups (under "query_groups", "topics" or "queries").'
        )
    yield from pairs.errors()


def _rre_group(group, line: int, placeholder: str, vocabulary, pairs: _Pairs) -> Iterator:
    if not isinstance(group, LineDict) or "relevant_documents" not in group:
        yield LineError(line, "query_groups", 'A query group needs "relevant_documents".')
        return
    texts = _rre_query_texts(group, placeholder)
    if not texts:
        yield LineError(group.line, "queries", "The query group names no query.")
    ratings = list(_rre_ratings(group))
    for text in texts:
        query = _or_create(
            query_by_text(group.line, text, vocabulary, "query", pairs.unknown_queries),
            text,
            vocabulary,
        )
        for rating in ratings:
            if isinstance(rating, LineError):
                continue
            yield from pairs.row(rating[0], query, rating[1], rating[2])
    yield from (rating for rating in ratings if isinstance(rating, LineError))


def _rre_query_texts(group: LineDict, placeholder: str) -> list[str]:
    queries = group.get("queries") if isinstance(group.get("queries"), list) else [group]
    texts = []
    for entry in queries:
        values = entry.get("placeholders") if isinstance(entry, dict) else None
        if isinstance(values, dict) and values:
            keys = (placeholder, f"${placeholder.lstrip('$')}", placeholder.lstrip("$"))
            value = next(
                (values[key] for key in keys if key in values), next(iter(values.values()))
            )
            if isinstance(value, str | int | float) and not isinstance(value, bool):
                texts.append(str(value))
    name = group.get("name")
    return texts or ([str(name)] if isinstance(name, str | int) and str(name).strip() else [])


def _rre_ratings(group: LineDict) -> Iterator[tuple[int, object, object] | LineError]:
    """(line, docid, gain) of every rating in the group's ``relevant_documents``."""
    ratings, line = group["relevant_documents"], group.line
    if isinstance(ratings, list):
        for entry in ratings:
            yield from _rre_list_entry(entry, line)
    elif isinstance(ratings, dict):
        for key, value in ratings.items():
            if isinstance(value, list):  # Quepid: {grade: [docid, ...]}
                yield from ((line, docid, key) for docid in value)
            elif isinstance(value, dict):  # RRE: {docid: {"gain": grade}}
                gain = value.get("gain", value.get("rating"))
                if gain is None:
                    yield LineError(value.line, "gain", f'The rating of "{key}" has no "gain".')
                else:
                    yield value.line, key, gain
            else:
                yield LineError(
                    line,
                    "relevant_documents",
                    f'"{key}": expected {{"gain": ...}} or a list of ids.',
                )
    else:
        yield LineError(line, "relevant_documents", "must be an object or a list.")


def _rre_list_entry(entry, line: int) -> Iterator[tuple[int, object, object] | LineError]:
    if not isinstance(entry, LineDict):
        yield LineError(line, "relevant_documents", "Each entry must be an object.")
        return
    gain = entry.get("gain", entry.get("rating"))
    if "document_id" in entry:  # RRE's own example files
        yield entry.line, entry["document_id"], gain
    elif isinstance(entry.get("document_ids"), list):
        yield from ((entry.line, docid, gain) for docid in entry["document_ids"])
    else:
        message = 'Each entry needs "document_id" or "document_ids" (a list).'
        yield LineError(entry.line, "relevant_documents", message)


def opensearch_json(chunks: Iterable[bytes], vocabulary: Vocabulary):
    """An OpenSearch Search Relevance Workbench judgment list: ``{"name", "type",
    "judgmentRatings": [{"query", "ratings": [{"docId", "rating"}]}]}`` (the older
    ``{"judgmentRatings": {query: [...]}}`` too). Ratings are strings such as "3.000"."""
    pairs = _Pairs(vocabulary, ("query", "docId", "rating"))
    found = 0

    def wanted(prefix: str) -> bool:
        return prefix.startswith("judgmentRatings.") and prefix.count(".") == 1

    for item in json_values(chunks, wanted):
        if isinstance(item, LineError):
            yield item
            continue
        found += 1
        if item.key == "item":
            entry = item.value if isinstance(item.value, LineDict) else LineDict()
            text, ratings = entry.get("query"), entry.get("ratings")
        else:
            text, ratings = item.key, item.value
        yield from _opensearch_query(item.line, text, ratings, vocabulary, pairs)
    if not found:
        yield LineError(1, "judgmentRatings", 'The file has no "judgmentRatings".')
    yield from pairs.errors()


def _opensearch_query(line, text, ratings, vocabulary, pairs: _Pairs) -> Iterator:
    if not isinstance(ratings, list):
        yield LineError(line, "ratings", "must be a list of {docId, rating}.")
        return
    query = _or_create(
        query_by_text(line, text, vocabulary, "query", pairs.unknown_queries), text, vocabulary
    )
    for rating in ratings:
        if not isinstance(rating, LineDict) or "docId" not in rating:
            yield LineError(
                getattr(rating, "line", line), "ratings", 'Each rating needs "docId" and "rating".'
            )
            continue
        yield from pairs.row(rating.line, query, rating["docId"], rating.get("rating"))


def quepid_book(chunks: Iterable[bytes], vocabulary: Vocabulary):
    """A Quepid book export (its JSON, or the .json.zip Quepid offers for download):
    every rater's judgement of every query/document pair.

    Each judgement becomes an event of the rater named by ``user_email`` (an account
    matched or created by the service) or, for Quepid's AI judges, ``judge_name``:
    a rating is a grade, ``unrateable`` is "can't tell", ``judge_later`` is skipped,
    ``explanation`` is the note, and ``updated_at``/``created_at`` (when present) the
    time. Each answer gets an event id from its rater, pair and answer, so importing
    the book again adds only the answers that changed.
    """
    pairs = _Pairs(vocabulary, ("query_text", "doc_id", "rating"))
    found, chunks = 0, unzipped(chunks)
    for item in json_values(chunks, "query_doc_pairs.item".__eq__, {"query_doc_pairs": list}):
        if isinstance(item, LineError):
            yield item
            continue
        found += 1
        yield from _book_pair(item, vocabulary, pairs)
    if not found:
        yield LineError(1, "query_doc_pairs", 'The file has no "query_doc_pairs".')
    yield from pairs.errors()


def _book_pair(item, vocabulary: Vocabulary, pairs: _Pairs) -> Iterator:
    pair = item.value
    if not isinstance(pair, LineDict) or not isinstance(pair.get("judgements", []), list):
        yield LineError(
            item.line,
            "query_doc_pairs",
            'Each pair needs "query_text", "doc_id" and "judgements" (a list).',
        )
        return
    text = pair.get("query_text")
    query = _or_create(
        query_by_text(pair.line, text, vocabulary, "query_text", pairs.unknown_queries),
        text,
        vocabulary,
    )
    for judgement in pair.get("judgements", []):
        line = getattr(judgement, "line", pair.line)
        event = _book_event(line, judgement)
        if isinstance(event, LineError | Skip):
            yield event
            continue
        kind, rating, fields = event
        # The same answer in a later export of the book is the same event, imported once.
        answer = json.dumps([fields["rater_key"], text, pair.get("doc_id"), kind, rating])
        fields["event_id"] = "quepid:" + hashlib.sha256(answer.encode()).hexdigest()[:40]
        if kind == "grade":
            yield from pairs.row(line, query, pair.get("doc_id"), rating, kind=kind, **fields)
        else:
            yield from _cant_tell(pairs, line, query, pair.get("doc_id"), fields)


def _book_event(line: int, judgement) -> tuple | LineError | Skip:
    if not isinstance(judgement, LineDict):
        return LineError(line, "judgements", "Each judgement must be an object.")
    rater = judgement.get("user_email") or judgement.get("judge_name")
    if not isinstance(rater, str) or not rater.strip():
        return LineError(line, "user_email", "A judgement needs user_email (or judge_name).")
    note = text_field(
        judgement.get("explanation"), "explanation", line, limit=10_000, required=False
    )
    stamp = judgement.get("updated_at") or judgement.get("created_at")
    created_at, problem = past_time(stamp) if stamp else (None, None)
    if isinstance(note, LineError):
        return note
    if problem:
        return LineError(line, "updated_at", problem)
    fields = {"rater_key": rater.strip().lower(), "note": note, "created_at": created_at}
    if judgement.get("judge_later") and judgement.get("rating") is None:
        return Skip(line, "marked judge later")
    if judgement.get("unrateable"):
        return "cant_tell", None, fields
    if judgement.get("rating") is None:
        return Skip(line, UNRATED)
    return "grade", judgement["rating"], fields


def _cant_tell(pairs: _Pairs, line, query, docid, fields) -> Iterator:
    # "Can't tell" has no grade to check: any grade on the scale stands in for the check.
    stand_in = next(iter(pairs.vocabulary.grades), 0)
    for row in pairs.row(line, query, docid, stand_in, kind="cant_tell", **fields):
        yield row._replace(grade=None) if isinstance(row, JudgementRow) else row


def events_jsonl(chunks: Iterable[bytes], vocabulary: Vocabulary):
    """Judgement events as this app exports them; see EVENT_COLUMNS."""
    yield from _events(json_lines(Lines(chunks)), vocabulary)


def events_csv(chunks: Iterable[bytes], vocabulary: Vocabulary):
    records = csv_records(Lines(chunks), ("query", "document", "rater", "grade"))
    yield from _events(records, vocabulary)


def _events(records, vocabulary: Vocabulary):
    seen, ids = Duplicates(None, "This event"), Duplicates("id", "This event id")
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
        if row.event_id:
            ids.add(row.event_id, row.line)
        yield row
    yield from seen.errors()
    yield from ids.errors()


def event_row(line: int, record: dict, vocabulary: Vocabulary) -> JudgementRow | list:
    query = query_by_text(line, record.get("query"), vocabulary, "query")
    document = vocabulary.documents.get(str(record.get("document", "")).strip())
    username = str(record.get("rater", "")).strip()
    rater = vocabulary.raters.get(username)
    kind = str(record.get("kind") or "grade").strip()
    value = record.get("grade")
    grade, problem = grade_of("" if value is None else value, vocabulary.grades)
    if kind != "grade":
        grade, problem = None, None if value in (None, "") else f"A {kind} event has no grade."
    note = text_field(record.get("note"), "note", line, limit=10_000, required=False)
    created_at, late = past_time(record["created_at"]) if record.get("created_at") else (None, "")
    event_id = text_field(record.get("id"), "id", line, limit=200, required=False)
    errors = [
        query if isinstance(query, LineError) else None,
        document is None and LineError(line, "document", "is not a document of the project."),
        rater is None and _rater_problem(line, username, vocabulary),
        kind not in KINDS and LineError(line, "kind", f"must be one of {', '.join(KINDS)}."),
        problem and LineError(line, "grade", problem),
        note if isinstance(note, LineError) else None,
        event_id if isinstance(event_id, LineError) else None,
        late and LineError(line, "created_at", late),
    ]
    if errors := [error for error in errors if error]:
        return errors
    return JudgementRow(line, query, document, grade, kind, rater, note, created_at, event_id)


def _rater_problem(line: int, username: str, vocabulary: Vocabulary) -> LineError:
    if username in vocabulary.users:
        return LineError(line, "rater", f'"{username}" is not an active user with the rater role.')
    return LineError(line, "rater", "is not a user of this site.")
