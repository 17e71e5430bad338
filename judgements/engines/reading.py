"""Reading an engine's answer: its hits as documents, or the engine's own error message.

Elasticsearch and OpenSearch answer ``hits.hits[]`` with ``_id``, ``_score``,
``_source`` (and ``fields``, ``highlight``); Solr ``response.docs[]``; a JSON search
API a list at the endpoint's ``hits_path``. A hit is checked with the document
importer's own rules (``importers.catalogue.document_row``), so a captured document
is held to what an uploaded one is.
"""

import functools
from dataclasses import dataclass, field

from judgements.importers import DocumentRow, LineError
from judgements.importers.catalogue import DOCUMENT_KEYS, document_row

# Enough of an error body to name what went wrong, never a whole page of it.
MAX_MESSAGE = 300


@dataclass(frozen=True)
class EngineHit:
    external_id: str
    score: float | None
    document: DocumentRow
    raw: dict | None  # The hit as the engine sent it (None where the reader keeps none).


@dataclass
class Answer:
    """One query's outcome: its hits (best first), or why it failed."""

    hits: list[EngineHit] = field(default_factory=list)
    status: int | None = None
    error: str = ""
    returned: int = 0  # Hits in the engine's answer, before the depth cut.
    duplicates: int = 0

    @property
    def failed(self) -> bool:
        return bool(self.error)


class HitReader:
    """How an endpoint's hits are read (its ``*_field`` settings)."""

    def __init__(self, endpoint):
        self.kind = endpoint.kind
        self.elastic = self.kind in ("elasticsearch", "opensearch")
        self.id_field = endpoint.id_field or ("_id" if self.elastic else "id")
        self.title, self.url = endpoint.title_field, endpoint.url_field
        self.snippet = endpoint.snippet_field
        self.kept = list(endpoint.kept_fields or [])
        self.hits_path, self.depth = endpoint.hits_path, endpoint.depth
        # The documents read so far, by id, with what described them: a document that
        # comes back for many queries, described alike, is checked once.
        self.checked: dict[str, tuple[dict, DocumentRow]] = {}
        # The live view shows each hit's JSON; a capture keeps none, so that a thousand
        # queries' answers are let go as they are read.
        self.keep_raw = True

    def source_fields(self) -> list[str] | bool:
        """The ``_source`` fields a capture reads (False when it reads none)."""
        names = [self.id_field, self.title, self.url, self.snippet, *self.kept]
        wanted = [name for name in names if name and not name.startswith("_")]
        return list(dict.fromkeys(wanted)) or False

    def answer(self, body) -> Answer:
        """The hits of one search's answer (a parsed JSON body), or its error."""
        if not isinstance(body, dict):
            return Answer(error="The answer is not a JSON object.")
        if (message := engine_error(body)) is not None:
            return Answer(error=message)
        hits = self._hit_list(body)
        if isinstance(hits, str):
            return Answer(error=hits)
        return self._read(hits)

    def _hit_list(self, body: dict) -> list | str:
        if self.elastic:
            found = path_value(body, "hits.hits")
            where = "hits.hits"
        elif self.kind == "solr":
            found, where = path_value(body, "response.docs"), "response.docs"
        else:
            where = self.hits_path or "(the top level)"
            found = path_value(body, self.hits_path) if self.hits_path else body
        if not isinstance(found, list):
            return f"The answer has no list of hits at {where}."
        return found

    def _read(self, items: list) -> Answer:
        answer, seen = Answer(returned=len(items)), set()
        for rank, item in enumerate(items, start=1):
            if len(answer.hits) == self.depth:
                break
            hit = self.hit(item, rank)
            if isinstance(hit, str):
                return Answer(error=hit, returned=len(items))
            if hit.external_id in seen:
                answer.duplicates += 1
                continue
            seen.add(hit.external_id)
            answer.hits.append(hit)
        return answer

    def hit(self, item, rank: int) -> EngineHit | str:
        """One hit as a document, or what is wrong with it."""
        if not isinstance(item, dict):
            return f"Hit {rank} is not a JSON object."
        key = self.value(item, self.id_field)
        if key is None or key == "":
            return f'Hit {rank} has no id field "{self.id_field}".'
        data = {"id": key if isinstance(key, str) else _text(key)}
        for name, source in (("title", self.title), ("url", self.url), ("snippet", self.snippet)):
            if source and (value := self.value(item, source)) is not None:
                data[name] = _text(value)
        for name in self.kept:
            if name not in DOCUMENT_KEYS and (value := self.value(item, name)) is not None:
                data[name] = value
        document = self._document(rank, data)
        if isinstance(document, list):
            return f"Hit {rank}: " + "; ".join(_said(error) for error in document)
        raw = item if self.keep_raw else None
        return EngineHit(document.external_id, self._score(item), document, raw)

    def _document(self, rank: int, data: dict) -> DocumentRow | list[LineError]:
        known = self.checked.get(data["id"])
        if known is not None and known[0] == data:
            return known[1]
        document = document_row(rank, data)
        if not isinstance(document, list):
            self.checked[data["id"]] = (data, document)
        return document

    def value(self, item: dict, name: str):
        """A field of a hit: ``_id`` and ``_score`` of Elasticsearch's, else the
        ``_source`` field (a dotted path), else its ``fields`` or ``highlight``."""
        if not self.elastic:
            return path_value(item, name)
        if name in ("_id", "_score", "_index"):
            return item.get(name)
        for part in ("_source", "fields", "highlight"):
            value = path_value(item.get(part), name)
            if value is not None:
                return value
        return None

    def _score(self, item: dict) -> float | None:
        score = item.get("_score" if self.elastic else "score")
        return (
            float(score)
            if isinstance(score, int | float) and not isinstance(score, bool)
            else None
        )


def _said(error: LineError) -> str:
    return f"{error.field}: {error.message}" if error.field else error.message


def _text(value) -> str:
    """A field's value as text: a list of texts (Solr's multi-valued fields, highlight
    fragments) is joined; anything else becomes its string."""
    if isinstance(value, list):
        return " ".join(_text(item) for item in value)
    return value if isinstance(value, str) else str(value)


def path_value(value, path: str):
    """``value`` at a dotted path (``data.results``, ``items.0.docs``; a leading ``$.``
    is allowed), or None if any step is missing."""
    if not path:
        return value
    for step in _steps(path):
        if isinstance(value, dict) and step in value:
            value = value[step]
        elif isinstance(value, list) and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        else:
            return None
    return value


@functools.lru_cache(maxsize=256)
def _steps(path: str) -> tuple[str, ...]:
    """A dotted path's steps (an endpoint's few paths, read for every hit)."""
    return tuple(path.removeprefix("$.").split("."))


def engine_error(body: dict) -> str | None:
    """The engine's own error message in an answer, or None if it is not an error.

    Elasticsearch and OpenSearch: ``{"error": {"root_cause": [...], "type", "reason"},
    "status"}`` (or a plain string); Solr: ``{"error": {"msg", "code"}}``.
    """
    error = body.get("error")
    if error is None:
        return None
    if isinstance(error, str):
        return error[:MAX_MESSAGE]
    if not isinstance(error, dict):
        return "The engine answered with an error."
    if "msg" in error:
        return str(error["msg"])[:MAX_MESSAGE]
    causes = error.get("root_cause") or [error]
    cause = causes[0] if isinstance(causes, list) and isinstance(causes[0], dict) else error
    kind, reason = cause.get("type", ""), cause.get("reason", "")
    message = f"{kind}: {reason}" if kind and reason else str(kind or reason or error)
    return message[:MAX_MESSAGE]
