"""Comparing two result lists query by query: deltas, wins and losses, significance."""

import datetime as dt
import hashlib
from dataclasses import dataclass

import numpy as np
from django.core.cache import cache
from django.core.paginator import Page, Paginator

from judgements.models import Project, ResultList
from metrics.core.stats import (
    ConfidenceInterval,
    RandomisationTest,
    paired_bootstrap_ci,
    paired_randomisation_test,
)
from metrics.dashboards.evaluations import Evaluation, freshest, list_evaluations
from metrics.registry import MetricSpec

RESAMPLES = 10_000
SEED = 0
# Differences smaller than this are rounding noise, not a win or a loss.
TIE = 1e-9
MOST_CHANGED = 10
PAGE_SIZE = 100
# Past this many points the scatter plot's tooltips leave out the query text,
# which would otherwise dominate the page's weight.
LABELLED_POINTS = 2_000


@dataclass(frozen=True)
class DeltaRow:
    query_id: int
    text: str
    a: float
    b: float

    @property
    def delta(self) -> float:
        return self.b - self.a


@dataclass(frozen=True)
class Comparison:
    a: Evaluation
    b: Evaluation
    queries: int
    only_a: int
    only_b: int
    # Queries both lists returned that nobody has graded: left out of a mean over judged ones.
    unjudged: int
    mean_a: float | None
    mean_b: float | None
    wins: int
    ties: int
    losses: int
    test: RandomisationTest
    interval: ConfidenceInterval
    most_improved: list[DeltaRow]
    most_degraded: list[DeltaRow]
    page: Page
    rows: list[DeltaRow]
    chart: dict

    @property
    def mean_difference(self) -> float:
        return self.test.mean_difference

    @property
    def as_of(self) -> dt.datetime | None:
        return freshest([self.a, self.b])[0]

    @property
    def stored(self) -> bool:
        return freshest([self.a, self.b])[1]


def comparison(
    project: Project,
    a: ResultList,
    b: ResultList,
    spec: MetricSpec,
    *,
    as_of: dt.datetime | None,
    page: int | None,
) -> Comparison:
    """Paired comparison of ``b`` against ``a`` over the queries both returned (those
    with a current grade, when the metric's mean is over judged queries)."""
    first, second = list_evaluations(project, spec, as_of=as_of, result_lists=[a, b])
    common = np.intersect1d(first.query_ids[first.counted], second.query_ids[second.counted])
    values_a, values_b = first.values_for(common), second.values_for(common)
    delta = values_b - values_a
    texts = _texts(project, common)
    order = _worst_first(delta, texts)
    paged = Paginator(order, PAGE_SIZE).get_page(page)

    def rows(positions) -> list[DeltaRow]:
        return [
            DeltaRow(int(common[i]), texts[i], float(values_a[i]), float(values_b[i]))
            for i in positions
        ]

    test, interval = significance(values_a, values_b)
    return Comparison(
        a=first,
        b=second,
        queries=len(common),
        only_a=len(np.setdiff1d(first.query_ids, second.query_ids)),
        only_b=len(np.setdiff1d(second.query_ids, first.query_ids)),
        unjudged=len(np.intersect1d(first.query_ids, second.query_ids)) - len(common),
        mean_a=float(values_a.mean()) if len(common) else None,
        mean_b=float(values_b.mean()) if len(common) else None,
        wins=int(np.count_nonzero(delta > TIE)),
        ties=int(np.count_nonzero(np.abs(delta) <= TIE)),
        losses=int(np.count_nonzero(delta < -TIE)),
        test=test,
        interval=interval,
        most_improved=[row for row in rows(order[::-1][:MOST_CHANGED]) if row.delta > TIE],
        most_degraded=[row for row in rows(order[:MOST_CHANGED]) if row.delta < -TIE],
        page=paged,
        rows=rows(paged.object_list),
        chart=_scatter(values_a[order], values_b[order], [texts[i] for i in order], a, b),
    )


def significance(values_a, values_b) -> tuple[RandomisationTest, ConfidenceInterval]:
    """The paired test and the interval of the mean difference, cached by the values.

    With 10,000 resamples over 10,000 queries both take about a second; they are a
    function of the paired values alone (and the fixed resamples and seed), so a
    page shown again over the same values reuses them, and any change of a value
    (a new grade, another metric or moment) is a different key.
    """
    digest = hashlib.sha256(np.stack([values_a, values_b]).tobytes()).hexdigest()
    key = f"metrics:compare:{RESAMPLES}:{SEED}:{digest}"
    found = cache.get(key)
    if found is None:
        found = (
            paired_randomisation_test(values_a, values_b, n_resamples=RESAMPLES, seed=SEED),
            paired_bootstrap_ci(values_a, values_b, n_resamples=RESAMPLES, seed=SEED),
        )
        cache.set(key, found, timeout=24 * 3600)
    return found


def _texts(project, query_ids) -> list[str]:
    texts = dict(project.queries.values_list("id", "text"))
    return [texts[query] for query in query_ids.tolist()]


def _worst_first(delta: np.ndarray, texts: list[str]) -> np.ndarray:
    """Positions by change, worst regression first; ties by text so the order never jumps."""
    folded = [text.casefold() for text in texts]
    by_text = np.array(sorted(range(len(texts)), key=folded.__getitem__), dtype=np.int64)
    text_rank = np.empty(len(texts), dtype=np.int64)
    text_rank[by_text] = np.arange(len(texts))
    return np.lexsort((text_rank, delta))


def _scatter(xs: np.ndarray, ys: np.ndarray, texts: list[str], a, b) -> dict:
    labelled = len(texts) <= LABELLED_POINTS
    points = [{"x": x, "y": y} for x, y in zip(xs.tolist(), ys.tolist(), strict=True)]
    if labelled:
        for point, text in zip(points, texts, strict=True):
            point["label"] = text
    return {"a": a.name, "b": b.name, "points": points}
