"""Parsers for judgements in other tools' JSON: RRE ratings, OpenSearch judgments and a
Quepid book (per-rater judgements)."""

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator

from judgements.importers.catalogue import query_by_text
from judgements.importers.fields import past_time, text_field
from judgements.importers.grades import UNRATED, Pairs, query_or_create
from judgements.importers.json_reading import LineDict, json_values
from judgements.importers.reading import unzipped
from judgements.importers.rows import (
    JudgementRow,
    LineError,
    Skip,
    Vocabulary,
)

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
    pairs = Pairs(vocabulary, ("query", "relevant_documents", "gain"))
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


def _rre_group(group, line: int, placeholder: str, vocabulary, pairs: Pairs) -> Iterator:
    if not isinstance(group, LineDict) or "relevant_documents" not in group:
        yield LineError(line, "query_groups", 'A query group needs "relevant_documents".')
        return
    texts = _rre_query_texts(group, placeholder)
    if not texts:
        yield LineError(group.line, "queries", "The query group names no query.")
    ratings = list(_rre_ratings(group))
    for text in texts:
        query = query_or_create(
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
    pairs = Pairs(vocabulary, ("query", "docId", "rating"))
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


def _opensearch_query(line, text, ratings, vocabulary, pairs: Pairs) -> Iterator:
    if not isinstance(ratings, list):
        yield LineError(line, "ratings", "must be a list of {docId, rating}.")
        return
    query = query_or_create(
        query_by_text(line, text, vocabulary, "query", pairs.unknown_queries), text, vocabulary
    )
    for rating in ratings:
        if not isinstance(rating, LineDict) or "docId" not in rating:
            yield LineError(
                getattr(rating, "line", line), "ratings", 'Each rating needs "docId" and "rating".'
            )
            continue
        yield from pairs.row(rating.line, query, rating["docId"], rating.get("rating"))


# The machine judge a Quepid book's AI judgements go to: Quepid's export names no AI
# judge (it writes "user_email": null for each), so one judge of the project holds them.
QUEPID_AI_JUDGE = "Quepid AI judge"


def quepid_book(chunks: Iterable[bytes], vocabulary: Vocabulary):
    """A Quepid book export (its JSON, or the .json.zip Quepid offers for download):
    every judgement of every query/document pair, as Quepid's exporter writes them
    (``app/views/api/v1/export/books/_judgements.json.jbuilder``): ``rating``,
    ``unrateable``, ``judge_later``, ``user_email`` and ``explanation``.

    A judgement with an e-mail is an event of the account with that e-mail (matched
    or created by the service). Quepid leaves ``user_email`` out of a judgement that
    has no user (an anonymous one): its events are the project's import account's.
    It writes ``"user_email": null`` for an AI judge's (a user without an e-mail; the
    book does not name it): its events are those of the machine judge
    ``QUEPID_AI_JUDGE``, of source "machine", kept out of human numbers as any
    machine judge's until the project's gate certifies it. A rating is a grade,
    ``unrateable`` is "can't tell", ``judge_later`` is skipped, ``explanation`` is the
    note (a machine judge's rationale), and ``updated_at``/``created_at`` (when
    present) the time. Each answer gets an event id from its rater, pair and answer,
    so importing the book again adds only the answers that changed.
    """
    pairs = Pairs(vocabulary, ("query_text", "doc_id", "rating"))
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


def _book_pair(item, vocabulary: Vocabulary, pairs: Pairs) -> Iterator:
    pair = item.value
    if not isinstance(pair, LineDict) or not isinstance(pair.get("judgements", []), list):
        yield LineError(
            item.line,
            "query_doc_pairs",
            'Each pair needs "query_text", "doc_id" and "judgements" (a list).',
        )
        return
    text = pair.get("query_text")
    query = query_or_create(
        query_by_text(pair.line, text, vocabulary, "query_text", pairs.unknown_queries),
        text,
        vocabulary,
    )
    # Quepid holds one judgement per user and pair, but any number without a user or
    # by AI judges (which the export does not tell apart): counted to keep them apart.
    seen = Counter()
    for judgement in pair.get("judgements", []):
        line = getattr(judgement, "line", pair.line)
        event = _book_event(line, judgement)
        if isinstance(event, LineError | Skip):
            yield event
            continue
        kind, rating, fields = event
        # Whose answer, in the event id: the e-mail, "" (anonymous) or None (an AI judge).
        who = fields.get("rater_key", None if fields.get("machine_judge") else "")
        answer = [who, text, pair.get("doc_id"), kind, rating]
        seen[who] += 1
        if seen[who] > 1:
            answer.append(seen[who] - 1)
        if not fields.get("rater_key"):
            fields["repeat_key"] = (who, seen[who])
        # The same answer in a later export of the book is the same event, imported once.
        digest = hashlib.sha256(json.dumps(answer).encode()).hexdigest()[:40]
        fields["event_id"] = "quepid:" + digest
        if kind == "grade":
            yield from pairs.row(line, query, pair.get("doc_id"), rating, kind=kind, **fields)
        else:
            yield from _cant_tell(pairs, line, query, pair.get("doc_id"), fields)


def _book_event(line: int, judgement) -> tuple | LineError | Skip:
    if not isinstance(judgement, LineDict):
        return LineError(line, "judgements", "Each judgement must be an object.")
    rater = _book_rater(line, judgement)
    if isinstance(rater, LineError):
        return rater
    note = text_field(
        judgement.get("explanation"), "explanation", line, limit=10_000, required=False
    )
    stamp = judgement.get("updated_at") or judgement.get("created_at")
    created_at, problem = past_time(stamp) if stamp else (None, None)
    if isinstance(note, LineError):
        return note
    if problem:
        return LineError(line, "updated_at", problem)
    fields = {**rater, "note": note, "created_at": created_at}
    if judgement.get("judge_later") and judgement.get("rating") is None:
        return Skip(line, "marked judge later")
    if judgement.get("unrateable"):
        return "cant_tell", None, fields
    if judgement.get("rating") is None:
        return Skip(line, UNRATED)
    return "grade", judgement["rating"], fields


def _book_rater(line: int, judgement: LineDict) -> dict | LineError:
    """Whose judgement, as Quepid's exporter writes it: ``user_email`` left out when it
    has no user, null for an AI judge (a user without an e-mail)."""
    if "user_email" not in judgement:
        return {}  # The project's import account's.
    email = judgement["user_email"]
    if email is None or (isinstance(email, str) and not email.strip()):
        return {"machine_judge": QUEPID_AI_JUDGE}
    if not isinstance(email, str) or "@" not in email:
        shown = f'"{email[:100]}"' if isinstance(email, str) else "This"
        message = f"{shown} is not an e-mail address (null is an AI judge's judgement)."
        return LineError(line, "user_email", message)
    return {"rater_key": email.strip().lower()}


def _cant_tell(pairs: Pairs, line, query, docid, fields) -> Iterator:
    # "Can't tell" has no grade to check: any grade on the scale stands in for the check.
    stand_in = next(iter(pairs.vocabulary.grades), 0)
    for row in pairs.row(line, query, docid, stand_in, kind="cant_tell", **fields):
        yield row._replace(grade=None) if isinstance(row, JudgementRow) else row
