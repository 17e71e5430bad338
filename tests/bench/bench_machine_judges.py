"""Benchmark a machine judge's throughput: pairs per second at concurrency 1, 8 and 32.

Run as ``.venv/bin/python tests/bench/bench_machine_judges.py [--pairs 960]
[--delay 0.05]``. It is not a pytest test; it works on the development database (never
the test one), in a project "bench-judges" it builds (``--pairs`` pool pairs: 40 hits
per query) and deletes again. The model is the test suite's OpenAI-compatible server
(tests/model_server.py) on 127.0.0.1, spoken to through the real ``openai`` client.

Two series: with the server answering at once (``delay`` 0), which measures the judge's
own cost per pair (claim under the run's lock, HTTP through the client, the event and
its answer written, the run's counters); and with every answer ``--delay`` seconds late
(default 50 ms, a small model on a GPU), where concurrency should hide the model's
latency. Each level is one run over every pair, started afresh (the previous level's
events are deleted untimed), worked by one task (``machine_run_work``) in this process.
"""

import argparse
import os
import sys
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPOSITORY))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "0")
os.environ.setdefault("SECRET_KEY", "bench-only-not-secret-" * 3)

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.utils import timezone  # noqa: E402

from judgements.machine.runs import machine_run_start, machine_run_work  # noqa: E402
from judgements.machine.services import machine_judge_create  # noqa: E402
from judgements.models import (  # noqa: E402
    Document,
    Hit,
    Judgement,
    MachineRun,
    Project,
    Query,
    ResultList,
)
from tests.model_server import ModelServer  # noqa: E402

SLUG = "bench-judges"
HITS_PER_QUERY = 40
LEVELS = (1, 8, 32)


def build(pairs: int) -> Project:
    Project.objects.filter(slug=SLUG).delete()
    get_user_model().objects.filter(username__startswith=f"machine.{SLUG}.").delete()
    project = Project.objects.create(name="Bench: machine judges", slug=SLUG, pool_depth=50)
    run = ResultList.objects.create(project=project, name="bench", captured_at=timezone.now())
    queries = Query.objects.bulk_create(
        Query(project=project, text=f"bench query {q}") for q in range(-(-pairs // HITS_PER_QUERY))
    )
    documents = Document.objects.bulk_create(
        Document(project=project, external_id=f"doc-{d}", title=f"doc {d}", snippet="text")
        for d in range(pairs)
    )
    Hit.objects.bulk_create(
        Hit(
            result_list=run,
            query=queries[d // HITS_PER_QUERY],
            document=document,
            rank=d % HITS_PER_QUERY + 1,
        )
        for d, document in enumerate(documents)
    )
    return project


def measure(judge, concurrency: int) -> tuple[float, int]:
    Judgement.objects.filter(rater=judge.rater).delete()
    MachineRun.objects.filter(judge=judge).delete()
    judge.concurrency = concurrency
    judge.save(update_fields=["concurrency"])
    run = machine_run_start(judge=judge, user=None, tasks=0)
    started = time.perf_counter()
    machine_run_work(run.pk)
    seconds = time.perf_counter() - started
    run.refresh_from_db()
    assert run.status == "done" and run.graded == run.total, (run.status, run.graded)
    return seconds, run.total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=960)
    parser.add_argument("--delay", type=float, default=0.05)
    args = parser.parse_args()
    project = build(args.pairs)
    server = ModelServer(default=2).start()
    try:
        judge = machine_judge_create(
            project=project, name="bench", base_url=server.url, model="bench-model"
        )
        print(f"{args.pairs} pairs, one task, local OpenAI-compatible server on 127.0.0.1")
        for delay in (0.0, args.delay):
            server.delay = delay
            for level in LEVELS:
                seconds, pairs = measure(judge, level)
                print(
                    f"model delay {delay * 1000:4.0f} ms  concurrency {level:2d}: "
                    f"{pairs / seconds:7.1f} pairs/s ({pairs} pairs in {seconds:.2f} s)"
                )
    finally:
        server.stop()
        Project.objects.filter(slug=SLUG).delete()
        get_user_model().objects.filter(username__startswith=f"machine.{SLUG}.").delete()


if __name__ == "__main__":
    main()
