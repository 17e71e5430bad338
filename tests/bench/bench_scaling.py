"""Benchmark how cost grows: one grade's refresh at 10k, 100k and 1M queries.

Run as ``.venv/bin/python tests/bench/bench_scaling.py [--grades 200] [--sizes 10000
100000 1000000]``. It is not a pytest test, and it works on the
development database. The projects "scale-10k", "scale-100k" and "scale-1m" are built
when missing with ``generate_load --queries N --hits-per-query 10 --judgements 100000
--result-lists 1`` (a few seconds, 45 s and about 7 minutes on the 2-core machine; the
1M one takes about 5 GB), and their stored metrics computed once, untimed (3 s, 39 s and
about 5 minutes), so that a grade's refresh finds the list computed (as in a running
project) and recomputes only the graded query.

The cost of one grade. The user "bench_scaler" (rater role) posts grades through
   ``POST /api/judgements/create/`` in-process (Django's test Client, DEBUG off, the
   database task queue, as gunicorn serves it): the statement's time is the request's.
   Then the refresh the grade queued is run here, as the worker runs it
   (``metrics.tasks.project_metrics_refresh``), and timed apart, split into the packed
   rows' fill, the graded query's per-query point, the overall point of the list (its
   mean and counts computed again from every query's latest point, ``metrics.overall``)
   and the rest. The interval, which resamples every query, is left pending for a task
   (``metrics.tasks.result_list_interval``), run here after the refresh as a worker
   would and timed apart ("interval task", off the grade's path, growing with the
   list). The grade's budget is bench_budgets', on the 10k-query, 1M-judgement project;
   this prints how the cost grows with the list.

Each figure is printed with the load average at the time; the summary lines go to
``.bench/summary.tsv`` (``tests/bench/summary.py``).
"""

import argparse
import os
import statistics
import sys
import time
import warnings
from collections import defaultdict
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPOSITORY))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ["DEBUG"] = "False"
os.environ.setdefault("SECRET_KEY", "bench-only-not-secret-" * 3)
os.environ["TASKS_BACKEND"] = "database"
# Without collectstatic's folder WhiteNoise warns on every request's first use.
warnings.filterwarnings("ignore", message="No directory at")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from django.contrib.auth.models import Group, User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from django_tasks_db.models import DBTaskResult  # noqa: E402
from summary import load_average as load  # noqa: E402

from judgements.models import Hit, Judgement, Project  # noqa: E402
from judgements.roles import Role  # noqa: E402
from metrics import (  # noqa: E402
    evaluate,
    overall,
    refresh,
    revisions,
    selectors,
    tasks,
)
from metrics.models import LatestMetricPoint  # noqa: E402

SLUGS = {10_000: "scale-10k", 100_000: "scale-100k", 1_000_000: "scale-1m"}
RATER = "bench_scaler"


def scale_project(queries: int) -> Project:
    slug = SLUGS.get(queries, f"scale-{queries}")
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        print(f"Building {slug} ({queries:,} queries x 10 hits, 100k judgements) ...", flush=True)
        started = time.perf_counter()
        call_command(
            "generate_load", slug=slug, queries=queries, hits_per_query=10,
            judgements=100_000, result_lists=1,
        )  # fmt: skip
        print(f"  built in {time.perf_counter() - started:.0f} s", flush=True)
        project = Project.objects.get(slug=slug)
    if not LatestMetricPoint.objects.filter(result_list__project=project).exists():
        started = time.perf_counter()
        first_points(project)
        print(f"  {slug}: first points (whole list) {time.perf_counter() - started:.1f} s")
    return project


def first_points(project: Project) -> None:
    """Every query's point, as the refresh computes a list with none."""
    tasks.project_metrics_refresh.call(project.pk)


def rater_client() -> tuple[User, Client]:
    user, _ = User.objects.get_or_create(username=RATER)
    user.groups.add(Group.objects.get(name=Role.RATER.value))
    client = Client(HTTP_HOST="localhost")  # ALLOWED_HOSTS does not include "testserver".
    client.force_login(user)
    return user, client


def graded_pairs(project: Project, rater: User, count: int) -> list[tuple[int, int, int]]:
    """``count`` (query, document, grade) spread over the queries: each pair's last hit,
    on pairs no other rater graded; the grade differs from the rater's current one."""
    result_list = project.result_lists.order_by("pk").first()
    query_ids = np.array(project.queries.order_by("pk").values_list("pk", flat=True))
    picked = query_ids[np.linspace(0, len(query_ids) - 1, count * 4).astype(int)]
    hits = Hit.objects.filter(result_list=result_list, query_id__in=picked.tolist(), rank=10)
    pairs = dict(hits.values_list("query_id", "document_id"))
    events = Judgement.objects.filter(query_id__in=list(pairs)).values_list(
        "query_id", "document_id", "rater_id", "grade"
    )
    others = {(q, d) for q, d, r, _ in events if r != rater.pk}
    own = {(q, d): g for q, d, r, g in events.order_by("created_at", "id") if r == rater.pk}
    open_pairs = [(q, d) for q, d in sorted(pairs.items()) if (q, d) not in others]
    if len(open_pairs) < count:
        raise SystemExit(f"Only {len(open_pairs)} open pairs in {project.slug}; fewer grades?")
    chosen = [open_pairs[i] for i in np.linspace(0, len(open_pairs) - 1, count).astype(int)]
    return [(q, d, ((own.get((q, d)) or 0) + 1) % 4) for q, d in chosen]


class Clock:
    """Seconds spent in some functions of the refresh, per call of the refresh."""

    def __init__(self):
        self.spent = defaultdict(float)

    def wrap(self, module, name: str, label: str) -> None:
        original = getattr(module, name)

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.spent[label] += time.perf_counter() - started

        setattr(module, name, timed)

    def take(self) -> dict[str, float]:
        spent, self.spent = dict(self.spent), defaultdict(float)
        return spent


def grade_series(
    project: Project, grades: int, seconds: float, clock: Clock
) -> dict[str, list[float]]:
    rater, client = rater_client()
    series = defaultdict(list)
    deadline = time.perf_counter() + seconds
    for n, (query, document, grade) in enumerate(graded_pairs(project, rater, grades + 10)):
        if n >= 30 and time.perf_counter() > deadline:
            break  # At least 20 timed grades, then as many as the time allows.
        data = {"query": query, "document": document, "grade": grade}
        started = time.perf_counter()
        response = client.post("/api/judgements/create/", data, content_type="application/json")
        posted = time.perf_counter()
        if response.status_code != 201:
            raise SystemExit(f"Grading {query}/{document} gave HTTP {response.status_code}.")
        clock.take()
        tasks.project_metrics_refresh.call(project.pk)
        refreshed = time.perf_counter()
        spent = clock.take()
        interval = interval_tasks_run()
        if n < 10:
            continue  # Warm-up: caches and query plans.
        series["post"].append(posted - started)
        series["refresh"].append(refreshed - posted)
        series["total"].append(refreshed - started)
        series["interval task"].append(interval)
        for label, seconds in spent.items():
            series[label].append(seconds)
    # The grades queued a refresh each while none was waiting; this process ran them.
    DBTaskResult.objects.ready().filter(
        task_path=tasks.project_metrics_refresh.module_path
    ).delete()
    return series


def interval_tasks_run() -> float:
    """Run the interval tasks the refresh queued (one per list), as a worker would, and
    return the seconds they took."""
    waiting = DBTaskResult.objects.ready().filter(task_path=tasks.result_list_interval.module_path)
    started = time.perf_counter()
    for result in list(waiting):
        tasks.result_list_interval.call(*result.args_kwargs["args"])
        result.delete()
    return time.perf_counter() - started


def ms(values: list[float], share: float | None = None) -> float:
    if not values:
        return 0.0
    if share is None:
        return statistics.median(values) * 1000
    ordered = sorted(values)
    return ordered[max(0, round(share * len(ordered)) - 1)] * 1000


def grade_table(sizes: list[int], grades: int, seconds: float) -> dict[int, dict]:
    clock = Clock()
    clock.wrap(tasks, "packed_fill", "packed fill")
    clock.wrap(refresh, "metric_points_build", "query point")
    clock.wrap(overall, "overall_store", "overall point")
    clock.wrap(evaluate, "latest_values", "latest read")
    clock.wrap(evaluate, "overall_interval", "interval")
    clock.wrap(refresh, "metric_points_store", "store")
    clock.wrap(revisions, "revisions_recount", "revisions")
    clock.wrap(selectors, "judged_query_ids", "judged queries")
    # Every project first: a project whose packed rows are not filled yet (just built)
    # slows every other project's fill (packed.STALE_SQL scans every stale query).
    projects = {size: scale_project(size) for size in sizes}
    rows = {}
    for size, project in projects.items():
        series = grade_series(project, grades, seconds, clock)
        rows[size] = {"series": series, "load": load()}
        count = len(series["total"])
        print(f"  {project.slug}: {count} grades, load average {rows[size]['load']}", flush=True)
    parts = ["packed fill", "query point", "overall point", "store"]
    print(f"\n== One grade at {', '.join(f'{size:,}' for size in sizes)} queries (ms) ==")
    print("POST: the API request (checks, event, marks); refresh: the task the grade queued,")
    print("run here as the worker runs it; median of each part of the refresh beside it")
    print("(overall point: its mean and counts computed again from every query's latest")
    print("point; store: the points' upserts, within it). Interval task: the task the")
    print("refresh queued to draw the overall point's")
    print("interval again (every query's latest point read, 1,000 resamples), off the")
    print("grade's path; its median and p95.")
    head = (
        f"{'queries':>9} {'grades':>6} {'POST p50':>8} {'p95':>6} {'refresh p50':>11} {'p95':>6} "
    )
    head += " ".join(f"{part:>13}" for part in parts) + f" {'total p95':>9}"
    head += f" {'interval task':>13} {'p95':>6}  load"
    print(head)
    for size, row in rows.items():
        s = row["series"]
        line = (
            f"{size:>9,} {len(s['total']):>6} {ms(s['post']):>8.1f} {ms(s['post'], 0.95):>6.1f} "
        )
        line += f"{ms(s['refresh']):>11.1f} {ms(s['refresh'], 0.95):>6.1f} "
        line += " ".join(f"{ms(s[part]):>13.1f}" for part in parts)
        line += f" {ms(s['total'], 0.95):>9.1f}"
        line += f" {ms(s['interval task']):>13.1f} {ms(s['interval task'], 0.95):>6.1f}"
        print(line + f"  {row['load']}")
    return rows


def grade_summary(rows: dict[int, dict]) -> None:
    """How a grade's cost grows with the list (printed; the grade's budget is
    bench_budgets', on the 10k-query, 1M-judgement project)."""
    smallest, largest = min(rows), max(rows)
    if largest == smallest:
        return
    growth = ms(rows[largest]["series"]["total"]) / ms(rows[smallest]["series"]["total"])
    print(f"\nA grade with its refresh costs {growth:.1f}x as much at {largest:,} queries as at")
    print(f"{smallest:,} (median).")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grades", type=int, default=200)
    parser.add_argument(
        "--seconds", type=float, default=120, help="per project: fewer grades past it (min 20)"
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    args = parser.parse_args()
    print(f"bench_scaling: load average {load()} (2 cores, shared)", flush=True)
    rows = grade_table(args.sizes, args.grades, args.seconds)
    grade_summary(rows)
    print(f"load average {load()}")


if __name__ == "__main__":
    main()
