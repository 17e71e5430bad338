"""Benchmark a capture from a search engine: 1,000 queries captured from the test engine
on 127.0.0.1, against the time that engine itself needs to answer them at the
endpoint's concurrency (target: the capture within 2x).

Run as ``.venv/bin/python tests/bench/bench_engines.py [--queries 1000]
[--concurrency 4] [--repeat 3]``. It is not a pytest test; it works on the development
database (never the test one), in a project "bench-engines" it builds and deletes again.

The engine (tests/engines/engine_server.py: BM25 over Cranfield, Elasticsearch's wire
format) runs in a process of its own, so that neither side's Python slows the other.
The peer is the least a client can do: the same ``_msearch`` requests (the capture's
bodies, in its batches) sent by urllib3 from as many threads as the endpoint's
concurrency, the answers read and not parsed. The capture is its task's work,
``capture_run``, whole: the official client through the outbound policy, the hits read
and checked, the documents and the result list stored by the import services. The
queries are the titles of Cranfield's documents (1,400 distinct texts). The first
capture creates the documents; later ones find them unchanged and write none. A try
(the same requests, its ranking kept on the capture, no list stored) is timed too. The
metrics refresh a capture queues is the task worker's, after it, as for any uploaded
list, and is not counted.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPOSITORY))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "0")
os.environ.setdefault("SECRET_KEY", "bench-only-not-secret-" * 3)
# The operator's allowance for an engine on this machine.
os.environ.setdefault("OUTBOUND_ALLOW", "127.0.0.1")

import django  # noqa: E402

django.setup()

import urllib3  # noqa: E402
from django.db import transaction  # noqa: E402
from django.test import override_settings  # noqa: E402

from judgements.engines import clients  # noqa: E402
from judgements.engines.capture import capture_run, capture_start  # noqa: E402
from judgements.engines.services import endpoint_create  # noqa: E402
from judgements.engines.templates import QueryValues, template_fill, template_parse  # noqa: E402
from judgements.models import Project, Query  # noqa: E402
from tests.bench.summary import load_average, record  # noqa: E402
from tests.shared import CRANFIELD  # noqa: E402

SLUG = "bench-engines"
DUMMY = "django.tasks.backends.dummy.DummyBackend"
TEMPLATE = {"query": {"multi_match": {"query": "{{query}}", "fields": ["title^2", "text"]}}}


def engine() -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.engines.engine_server"],
        cwd=REPOSITORY,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    return process, process.stdout.readline().strip()


def build(count: int, url: str, concurrency: int):
    Project.objects.filter(slug=SLUG).delete()
    project = Project.objects.create(name="Bench: engines", slug=SLUG)
    titles = []
    for line in (CRANFIELD / "documents.jsonl").read_text().splitlines():
        title = json.loads(line)["title"].strip()
        if title and title not in titles and len(title) <= 500:
            titles.append(title)
    Query.objects.bulk_create(Query(project=project, text=text) for text in titles[:count])
    endpoint = endpoint_create(
        project=project,
        user=None,
        template=json.dumps(TEMPLATE),
        name="bench",
        kind="elasticsearch",
        base_url=url,
        index="cranfield",
        title_field="title",
        snippet_field="text",
        concurrency=concurrency,
    )
    return project, endpoint


def peer(url: str, endpoint, project) -> float:
    """The same _msearch requests as the capture's, sent and read, nothing more."""
    parsed = template_parse(json.dumps(TEMPLATE), kind="elasticsearch")
    texts = list(project.queries.order_by("id").values_list("text", flat=True))
    sender = clients.engine_open(endpoint)
    sender.trim_source = True  # As a capture asks.
    bodies = [
        sender.body_with_size(template_fill(parsed, QueryValues(text), depth=endpoint.depth))
        for text in texts
    ]
    sender.close()
    size = max(1, min(clients.MAX_BATCH, -(-len(bodies) // (4 * endpoint.concurrency))))
    payloads = [
        "".join(f"{{}}\n{json.dumps(body)}\n" for body in bodies[start : start + size]).encode()
        for start in range(0, len(bodies), size)
    ]
    pool = urllib3.PoolManager(maxsize=endpoint.concurrency)
    headers = {"Content-Type": "application/x-ndjson"}

    def send(payload: bytes) -> int:
        answer = pool.request("POST", f"{url}/cranfield/_msearch", body=payload, headers=headers)
        return len(answer.data)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=endpoint.concurrency) as threads:
        assert all(threads.map(send, payloads))
    return time.perf_counter() - started


def capture(endpoint, number: int, kind: str = "manual") -> float:
    """A capture queued (its task not run: the dummy backend keeps it), then its task's
    work, ``capture_run``, timed to its end. The metrics refresh it queues is the task
    worker's, after it, as for any uploaded list, and is not counted."""
    with override_settings(TASKS={"default": {"BACKEND": DUMMY}}), transaction.atomic():
        queued = capture_start(endpoint=endpoint, user=None, kind=kind, name=f"{kind} {number}")
    with override_settings(TASKS={"default": {"BACKEND": DUMMY}}):
        started = time.perf_counter()
        outcome = capture_run(queued.pk)
        seconds = time.perf_counter() - started
    queued.refresh_from_db()
    assert outcome == "done" and queued.failed == 0, queued.error
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    process, url = engine()
    try:
        project, endpoint = build(args.queries, url, args.concurrency)
        queries = project.queries.count()
        peer(url, endpoint, project)  # Warm both sides up once, untimed.
        peers, captures, tries = [], [], []
        for number in range(args.repeat):
            peers.append(peer(url, endpoint, project))
            captures.append(capture(endpoint, number))
            tries.append(capture(endpoint, number, kind="try"))
        report(queries, args.concurrency, peers, captures, tries)
    finally:
        Project.objects.filter(slug=SLUG).delete()
        process.stdin.close()
        process.wait(timeout=30)


def report(queries: int, concurrency: int, peers, captures, tries) -> None:
    server, mine = statistics.median(peers), statistics.median(captures)
    tried = statistics.median(tries)
    ratio = mine / server
    print(f"\n== capture of {queries:,} queries from a local engine, concurrency {concurrency} ==")
    print(f"  the engine answering them (peer)  {server:6.2f} s (median of {len(peers)})")
    print(f"  the capture, stored as a list     {mine:6.2f} s (median of {len(captures)})")
    print(f"  a try (the same, not stored)      {tried:6.2f} s: {tried / server:.2f}x the engine")
    verdict = "met" if ratio <= 2 else "NOT met"
    print(f"  ratio {ratio:.2f}x (target: <= 2x, {verdict}); load {load_average()}")
    record(
        f"capture of {queries:,} queries / the engine answering them",
        f"{ratio:.2f}x",
        "<= 2x",
        ratio <= 2,
        load_average(),
    )


if __name__ == "__main__":
    main()
