"""Benchmark the rating page: server time to pick the next pair and render it.

Run as ``.venv/bin/python tests/bench/bench_queue.py [--requests 1000]``. It is not a
pytest test, and it works on the development database (never the test one): when the
project "generated-queue" is missing it is built first with ``generate_load --slug
generated-queue --queries 4000 --hits-per-query 100 --judgements 1000000`` (1M judgement
events, and about 102k pool pairs: the top 10 of three result lists for each of 4,000
queries, the sizes the issue names). It is not the other benchmarks' "generated-load"
(10,000 queries, 255k pool pairs), so that neither changes what the other measures. The project
keeps the generator's ``judges_per_pair`` of 1 (``--judges-per-pair`` changes it), which
leaves about 3.7k pairs open, enough for a run of 2,020 answers.

Requests go through Django's test ``Client`` in-process, with DEBUG off as in
production (``--debug`` turns it on): the whole middleware stack, the session and user
reads, the queue's SQL (pick, lock and lease, in their transaction), the progress counts
and the template, but no network, WSGI server or static files. Each round GETs the
rating page (timed: pick + lease + render) and then posts a grade for the pair it shows
(timed apart), as a rater working through the queue would, so every GET picks a new
pair: one series of full pages, then one of the htmx partials that the page swaps in
after each answer. Between requests, untimed, the benchmark checks that the page shows
a pair it has not shown before and that the rater holds a live lease on it. The grades
are real events of the user "bench_rater" in the generated project. Before the series,
bench_rater's current answers from earlier runs are retracted (one statement of retract
events), so that every run starts from the same queue and the pool stays at the size
above. A third, shorter series times the page for
"load_rater_000", who already has about 50k events in the project; it does not answer,
so it reloads the same leased pair.
"""

import argparse
import os
import re
import statistics
import sys
import time
import warnings
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPOSITORY))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Production runs with DEBUG off: templates without debug information and no log of
# every SQL statement. Settings are read once, so this is decided before setup.
DEBUG = "--debug" in sys.argv
os.environ["DEBUG"] = str(DEBUG)
os.environ.setdefault("SECRET_KEY", "bench-only-not-secret-" * 3)

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from summary import budget_record  # noqa: E402

# Without DEBUG the settings name the manifest storage, which needs collectstatic's
# output; plain static URLs cost the page the same. WhiteNoise then finds no folder.
settings.STORAGES = {
    **settings.STORAGES,
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
warnings.filterwarnings("ignore", message="No directory at")
# Each answer schedules a metrics refresh. In production a worker queue runs it, so
# grading does not wait; the development default runs it in-process, on the whole
# generated project. The dummy backend only records it, as a queue would.
settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"}}

from django.contrib.auth.models import Group, User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import reverse  # noqa: E402
from django.utils import timezone  # noqa: E402

from judgements.models import Judgement, Project, QueueLease  # noqa: E402
from judgements.roles import Role  # noqa: E402

SLUG = "generated-queue"
PAIR = re.compile(r'data-query="(\d+)" data-document="(\d+)"')
TARGET_P95_MS = 20.0


def generated_project(judges_per_pair: int) -> Project:
    project = Project.objects.filter(slug=SLUG).first()
    if project is None:
        print("Building the generated project (a few minutes) ...", flush=True)
        call_command(
            "generate_load", slug=SLUG, queries=4_000, hits_per_query=100, judgements=1_000_000
        )
        project = Project.objects.get(slug=SLUG)
    if judges_per_pair and project.judges_per_pair != judges_per_pair:
        project.judges_per_pair = judges_per_pair
        project.save(update_fields=["judges_per_pair"])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE judgements_queuepair")
    return project


def answers_retract(rater_id: int, project: Project) -> int:
    """Retract the rater's current answers in one statement, reopening their pairs."""
    current = (
        Judgement.objects.for_project(project)
        .filter(rater_id=rater_id)
        .exclude(kind=Judgement.Kind.RETRACT)
        .still_current()
        .values_list("query_id", "document_id")
    )
    retractions = [
        Judgement(
            query_id=query_id,
            document_id=document_id,
            rater_id=rater_id,
            kind=Judgement.Kind.RETRACT,
            grade=None,
        )
        for query_id, document_id in current
    ]
    return len(Judgement.objects.bulk_create(retractions))


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
    pages, posts, seen = [], [], set()
    for _ in range(requests):
        started = time.perf_counter()
        response = client.get(rate, headers=headers)
        pages.append(time.perf_counter() - started)
        pair = shown_pair(response, client, project)
        if grade:
            if pair in seen:
                raise SystemExit(f"Pair {pair} came twice: an answer was lost.")
            seen.add(pair)
            data = {"query": pair[0], "document": pair[1], "answer": "1"}
            started = time.perf_counter()
            response = client.post(answer, data)
            posts.append(time.perf_counter() - started)
            if response.status_code != 302:
                raise SystemExit(f"Answering {pair} gave HTTP {response.status_code}.")
    return {"page": pages, "answer": posts}


def shown_pair(response, client: Client, project: Project) -> tuple[int, int]:
    """The pair on the page, after checking that the page's rater holds its lease."""
    page = response.content.decode()
    match = PAIR.search(page)
    if response.status_code != 200 or match is None:
        raise SystemExit(
            f"No pair to rate (HTTP {response.status_code}): the queue of {project.slug} is"
            " used up; rebuild it with generate_load or raise --judges-per-pair."
        )
    if "Not saved" in page:
        raise SystemExit("An answer was refused, so every page would show the same pair.")
    pair = int(match[1]), int(match[2])
    leases = QueueLease.objects.filter(
        rater_id=client.session["_auth_user_id"], query_id=pair[0], document_id=pair[1]
    )
    if not leases.filter(expires_at__gt=timezone.now()).exists():
        raise SystemExit(f"The page showed {pair} without leasing it.")
    return pair


def percentile(seconds: list[float], share: float) -> float:
    """The nearest-rank percentile, in milliseconds."""
    ms = sorted(value * 1000 for value in seconds)
    return ms[max(0, round(share * len(ms)) - 1)]


def describe(label: str, seconds: list[float]) -> str:
    ms = sorted(value * 1000 for value in seconds)
    p50 = statistics.median(ms)
    p95 = percentile(seconds, 0.95)
    return (
        f"{label:<38} n={len(ms):>5}  p50 {p50:6.2f} ms  p95 {p95:6.2f} ms  max {ms[-1]:6.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--heavy-requests", type=int, default=200)
    parser.add_argument("--judges-per-pair", type=int, default=1)
    parser.add_argument("--debug", action="store_true", help="DEBUG on (read before setup)")
    args = parser.parse_args()
    project = generated_project(args.judges_per_pair)
    rater = logged_in("bench_rater")
    retracted = answers_retract(rater.session["_auth_user_id"], project)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), count(*) FILTER (WHERE needed > 0) FROM judgements_queuepair"
            " WHERE project_id = %s",
            [project.pk],
        )
        pairs, open_pairs = cursor.fetchone()
    events = Judgement.objects.for_project(project).count()
    print(
        f"{project.slug}: {events} judgement events, {pairs} pool pairs, {open_pairs} open,"
        f" judges_per_pair={project.judges_per_pair}; Django test Client, in-process,"
        f" DEBUG={settings.DEBUG}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(f"Retracted {retracted} current answers of bench_rater from earlier runs first.")
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
    slower = max((fresh["page"], partial["page"]), key=lambda times: percentile(times, 0.95))
    p95 = percentile(slower, 0.95)
    verdict = "meets" if p95 <= TARGET_P95_MS else "misses"
    print(f"p95 {p95:.2f} ms (the slower series) {verdict} the {TARGET_P95_MS:.0f} ms budget.")
    budget_record("next pair (rating page: pick, lease, render)", slower, TARGET_P95_MS)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
