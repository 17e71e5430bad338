"""The budgets a user feels, on the 10k-query, 1M-judgement project (issue 37).

Run as ``.venv/bin/python tests/bench/bench_budgets.py [--repeat 20]`` (``make bench``
runs it). It is not a pytest test, and it works on the development database: the project
``generated-load`` is built first if it is missing (``generate_load --queries 10000
--hits-per-query 100 --judgements 1000000``, about a minute), and its stored series
computed once. DEBUG is off and tasks go to the database queue, as gunicorn serves.

Each figure is timed over repeated runs and recorded with its median and p95
(``summary.budget_record``):

1. every dashboard page (overview, per-query table, a query's detail, the comparison,
   the raters' agreement), with the project's metric and with k changed, now:
   p95 <= 300 ms for each; the slowest page's row is recorded;
2. the same pages as of a past moment (halfway through the log): p95 <= 500 ms;
3. one list's recompute after a grade: a grade is recorded (its query's packed rows
   marked stale, no refresh), then the whole list is evaluated from the packed rows,
   the stale query from the pair grades: p95 <= 25 ms;
4. a grade's POST (``/api/judgements/create/``) with the refresh it queued, run here
   as the worker runs it: p95 <= 30 ms.

Server time through Django's test ``Client`` in-process: the middleware, the queries,
numpy and the template, no network. The machine's load is printed with each row.
"""

import argparse
import datetime as dt
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPOSITORY))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ["DEBUG"] = "False"
os.environ.setdefault("SECRET_KEY", "bench-only-not-secret-" * 3)
os.environ["TASKS_BACKEND"] = "database"
warnings.filterwarnings("ignore", message="No directory at")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

# Without DEBUG the settings name the manifest storage, which needs collectstatic's
# output; plain static URLs cost the page the same (as bench_queue does).
settings.STORAGES = {
    **settings.STORAGES,
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

from django.contrib.auth.models import Group, User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db.models import Max, Min  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402
from django_tasks_db.models import DBTaskResult  # noqa: E402
from helpers import wait_until_quiet  # noqa: E402
from summary import budget_record, load_average, percentile  # noqa: E402

from judgements.models import Hit, Judgement, Project  # noqa: E402
from judgements.roles import Role  # noqa: E402
from metrics import evaluate, tasks  # noqa: E402
from metrics.models import LatestMetricPoint  # noqa: E402
from metrics.registry import project_spec  # noqa: E402

PAGE_MS = 300.0
PAST_PAGE_MS = 500.0
RECOMPUTE_MS = 25.0
GRADE_MS = 30.0
SLUG = "generated-load"


def project_ready() -> Project:
    project = Project.objects.filter(slug=SLUG).first()
    if project is None:
        print(f"{SLUG} is missing: building it (about a minute on an idle machine) ...")
        call_command(
            "generate_load", queries=10_000, hits_per_query=100, judgements=1_000_000, slug=SLUG
        )
        project = Project.objects.get(slug=SLUG)
    if not LatestMetricPoint.objects.filter(result_list__project=project).exists():
        started = time.perf_counter()
        tasks.project_metrics_refresh.call(project.pk)
        print(f"Stored series computed in {time.perf_counter() - started:.1f} s")
    tasks.project_metrics_refresh.call(project.pk)  # Nothing stale before the pages.
    return project


def user(name: str, role: Role) -> User:
    account, _ = User.objects.get_or_create(username=name)
    account.groups.add(Group.objects.get(name=role.value))
    return account


def client_of(account: User) -> Client:
    client = Client(HTTP_HOST="localhost")  # ALLOWED_HOSTS does not include "testserver".
    client.force_login(account)
    return client


def past_moment(project) -> dt.datetime:
    events = Judgement.objects.for_project(project).aggregate(
        first=Min("created_at"), last=Max("created_at")
    )
    return (events["first"] + (events["last"] - events["first"]) / 2).replace(microsecond=0)


def pages(project) -> dict[str, str]:
    result_list = project.result_lists.order_by("captured_at").last()
    query = project.queries.order_by("pk").first()
    base = f"/metrics/{project.slug}"
    table = f"{base}/{result_list.pk}/queries/"
    return {
        "overview": f"{base}/",
        "overview k=5": f"{base}/?k=5",
        "per-query table": table,
        "per-query table k=5": f"{table}?k=5",
        "query detail": f"{table}{query.pk}/",
        "compare": f"{base}/compare/",
        "raters": f"{base}/raters/",
    }


def time_pages(client, urls: dict[str, str], repeat: int, extra: dict) -> dict[str, list]:
    """Each page once for warm-up, then ``repeat`` rounds of every page in turn (so the
    machine's load weighs on all alike)."""
    for name, url in urls.items():
        response = client.get(url, extra)
        assert response.status_code == 200, (name, url, response.status_code)
    seconds = {name: [] for name in urls}
    for _ in range(repeat):
        for name, url in urls.items():
            started = time.perf_counter()
            client.get(url, extra)
            seconds[name].append(time.perf_counter() - started)
    return seconds


def report_pages(label: str, seconds: dict[str, list], budget_ms: float) -> None:
    print(f"\n== {label} (budget: p95 <= {budget_ms:g} ms each) ==")
    for name, times in seconds.items():
        median, p95 = statistics.median(times) * 1000, percentile(times, 0.95)
        print(f"  {name:22} median {median:7.1f} ms  p95 {p95:7.1f} ms")
    slowest = max(seconds, key=lambda name: percentile(seconds[name], 0.95))
    budget_record(f"{label}: slowest, {slowest}", seconds[slowest], budget_ms)


def graded_pairs(project, rater, count: int) -> list[tuple[int, int, int]]:
    """``count`` (query, document, grade) spread over the queries: pool pairs (each
    query's tenth hit in the first list) that no other rater graded, so that the grade
    always has a slot; the grade other than the rater's current one."""
    result_list = project.result_lists.order_by("pk").first()
    hits = Hit.objects.filter(result_list=result_list, rank=10).order_by("query_id")
    pairs = list(hits.values_list("query_id", "document_id"))
    events = Judgement.objects.filter(query_id__in=[q for q, _ in pairs]).values_list(
        "query_id", "document_id", "rater_id", "grade"
    )
    others = {(q, d) for q, d, r, _ in events if r != rater.pk}
    own = {(q, d): g for q, d, r, g in events.order_by("created_at", "id") if r == rater.pk}
    free = [pair for pair in pairs if pair not in others]
    step = max(1, len(free) // count)
    return [(q, d, ((own.get((q, d)) or 0) + 1) % 4) for q, d in free[::step][:count]]


def recompute_after_a_grade(project, rater, repeat: int) -> list[float]:
    spec = project_spec(project)
    result_list = project.result_lists.order_by("pk").first()
    seconds = []
    for n, (query, document, grade) in enumerate(graded_pairs(project, rater, repeat + 3)):
        Judgement.objects.create(query_id=query, document_id=document, rater=rater, grade=grade)
        started = time.perf_counter()
        evaluate.result_list_evaluate(result_list, spec, as_of=timezone.now())
        if n >= 3:  # Warm-up.
            seconds.append(time.perf_counter() - started)
    tasks.project_metrics_refresh.call(project.pk)
    return seconds


def grade_with_refresh(project, rater, repeat: int) -> list[float]:
    client = client_of(rater)
    seconds = []
    for n, (query, document, grade) in enumerate(graded_pairs(project, rater, repeat + 5)):
        data = {"query": query, "document": document, "grade": grade}
        started = time.perf_counter()
        response = client.post("/api/judgements/create/", data, content_type="application/json")
        assert response.status_code == 201, response.status_code
        tasks.project_metrics_refresh.call(project.pk)
        if n >= 5:
            seconds.append(time.perf_counter() - started)
        # The refresh and interval tasks the grade queued ran here (or are left to one).
        for waiting in DBTaskResult.objects.ready().filter(
            task_path=tasks.result_list_interval.module_path
        ):
            tasks.result_list_interval.call(*waiting.args_kwargs["args"])
        DBTaskResult.objects.ready().delete()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    project = project_ready()
    print(wait_until_quiet())
    print(f"{SLUG}: load average {load_average()} on {os.cpu_count()} CPUs")
    client = client_of(user("bench_analyst", Role.ANALYST))
    urls = pages(project)
    report_pages("any dashboard page, any parameters, now", time_pages(
        client, urls, args.repeat, {}), PAGE_MS)  # fmt: skip
    moment = {"as_of": past_moment(project).strftime("%Y-%m-%dT%H:%M:%S")}
    report_pages("any page as of a past moment", time_pages(
        client, urls, args.repeat, moment), PAST_PAGE_MS)  # fmt: skip
    rater = user("bench_budget_rater", Role.RATER)
    recompute = recompute_after_a_grade(project, rater, args.repeat * 2)
    print(f"\n== one list's recompute after a grade: median "
          f"{statistics.median(recompute) * 1000:.1f} ms, p95 "
          f"{percentile(recompute, 0.95):.1f} ms ==")  # fmt: skip
    budget_record("one list's recompute after a grade, 10,000 queries", recompute, RECOMPUTE_MS)
    grades = grade_with_refresh(project, rater, args.repeat * 2)
    print(f"\n== grade POST with its refresh: median {statistics.median(grades) * 1000:.1f} "
          f"ms, p95 {percentile(grades, 0.95):.1f} ms ==")  # fmt: skip
    budget_record("grade POST with its refresh, 10,000 queries x 3 lists", grades, GRADE_MS)


if __name__ == "__main__":
    main()
