"""Parsers for judgements from other tools' text files: Quepid CSV, TREC qrels and LTR
(RankLib/SVMrank); ``Pairs`` checks each pair once for every format of grades."""

import re
from collections.abc import Iterable, Iterator
from itertools import compress

import numpy as np

from judgements.importers.catalogue import _Unknown, query_by_qid, query_by_text
from judgements.importers.csv_reading import CsvBlock, csv_records
from judgements.importers.fields import grade_of, key_field, scale_text
from judgements.importers.reading import Duplicates, LineBlock, Lines, nonblank_lines
from judgements.importers.rows import (
    JudgementBlock,
    JudgementRow,
    LineError,
    Note,
    Skip,
    Vocabulary,
)

UNRATED = "unrated (no grade)"
COMMENTS = "comment lines"


class Pairs:
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
        # Whose answer it is, for the repeats check: the rater's key, or what the
        # parser names (a Quepid book's judgements without an e-mail, any number a pair).
        who = event.pop("repeat_key", event.get("rater_key"))
        if query_id and document_id and not who:
            self.seen.add((query_id << 32) | document_id, line)
        else:
            self.seen.add((query_id or query_key, document_id or document_key, who), line)
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
    pairs = Pairs(vocabulary, ("query", "docid", "rating"))
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


def _quepid_line(line: int, record: dict[str, str], pairs: "Pairs") -> Iterator:
    if not record["docid"].strip() or not record["rating"].strip():
        yield Skip(line, UNRATED)
        return
    # Quepid writes a space before a query starting with - = + or @ (its CSV guard).
    vocabulary = pairs.vocabulary
    query = query_by_text(line, record["query"], vocabulary, "query", pairs.unknown_queries)
    yield from pairs.row(
        line,
        query_or_create(query, record["query"], vocabulary),
        record["docid"],
        record["rating"],
    )


def _quepid_block(block: CsvBlock, pairs: "Pairs") -> list | None:
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


def query_or_create(query, text, vocabulary: Vocabulary):
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
    pairs = Pairs(vocabulary, ("qid", "docid", "rel"))
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


def _qrels_line(line: int, text: str, pairs: "Pairs") -> Iterator:
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


def _qrels_block(block: LineBlock, pairs: "Pairs") -> JudgementBlock | None:
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
    pairs = Pairs(vocabulary, ("qid", "docid", "grade"))
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


def _ltr_group(group, headers, decided, by_qid, vocabulary: Vocabulary, pairs: Pairs):
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


def _ltr_query(line, qid: str, text: str, vocabulary: Vocabulary, pairs: Pairs):
    by_id = vocabulary.qids.get(qid)
    if by_id is not None and (not text or vocabulary.query_text(by_id) == text):
        return by_id
    if text:
        return query_or_create(
            query_by_text(line, text, vocabulary, "qid", pairs.unknown_queries), text, vocabulary
        )
    found = query_by_qid(line, qid, vocabulary, "qid", pairs.unknown_queries)
    return found if found[1] else found[0]
