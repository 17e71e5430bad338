"""Sending filled templates to an engine through its official client, and the answers.

Elasticsearch and OpenSearch are asked with their official clients (``elasticsearch``,
``opensearch-py``), many queries per ``_msearch``; Solr and JSON search APIs, which
no client would add anything to, with the outbound policy's httpx2 client, one query
per request. Every connection goes through that one policy (``judgements.engines.network``).

``search_all`` sends the queries at the endpoint's concurrency, waits out a 429's
``Retry-After`` (capped) and tries again, and turns anything else into a per-query
failure, except what no query can get past (the host unreachable, TLS, a refused
address, credentials refused, no such index), which stops the whole run at once.
"""

import base64
import email.utils
import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass

import elastic_transport
import elasticsearch
import httpx2
import opensearchpy
from opensearchpy import exceptions as os_exceptions

from config import outbound
from judgements.engines import network
from judgements.engines.reading import Answer, HitReader, engine_error
from judgements.engines.templates import flat_parameters

MAX_RETRIES = 3
MAX_RETRY_AFTER = 30.0
# Queries per _msearch: enough to save round trips, few enough that the batches
# spread over the endpoint's concurrency.
MAX_BATCH = 50
# An answer the whole run cannot get past: the same for every query.
FATAL_STATUSES = {401, 403, 404}
# Elasticsearch 8 and 9 both accept version 8 of the REST API (9 in compatibility
# mode), so one client speaks to either.
COMPATIBLE = "application/vnd.elasticsearch+{}; compatible-with=8"


class EngineUnavailable(Exception):
    """No query can be answered: the message says why (safe to show)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class _Throttled(Exception):
    """A 429: ``retry_after`` is its Retry-After header, if it had one."""

    def __init__(self, retry_after: str | None = None):
        self.retry_after = retry_after


@dataclass(frozen=True)
class Sent:
    """One query's request as sent, for the live view: where, and what."""

    method: str
    url: str
    body: dict | list | None


def retry_after_seconds(value: str | None, attempt: int) -> float:
    """The wait a 429 asks for (seconds or an HTTP date), capped; 1, 2, 4 s without one."""
    if value:
        try:
            return min(MAX_RETRY_AFTER, max(0.0, float(value)))
        except ValueError:
            moment = email.utils.parsedate_to_datetime(value)
            if moment is not None:
                return min(MAX_RETRY_AFTER, max(0.0, moment.timestamp() - time.time()))
    return float(2**attempt)


class _Engine:
    batch = 1

    def __init__(self, endpoint, secret: str):
        self.endpoint, self.reader = endpoint, HitReader(endpoint)
        self.secret = secret

    def send(self, bodies: Sequence[dict]) -> list[Answer]:
        raise NotImplementedError

    def describe(self, body: dict) -> Sent:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def _status_answer(self, status: int, message: str) -> Answer:
        if status in FATAL_STATUSES:
            said = f"HTTP {status}: {message}" if message else outbound.describe_status(status)
            raise EngineUnavailable(said if message else f"HTTP {said}", status)
        return Answer(status=status, error=message or f"HTTP {outbound.describe_status(status)}")


class _Elastic(_Engine):
    """Elasticsearch and OpenSearch: ``_msearch`` of many queries per request."""

    batch = MAX_BATCH

    def describe(self, body: dict) -> Sent:
        url = f"{self.endpoint.base_url.rstrip('/')}/{self.endpoint.index}/_search"
        return Sent("POST", url, body)

    # Captures ask only for the fields they read (the live view wants whole hits).
    trim_source = False

    def body_with_size(self, body: dict) -> dict:
        extra = {} if "size" in body else {"size": self.endpoint.depth}
        if self.trim_source and "_source" not in body:
            extra["_source"] = self.reader.source_fields()
        return {**body, **extra} if extra else body

    def answers(self, items) -> list[Answer]:
        answers = []
        for item in items:
            status = item.get("status", 200) if isinstance(item, dict) else 200
            if status == 429:
                raise _Throttled()
            answer = self.reader.answer(item)
            if answer.failed:
                answer.status = status
            answers.append(answer)
        return answers


class _Elasticsearch(_Elastic):
    def __init__(self, endpoint, secret: str):
        super().__init__(endpoint, secret)
        self.client = elasticsearch.Elasticsearch(
            hosts=[endpoint.base_url],
            node_class=network.CheckedElasticNode,
            request_timeout=endpoint.timeout_seconds,
            max_retries=0,
            retry_on_status=(),
            retry_on_timeout=False,
            connections_per_node=endpoint.concurrency,
            headers={"accept": COMPATIBLE.format("json")},
            **_elastic_auth(endpoint, secret),
        )
        self.searcher = self.client.options(
            headers={"content-type": COMPATIBLE.format("x-ndjson")}
        )

    def send(self, bodies: Sequence[dict]) -> list[Answer]:
        searches = []
        for body in bodies:
            searches += [{}, self.body_with_size(body)]
        try:
            response = self.searcher.msearch(index=self.endpoint.index, searches=searches)
        except elasticsearch.ApiError as error:
            if error.meta.status == 429:
                raise _Throttled(error.meta.headers.get("retry-after")) from None
            return [self._status_answer(error.meta.status, _api_message(error.body))] * len(bodies)
        except elastic_transport.ConnectionTimeout:
            return [_timed_out(self.endpoint)] * len(bodies)
        except elastic_transport.TransportError as error:
            raise EngineUnavailable(network.failure_message(error, self.endpoint)) from None
        except elasticsearch.UnsupportedProductError:
            raise EngineUnavailable(
                "The server answered, but not as Elasticsearch does (no X-Elastic-Product "
                "header): is it OpenSearch, or a proxy?"
            ) from None
        except elasticsearch.SerializationError:
            return [Answer(status=200, error="The answer is not JSON.")] * len(bodies)
        return self.answers(response.body.get("responses", []))

    def close(self) -> None:
        self.client.close()


class _OpenSearch(_Elastic):
    def __init__(self, endpoint, secret: str):
        super().__init__(endpoint, secret)
        self.client = opensearchpy.OpenSearch(
            hosts=[endpoint.base_url],
            connection_class=network.CheckedOpenSearchConnection,
            timeout=endpoint.timeout_seconds,
            max_retries=0,
            retry_on_status=(),
            retry_on_timeout=False,
            pool_maxsize=endpoint.concurrency,
            **_opensearch_auth(endpoint, secret),
        )

    def send(self, bodies: Sequence[dict]) -> list[Answer]:
        searches = []
        for body in bodies:
            searches += [{}, self.body_with_size(body)]
        try:
            response = self.client.msearch(body=searches, index=self.endpoint.index)
        except os_exceptions.ConnectionTimeout:
            return [_timed_out(self.endpoint)] * len(bodies)
        except os_exceptions.SerializationError:
            return [Answer(status=200, error="The answer is not JSON.")] * len(bodies)
        except os_exceptions.ConnectionError as error:
            raise EngineUnavailable(network.failure_message(error, self.endpoint)) from None
        except os_exceptions.TransportError as error:
            status = error.status_code if isinstance(error.status_code, int) else None
            if status == 429:
                raise _Throttled(network.last_retry_after()) from None
            if status is None:
                return [Answer(status=200, error="The answer is not JSON.")] * len(bodies)
            return [self._status_answer(status, _api_message(error.info))] * len(bodies)
        return self.answers(response.get("responses", []))

    def close(self) -> None:
        self.client.close()


class _Http(_Engine):
    """Solr and JSON search APIs: one query per request, with httpx."""

    def __init__(self, endpoint, secret: str):
        super().__init__(endpoint, secret)
        self.client = network.http_client(
            timeout=endpoint.timeout_seconds, headers=_http_auth_headers(endpoint, secret)
        )

    def request(self, body: dict) -> httpx2.Request:
        sent = self.describe(body)
        if sent.method == "POST":
            return self.client.build_request("POST", sent.url, json=sent.body)
        return self.client.build_request("GET", sent.url, params=flat_parameters(sent.body))

    def send(self, bodies: Sequence[dict]) -> list[Answer]:
        [body] = bodies
        try:
            response = network.send(self.client, self.request(body))
        except httpx2.TimeoutException:
            return [_timed_out(self.endpoint)]
        except network.ResponseTooLarge as error:
            return [Answer(error=network.failure_message(error, self.endpoint))]
        except (httpx2.HTTPError, network.OutboundRefused, network.Redirected) as error:
            raise EngineUnavailable(network.failure_message(error, self.endpoint)) from None
        if response.status_code == 429:
            raise _Throttled(response.headers.get("retry-after"))
        try:
            parsed = json.loads(response.content)
        except ValueError:
            parsed = None
        if response.status_code >= 400:
            message = engine_error(parsed) if isinstance(parsed, dict) else ""
            return [self._status_answer(response.status_code, message or "")]
        if parsed is None:
            kind = response.headers.get("content-type", "no content type").split(";")[0]
            message = f"The answer is not JSON ({kind}, {len(response.content):,} bytes)."
            return [Answer(status=response.status_code, error=message)]
        answer = self.reader.answer(parsed)
        if answer.failed:
            answer.status = response.status_code
        return [answer]

    def close(self) -> None:
        self.client.close()


class _Solr(_Http):
    def describe(self, body: dict) -> Sent:
        params = {"rows": self.endpoint.depth, "fl": "*,score", **body, "wt": "json"}
        url = f"{self.endpoint.base_url.rstrip('/')}/{self.endpoint.index.strip('/')}/select"
        return Sent("GET", url, params)


class _Json(_Http):
    def describe(self, body: dict) -> Sent:
        path = (
            self.endpoint.index
            if self.endpoint.index.startswith("/")
            else "/" + self.endpoint.index
        )
        url = self.endpoint.base_url.rstrip("/") + path
        return Sent(self.endpoint.method, url, body)


ENGINES = {
    "elasticsearch": _Elasticsearch,
    "opensearch": _OpenSearch,
    "solr": _Solr,
    "json": _Json,
}


def engine_open(endpoint, secret: str = "") -> _Engine:
    return ENGINES[endpoint.kind](endpoint, secret)


def search_all(
    engine: _Engine,
    bodies: Sequence[dict],
    *,
    concurrency: int,
    progress: Callable[[int], None] = lambda done: None,
) -> list[Answer]:
    """Each body's answer, in order. Raises EngineUnavailable (at once, without waiting
    for the rest) when no query can be answered."""
    answers: list[Answer | None] = [None] * len(bodies)
    size = max(1, min(engine.batch, -(-len(bodies) // (4 * concurrency))))
    starts = range(0, len(bodies), size)
    lock, done = threading.Lock(), [0]

    def run(start: int) -> None:
        batch = list(bodies[start : start + size])
        answers[start : start + len(batch)] = _with_retries(engine, batch)
        with lock:
            done[0] += len(batch)

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        pending = {pool.submit(run, start) for start in starts}
        # Progress is told from this thread, so that it may write to the database.
        while pending:
            finished, pending = wait(pending, timeout=0.5, return_when=FIRST_EXCEPTION)
            for future in finished:
                if future.exception() is not None:
                    pool.shutdown(cancel_futures=True)
                    raise future.exception()
            progress(done[0])
    return answers


def _with_retries(engine: _Engine, batch: list[dict]) -> list[Answer]:
    for attempt in range(MAX_RETRIES + 1):
        try:
            return engine.send(batch)
        except _Throttled as throttled:
            if attempt == MAX_RETRIES:
                break
            time.sleep(retry_after_seconds(throttled.retry_after, attempt))
    message = f"HTTP 429 Too Many Requests, {MAX_RETRIES + 1} times (each Retry-After waited)."
    return [Answer(status=429, error=message) for _ in batch]


def _timed_out(endpoint) -> Answer:
    return Answer(error=f"No answer within {endpoint.timeout_seconds:g} s (the timeout).")


def _api_message(body) -> str:
    """The engine's own message in an error answer; nothing of a body that is not its
    JSON error (an HTML page of a proxy), which the status alone describes."""
    if isinstance(body, dict):
        return engine_error(body) or "The engine answered with an error."
    return ""


def _elastic_auth(endpoint, secret: str) -> dict:
    if endpoint.auth == "basic":
        return {"basic_auth": (endpoint.username, secret)}
    if endpoint.auth == "api_key":
        return {"api_key": secret}
    if endpoint.auth == "bearer":
        return {"bearer_auth": secret}
    return {}


def _opensearch_auth(endpoint, secret: str) -> dict:
    if endpoint.auth == "basic":
        return {"http_auth": (endpoint.username, secret)}
    return {"headers": _http_auth_headers(endpoint, secret)} if endpoint.auth != "none" else {}


def _http_auth_headers(endpoint, secret: str) -> dict:
    if endpoint.auth == "basic":
        token = base64.b64encode(f"{endpoint.username}:{secret}".encode()).decode()
        return {"authorization": f"Basic {token}"}
    if endpoint.auth == "api_key":
        return {"authorization": f"ApiKey {secret}"}
    if endpoint.auth == "bearer":
        return {"authorization": f"Bearer {secret}"}
    return {}
