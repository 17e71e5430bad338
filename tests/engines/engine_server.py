"""A small search engine on 127.0.0.1 for tests and the capture benchmark: it ranks the
Cranfield documents with BM25 (``bm25s``) and answers in the engines' own wire formats,
so that the app's real clients (``elasticsearch``, ``opensearch-py``, httpx) talk to it
as they would to the engine.

The formats follow the engines' reference documentation (tests/data/engines/ holds
the error bodies as the documentation prints them):

- Elasticsearch and OpenSearch: ``POST /<index>/_search`` and ``/<index>/_msearch``
  (NDJSON: a header line, then a body line, per search), answering
  ``{"took", "timed_out", "_shards", "hits": {"total", "max_score", "hits": [{"_index",
  "_id", "_score", "_source"}]}}``, ``_msearch`` as ``{"took", "responses": [... each
  with its "status"]}``; errors as ``{"error": {"root_cause", "type", "reason"},
  "status"}``. Elasticsearch's answers carry ``X-Elastic-Product: Elasticsearch``, which
  its client checks.
- Solr: ``GET /solr/<collection>/select`` (``q``, ``defType``, ``qf``, ``rows``, ``start``,
  ``fl``), answering ``{"responseHeader", "response": {"numFound", "start", "docs"}}``;
  errors as ``{"responseHeader": {"status"}, "error": {"metadata", "msg", "code"}}``.
- A JSON search API: ``GET /api/search?q=&size=`` (or POST with a JSON body), answering
  ``{"data": {"total", "results": [{"docid", "name", "summary", "link"}]}}``.

Queries understood: Elasticsearch's ``match``, ``multi_match`` (``fields`` with
``^boost``), ``query_string`` and ``bool`` (``should``/``must``, summed); Solr's ``qf``
boosts the same way. Fields: ``title`` and ``text`` (the abstract).

Faults for tests: ``auth`` (what credentials it wants), ``statuses`` (answers consumed
in order: ``(status, headers, body)``), ``item_errors`` (a query's text -> its error
answer inside ``_msearch``), ``no_id`` (queries whose hits lack ``_id``), ``many`` (how
many hits every answer has, past what was asked), ``delay`` (seconds per search).
``busy`` adds up the time spent answering.
"""

import base64
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import bm25s
import numpy as np

from tests.shared import CRANFIELD

ERRORS = json.loads((Path(__file__).parents[1] / "data" / "engines" / "errors.json").read_text())
FIELDS = ("title", "text")


class Corpus:
    """The Cranfield documents, one BM25 index per field."""

    _loaded = None

    def __init__(self):
        lines = (CRANFIELD / "documents.jsonl").read_text().splitlines()
        self.documents = [json.loads(line) for line in lines if line.strip()]
        self.indexes = {}
        for name in FIELDS:
            tokens = bm25s.tokenize(
                [document[name] for document in self.documents],
                stopwords="en",
                show_progress=False,
                return_ids=False,
            )
            index = bm25s.BM25()
            index.index(tokens, show_progress=False)
            self.indexes[name] = index

    @classmethod
    def load(cls) -> "Corpus":
        if cls._loaded is None:
            cls._loaded = cls()
        return cls._loaded

    def scores(self, text: str, fields: dict[str, float]) -> np.ndarray:
        [tokens] = bm25s.tokenize([text], stopwords="en", show_progress=False, return_ids=False)
        total = np.zeros(len(self.documents))
        for name, boost in fields.items():
            if tokens and name in self.indexes:
                total += boost * self.indexes[name].get_scores(tokens)
        return total

    def top(self, text: str, fields: dict[str, float], size: int, start: int = 0):
        scores = self.scores(text, fields)
        matching = np.flatnonzero(scores > 0)
        order = matching[np.lexsort((matching, -scores[matching]))]
        return len(matching), [(int(i), float(scores[i])) for i in order[start : start + size]]


class BadQuery(Exception):
    pass


def boosted(fields) -> dict[str, float]:
    """``["title^2", "text"]`` (or Solr's ``"title^2 text"``) as {field: boost}."""
    if isinstance(fields, str):
        fields = fields.split()
    found = {}
    for item in fields:
        name, _, boost = item.partition("^")
        found[name] = float(boost or 1)
    return found


def dsl_parts(query) -> list[tuple[str, dict[str, float]]]:
    """The (text, fields) a query DSL clause asks for; BadQuery if not understood."""
    if not isinstance(query, dict) or len(query) != 1:
        raise BadQuery("query malformed, must start with start_object")
    [(kind, value)] = query.items()
    if kind == "match":
        [(field, text)] = value.items()
        text = text["query"] if isinstance(text, dict) else text
        return [(str(text), {field: 1.0})]
    if kind == "multi_match":
        return [(str(value["query"]), boosted(value.get("fields", list(FIELDS))))]
    if kind == "query_string":
        return [(str(value["query"]), boosted(value.get("fields", list(FIELDS))))]
    if kind == "bool":
        clauses = [*value.get("must", []), *value.get("should", [])]
        return [part for clause in clauses for part in dsl_parts(clause)]
    raise BadQuery(f"unknown query [{kind}]")


class EngineServer:
    def __init__(self, *, flavour: str = "elasticsearch", index: str = "cranfield"):
        self.flavour, self.index = flavour, index
        self.corpus = Corpus.load()
        self.auth: tuple | None = None
        self.statuses: list[tuple[int, dict, object]] = []
        self.item_errors: dict[str, dict] = {}
        self.no_id: set[str] = set()
        self.many = 0
        self.delay = 0.0
        self.busy = 0.0
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "EngineServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # Answers -----------------------------------------------------------------------

    def search_answer(self, body: dict) -> dict:
        """One ``_search`` answer to a query DSL ``body``; BadQuery if not understood."""
        parts = dsl_parts(body.get("query", {"match_all": {}}))
        size, start = int(body.get("size", 10)), int(body.get("from", 0))
        text = " ".join(part[0] for part in parts)
        if text in self.item_errors:
            return self.item_errors[text]
        scores = sum(self.corpus.scores(t, fields) for t, fields in parts)
        hits = self._ranked(scores, max(size, self.many), start)
        source = body.get("_source", True)
        return {
            "took": 1,
            "timed_out": False,
            "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
            "hits": {
                "total": {"value": int(np.count_nonzero(scores > 0)), "relation": "eq"},
                "max_score": hits[0][1] if hits else None,
                "hits": [self._es_hit(i, score, source, text) for i, score in hits],
            },
        }

    def _ranked(self, scores: np.ndarray, size: int, start: int):
        order = np.lexsort((np.arange(len(scores)), -scores))
        if not self.many:
            order = order[scores[order] > 0]
        return [(int(i), float(scores[i])) for i in order[start : start + size]]

    def _es_hit(self, i: int, score: float, source, text: str) -> dict:
        document = self.corpus.documents[i]
        hit = {"_index": self.index, "_id": document["id"], "_score": score}
        if text in self.no_id:
            del hit["_id"]
        if source is True:
            hit["_source"] = document
        elif isinstance(source, list):
            hit["_source"] = {k: v for k, v in document.items() if k in source}
        return hit

    def solr_answer(self, params: dict) -> tuple[int, dict]:
        q = params.get("q", "")
        if not q:
            return 400, ERRORS["solr_missing_query"]
        if q.count("(") != q.count(")"):
            error = json.loads(json.dumps(ERRORS["solr_syntax_error"]))
            error["error"]["msg"] = f"org.apache.solr.search.SyntaxError: Cannot parse '{q}'"
            return 400, error
        fields = boosted(params.get("qf", "text"))
        rows, start = int(params.get("rows", 10)), int(params.get("start", 0))
        found, hits = self.corpus.top(q, fields, max(rows, self.many), start)
        wanted = params.get("fl", "*").replace(",", " ").split()
        docs = []
        for i, score in hits:
            document = self.corpus.documents[i]
            doc = {k: v for k, v in document.items() if "*" in wanted or k in wanted}
            if "score" in wanted:
                doc["score"] = score
            if q in self.no_id:
                doc.pop("id", None)
            docs.append(doc)
        header = {"status": 0, "QTime": 1, "params": params}
        response = {"numFound": found, "start": start, "numFoundExact": True, "docs": docs}
        return 200, {"responseHeader": header, "response": response}

    def api_answer(self, params: dict) -> dict:
        q = str(params.get("q", ""))
        size = int(params.get("size", 10))
        found, hits = self.corpus.top(q, {"title": 2.0, "text": 1.0}, max(size, self.many))
        results = []
        for i, score in hits:
            document = self.corpus.documents[i]
            result = {
                "docid": document["id"],
                "name": document["title"],
                "summary": document["text"][:300],
                "link": f"https://cranfield.example/doc/{document['id']}",
                "relevance": score,
            }
            if q in self.no_id:
                del result["docid"]
            results.append(result)
        # Past the matching documents, as many more as ``many`` asks for.
        results += [
            {"docid": f"extra-{n}", "name": "padding"} for n in range(len(results), self.many)
        ]
        return {"data": {"total": max(found, self.many), "results": results}}

    # HTTP --------------------------------------------------------------------------

    def authorised(self, headers) -> bool:
        if self.auth is None:
            return True
        given = headers.get("Authorization", "")
        kind, *values = self.auth
        if kind == "basic":
            token = base64.b64encode(f"{values[0]}:{values[1]}".encode()).decode()
            return given == f"Basic {token}"
        if kind == "api_key":
            return given == f"ApiKey {values[0]}"
        return given == f"Bearer {values[0]}"

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                self._serve()

            def do_POST(self):
                self._serve()

            def _serve(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                started = time.perf_counter()
                with server.lock:
                    server.requests.append(
                        {"path": self.path, "headers": dict(self.headers), "body": raw}
                    )
                    scripted = server.statuses.pop(0) if server.statuses else None
                if scripted is not None:
                    return self._answer(*scripted)
                if not server.authorised(self.headers):
                    return self._answer(
                        401,
                        {"WWW-Authenticate": 'Basic realm="security"'},
                        ERRORS[f"{server.family}_unauthorised"],
                    )
                status, body = server.route(self.command, self.path, raw)
                if server.delay:
                    time.sleep(server.delay)
                with server.lock:
                    server.busy += time.perf_counter() - started
                self._answer(status, {}, body)

            def _answer(self, status: int, headers: dict, body):
                if isinstance(body, str):
                    body = body.encode()
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                kind = "application/json"
                if server.flavour == "elasticsearch":
                    self.send_header("X-Elastic-Product", "Elasticsearch")
                    accept = self.headers.get("Accept", "")
                    if "compatible-with" in accept:
                        kind = "application/vnd.elasticsearch+json;compatible-with=8"
                if isinstance(body, bytes):
                    kind = "text/html"
                self.send_header("Content-Type", kind)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    @property
    def family(self) -> str:
        return "solr" if self.flavour == "solr" else "json" if self.flavour == "json" else "es"

    def route(self, method: str, target: str, raw: bytes) -> tuple[int, object]:
        parts = urlsplit(target)
        path = parts.path.strip("/").split("/")
        params = dict(parse_qsl(parts.query))
        if self.flavour == "solr":
            if path[:1] != ["solr"] or len(path) != 3 or path[2] != "select":
                return 404, ERRORS["solr_not_found"].encode()
            if method == "POST" and raw:
                params.update(parse_qsl(raw.decode()))
            if path[1] != self.index:
                return 404, ERRORS["solr_not_found"].encode()
            return self.solr_answer(params)
        if self.flavour == "json":
            if path != ["api", "search"]:
                return 404, {"error": "not found"}
            if method == "POST":
                params.update(json.loads(raw or b"{}"))
            return 200, self.api_answer(params)
        return self.elastic_route(path, raw)

    def elastic_route(self, path: list[str], raw: bytes) -> tuple[int, object]:
        if path == [""]:
            return 200, {"name": "test", "cluster_name": "test", "version": {"number": "8.15.0"}}
        if len(path) != 2 or path[1] not in ("_search", "_msearch"):
            return 400, ERRORS["es_no_handler"]
        if path[0] != self.index:
            missing = json.loads(json.dumps(ERRORS["es_index_not_found"]).replace("nope", path[0]))
            return 404, missing
        if path[1] == "_search":
            try:
                return 200, self.search_answer(json.loads(raw or b"{}"))
            except (BadQuery, KeyError, ValueError) as error:
                return 400, _parsing_error(str(error))
        lines = [line for line in raw.decode().split("\n") if line.strip()]
        responses = []
        for body_line in lines[1::2]:
            try:
                answer = self.search_answer(json.loads(body_line))
            except (BadQuery, KeyError, ValueError) as error:
                answer = _parsing_error(str(error))
            responses.append({**answer, "status": answer.get("status", 200)})
        return 200, {"took": 1, "responses": responses}


def _parsing_error(reason: str) -> dict:
    error = json.loads(json.dumps(ERRORS["es_parsing_exception"]))
    error["error"]["reason"] = error["error"]["root_cause"][0]["reason"] = reason
    return error


def main() -> None:
    """Serve in a process of its own (the benchmark's engine): prints its URL."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--flavour", default="elasticsearch")
    parser.add_argument("--index", default="cranfield")
    args = parser.parse_args()
    server = EngineServer(flavour=args.flavour, index=args.index).start()
    print(server.url, flush=True)
    sys.stdin.read()  # Until the parent closes our input.
    server.stop()


if __name__ == "__main__":
    main()
