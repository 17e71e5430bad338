"""Benchmark the metrics API on a large generated project.

Run as ``.venv/bin/python tests/bench/bench_api.py`` (not a pytest test). It sets Django
up itself and uses the development database (or ``DATABASE_URL``). The project
``generated-load`` is built first if it is missing, with ``generate_load --queries
10000 --hits-per-query 100 --judgements 1000000``, and its stored series brought up to
date (``metrics_refresh``), as the task queue keeps it in production.

It times server time in-process (Django's test ``Client``, token-free session), over
``--calls`` calls each, after one warm-up call, and prints the p95 against the target:

1. the metrics of one result list with the project's parameters (<= 200 ms): read
   from the stored series, plus every hit's grade for P, AP, RR and ERR;
2. the same with parameters changed (<= 500 ms): computed from the packed grades,
   its interval resampled; a different variant on each call;
3. the comparison of the two newest lists with a gate (<= 1 s); its test and interval
   are cached by the paired values, so the first call (printed apart) pays for them;
   then the same comparison in-process, its bounds and verdict (``open_bounds``: what the
   unjudged hits leave open) timed apart: the whole within 2x of the comparison without
   them (issue 38), the ratio printed and recorded in the summary;
4. for information, without a target: unjudged work, one query's working, the
   series, and the metrics as of a past moment (replayed from the judgement log).
"""

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPOSITORY))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.test import Client  # noqa: E402

from judgements.models import Judgement  # noqa: E402
from metrics.models import LatestMetricPoint  # noqa: E402
from metrics.registry import project_spec  # noqa: E402
from metrics.sources import freshness  # noqa: E402
from tests.bench.bench_dashboards import (  # noqa: E402
    _describe,
    _project,
    _unapplied_migrations,
    analyst,
    sql_clock,
    timed,
    up_to_date,
)
from tests.bench.summary import load_average, record  # noqa: E402

TARGETS_MS = {"default": 200.0, "changed": 500.0, "compare": 1000.0}
# Parameters other than the generated project's (k 10, exponential, log2, judged, cut,
# zero, mean), one variant per call in turn.
CHANGED = [
    {"k": 5},
    {"k": 20, "gain": "linear"},
    {"discount": "rank", "ideal": "returned"},
    {"ideal_depth": "full", "unjudged": "remove"},
    {"consensus": "median", "k": 3},
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slug", default="generated-load")
    parser.add_argument("--calls", type=int, default=100, help="timed calls per endpoint")
    args = parser.parse_args()
    if _unapplied_migrations():
        print("Unapplied migrations: run `.venv/bin/python manage.py migrate` first.")
        return 1
    project = _project(args.slug)
    print(_describe(project))
    _bring_series_up_to_date(project)
    client = Client(HTTP_HOST="localhost")
    client.force_login(analyst())
    lists = list(project.result_lists.order_by("captured_at", "name"))
    newest, query = lists[-1], project.queries.order_by("pk").first()
    metrics = f"/api/result-lists/{newest.pk}/metrics/"
    print(f"\n== Server time in-process, p95 of {args.calls} calls after one warm-up ==")
    met = [
        _bench(client, "metrics, defaults", lambda _: metrics, args.calls, "default"),
        _bench(client, "metrics, changed", _changed(metrics), args.calls, "changed"),
    ]
    compare = f"/api/projects/{project.slug}/compare/?a={lists[-2].pk}&b={newest.pk}"
    compare += "&max_drop=0.01"
    met.append(_bench(client, "compare + gate", lambda _: compare, args.calls, "compare"))
    met.append(_bounds_share(project, lists[-2], newest, args.calls))
    print("\n== Without a target (median of 5 calls) ==")
    others = {
        "unjudged work": f"/api/result-lists/{newest.pk}/unjudged/",
        "one query's working": f"/api/result-lists/{newest.pk}/queries/{query.pk}/working/",
        "list series": f"/api/result-lists/{newest.pk}/series/",
        "metrics as of a past moment": f"{metrics}?as_of={_a_past_moment(project)}",
    }
    for name, url in others.items():
        _bench(client, name, lambda _, url=url: url, 5, None)
    return 0 if all(met) else 1


def _bring_series_up_to_date(project) -> None:
    spec = project_spec(project)
    computed = LatestMetricPoint.objects.filter(
        result_list__project=project, metric=spec.name
    ).exists()
    up_to_date(project, computed=computed)
    fresh = freshness(project, spec, as_of=None)
    print(f"The project's metric is {fresh.lists.label} (metrics.sources).")


def _changed(url: str):
    variants = itertools.cycle(CHANGED)

    def next_url(_):
        params = next(variants)
        return url + "?" + "&".join(f"{name}={value}" for name, value in params.items())

    return next_url


def _bench(client, name: str, url_of, calls: int, target: str | None) -> bool:
    (first,), warm_up = timed(lambda: (client.get(url_of(-1)),))
    assert first.status_code == 200, (url_of(-1), first.status_code, first.content[:300])
    times = []
    with sql_clock() as sql:
        for call in range(calls):
            url = url_of(call)
            (response,), seconds = timed(lambda url=url: (client.get(url),))
            assert response.status_code == 200, (url, response.status_code)
            times.append(seconds[0] * 1000)
    p95, median = np.percentile(times, 95), np.median(times)
    line = (
        f"  {name:28} p95 {p95:7.1f} ms, median {median:7.1f} ms, "
        f"warm-up {warm_up[0] * 1000:.0f} ms"
    )
    met = True
    if target is not None:
        met = p95 <= TARGETS_MS[target]
        line += f"; target <= {TARGETS_MS[target]:g} ms {'met' if met else 'NOT met'}"
    print(line)
    print(f"  {'':28} per call: {sql['queries'] / calls:.0f} SQL statements, "
          f"{sql['seconds'] * 1000 / calls:.1f} ms in SQL")  # fmt: skip
    return met


def _bounds_share(project, a, b, calls: int) -> bool:
    """The comparison in-process with its bounds and verdict timed apart (a wrapper
    around ``open_bounds`` that only reads the clock): whole vs without them, medians."""
    from metrics.dashboards import compare as module

    spent = []
    original = module.open_bounds

    def clocked(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - start)

    spec = project_spec(project)
    module.open_bounds = clocked
    try:
        runs = [
            timed(lambda: module.comparison(project, a, b, spec, as_of=None, page=1))
            for _ in range(max(3, min(calls, 10)))
        ]
    finally:
        module.open_bounds = original
    result = runs[-1][0]
    whole = float(np.median([seconds[0] for _, seconds in runs]))
    bounds = float(np.median(spent))
    ratio = whole / max(whole - bounds, 1e-9)
    pairs, coverage = result.bounds.unjudged_pairs, result.bounds.coverage_b
    met = ratio <= 2.0
    print(
        f"  compare's bounds and verdict: {bounds * 1000:.0f} ms of {whole * 1000:.0f} ms "
        f"(median of {len(runs)}; {pairs:,} unjudged pairs in the top k, B judged@k "
        f"{coverage.judged_at_k or 0:.0%}): {ratio:.2f}x the comparison without them; "
        f"target <= 2x {'met' if met else 'NOT met'}"
    )
    record(
        f"compare with bounds and verdict, {len(result.ordered):,} queries, vs without",
        f"{ratio:.2f}x", "<= 2x", met, load_average(),
        median=f"{whole * 1000:.0f} ms",
    )  # fmt: skip
    return met


def _a_past_moment(project) -> str:
    """Halfway through the project's judgement log."""
    events = Judgement.objects.for_project(project).order_by("created_at")
    first, last = events.first().created_at, events.last().created_at
    return (first + (last - first) / 2).strftime("%Y-%m-%dT%H:%M:%SZ")


if __name__ == "__main__":
    sys.exit(main())
