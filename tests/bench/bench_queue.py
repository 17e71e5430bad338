"""Benchmark the rating page: server time to pick the next pair and render it.

Run as ``.venv/bin/python tests/bench/bench_queue.py [--requests 1000]``. It is not a
pytest test, and it works on the development database (never the test one): when the
project "generated-load" is missing it is built first with ``generate_load --queries
10000 --hits-per-query 100 --judgements 1000000`` (about 100k open-or-done pool pairs
at pool depth 10 over three result lists, and 1M judgement events).

Requests go through Django's test ``Client`` in-process: the whole middleware stack,
the database session, the queue's SQL, the lease and the template, but no network or
WSGI server. Each round GETs the rating page (timed: pick + lease + render) and then
posts a grade for the pair it shows (timed apart), as a rater working through the queue
would, so every GET picks a new pair: one series of full pages, then one of the htmx
partials that the page swaps in after each answer. The grades are real events of the user
"bench_rater" in the generated project; rerunning continues where the last run stopped.
A second, shorter series times the page for "load_rater_000", who already has tens of
thousands of events, since the progress counts grow with the rater's history.
"""

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPOSITORY))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

# Each answer schedules a metrics refresh. In production a worker queue runs it, so
# grading does not wait; the development default runs it in-process, on the whole
# generated project. The dummy backend only records it, as a queue would.
settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"}}

from django.contrib.auth.models import Group, User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import reverse  # noqa: E402

from judgements.models import Judgement, Project  # noqa: E402
from judgements.roles import Role  # noqa: E402

SLUG = "generated-load"
PAIR = re.compile(r'data-query="(\d+)" data-document="(\d+)"')
TARGET_P95_MS = 20.0


def generated_project(judges_per_pair: int | None) -> Project:
    project = Project.objects.filter(slug=SLUG).first()
    if project is None:
        print("Building the generated project (a few minutes) ...", flush=True)
        call_command("generate_load", queries=10_000, hits_per_query=100, judgements=1_000_000)
        project = Project.objects.get(slug=SLUG)
    if judges_per_pair and project.judges_per_pair != judges_per_pair:
        project.judges_per_pair = judges_per_pair
        project.save(update_fields=["judges_per_pair"])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE judgements_queuepair")
    return project


def logged_in(username: str) -> Client:
    user, _ = User.objects.get_or_create(username=username)
    user.groups.add(Group.objects.get(name=Role.RATER.value))
    # ALLOWED_HOSTS of the development settings does not include "testserver".
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    return client


def series(client: Client, project: Project, requests: int, *, grade: bool, htmx=False) -> dict:
    rate = reverse("judgements:rate", args=[project.slug])
    answer = reverse("judgements:rate_answer", args=[project.slug])
    headers = {"HX-Request": "true"} if htmx else {}
    pages, posts = [], []
    for _ in range(requests):
        started = time.perf_counter()
        response = client.get(rate, headers=headers)
        pages.append(time.perf_counter() - started)
        page = response.content.decode()
        match = PAIR.search(page)
        if response.status_code != 200 or match is None:
            raise SystemExit(f"No pair to rate after {len(pages) - 1} requests.")
        if "Not saved" in page:
            raise SystemExit("An answer was refused, so every page would show the same pair.")
        if grade:
            data = {"query": match[1], "document": match[2], "answer": "1"}
            started = time.perf_counter()
            client.post(answer, data)
            posts.append(time.perf_counter() - started)
    return {"page": pages, "answer": posts}


def describe(label: str, seconds: list[float]) -> str:
    ms = sorted(value * 1000 for value in seconds)
    p50 = statistics.median(ms)
    p95 = ms[max(0, round(0.95 * len(ms)) - 1)]
    return (
        f"{label:<38} n={len(ms):>5}  p50 {p50:6.2f} ms  p95 {p95:6.2f} ms  max {ms[-1]:6.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--heavy-requests", type=int, default=200)
    parser.add_argument("--judges-per-pair", type=int, default=None)
    args = parser.parse_args()
    project = generated_project(args.judges_per_pair)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), count(*) FILTER (WHERE needed > 0) FROM judgements_queuepair"
            " WHERE project_id = %s",
            [project.pk],
        )
        pairs, open_pairs = cursor.fetchone()
    print(
        f"{project.slug}: {pairs} pool pairs, {open_pairs} open, "
        f"judges_per_pair={project.judges_per_pair}; Django test Client, in-process"
    )
    rater = logged_in("bench_rater")
    answers_before = Judgement.objects.filter(rater__username="bench_rater").count()
    series(rater, project, 20, grade=True)  # Warm caches and the query plans.
    fresh = series(rater, project, args.requests, grade=True)
    partial = series(rater, project, args.requests, grade=True, htmx=True)
    heavy = series(logged_in("load_rater_000"), project, args.heavy_requests, grade=False)
    print(describe("GET rate page (pick + lease + render)", fresh["page"]))
    print(describe("GET htmx partial after an answer", partial["page"]))
    print(describe("POST answer (record + redirect)", fresh["answer"] + partial["answer"]))
    print(describe("GET rate page, rater with 50k events", heavy["page"]))
    answers = Judgement.objects.filter(rater__username="bench_rater").count() - answers_before
    print(f"{answers} answers recorded by bench_rater, each on a newly picked pair.")
    p95 = sorted(fresh["page"])[round(0.95 * len(fresh["page"])) - 1] * 1000
    verdict = "meets" if p95 <= TARGET_P95_MS else "misses"
    print(f"p95 {p95:.2f} ms {verdict} the {TARGET_P95_MS:.0f} ms target.")


if __name__ == "__main__":
    main()
