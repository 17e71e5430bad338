"""Comparing two result lists query by query: deltas, wins and losses, significance."""

import datetime as dt
import hashlib
import math
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
from metrics.dashboards.evaluations import Evaluation, list_evaluations
from metrics.registry import MetricSpec
from metrics.sources import HUMAN, Grades, Source, freshness, one_snapshot

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
    # Under a mean over all queries, the compared queries each list did not return: each
    # counts 0 for that list, as trec_eval -c counts a qrels query the run lacks.
    missing_a: int
    missing_b: int
    mean_a: float | None
    mean_b: float | None
    wins: int
    ties: int
    losses: int
    test: RandomisationTest
    interval: ConfidenceInterval
    most_improved: list[DeltaRow]
    most_degraded: list[DeltaRow]
    # Every query in common, worst regression first; ``rows`` is the page asked for.
    ordered: list[DeltaRow]
    page: Page
    rows: list[DeltaRow]

    @property
    def chart(self) -> dict:
        """The scatter plot's data, for ``json_script``: A's value against B's, per query.

        Past ``LABELLED_POINTS`` the tooltips leave out the query text, which would
        otherwise dominate the page's weight.
        """
        labelled = len(self.ordered) <= LABELLED_POINTS
        points = [
            {"x": row.a, "y": row.b, **({"label": row.text} if labelled else {})}
            for row in self.ordered
        ]
        return {"a": self.a.result_list.name, "b": self.b.result_list.name, "points": points}

    @property
    def mean_difference(self) -> float:
        return self.test.mean_difference

    @property
    def as_of(self) -> dt.datetime:
        return self.a.as_of

    @property
    def source(self) -> Source:
        return self.a.source


@one_snapshot
def comparison(
    project: Project,
    a: ResultList,
    b: ResultList,
    spec: MetricSpec,
    *,
    as_of: dt.datetime | None,
    page: int | None,
    page_size: int = PAGE_SIZE,
    grades: Grades = HUMAN,
) -> Comparison:
    """Paired comparison of ``b`` against ``a``, on the consensus of ``grades``.

    The queries compared are those each list's mean counts. Over judged queries: the
    queries both lists returned that have a current grade. Over all queries: every
    query either list returned and every judged query, a query a list did not return
    counting 0 for it (``missing_a``, ``missing_b``), as ``trec_eval -c`` counts a qrels
    query missing from the run; each mean is then the list's own mean over all queries
    (unless one list returned an unjudged query the other did not, a 0 for both).
    """
    fresh = freshness(project, spec, as_of=as_of, grades=grades)
    first, second = list_evaluations(project, spec, fresh=fresh, result_lists=[a, b])
    common = compared_queries(first, second)
    values_a, values_b = first.values_for(common), second.values_for(common)
    if spec.mean_over == "all":
        values_a, values_b = np.nan_to_num(values_a, nan=0.0), np.nan_to_num(values_b, nan=0.0)
    delta = values_b - values_a
    texts = _texts(project, common)
    order = _worst_first(delta, texts)
    ordered = [
        DeltaRow(query, texts[i], a_value, b_value)
        for i, query, a_value, b_value in zip(
            order.tolist(),
            common[order].tolist(),
            values_a[order].tolist(),
            values_b[order].tolist(),
            strict=True,
        )
    ]
    paged = Paginator(ordered, page_size).get_page(page)
    test, interval = significance(values_a, values_b)
    return Comparison(
        a=first,
        b=second,
        queries=len(common),
        only_a=len(np.setdiff1d(first.query_ids, second.query_ids)),
        only_b=len(np.setdiff1d(second.query_ids, first.query_ids)),
        unjudged=_unjudged(first, second, common),
        missing_a=len(np.setdiff1d(common, first.query_ids, assume_unique=True)),
        missing_b=len(np.setdiff1d(common, second.query_ids, assume_unique=True)),
        mean_a=_mean(values_a),
        mean_b=_mean(values_b),
        wins=int(np.count_nonzero(delta > TIE)),
        ties=int(np.count_nonzero(np.abs(delta) <= TIE)),
        losses=int(np.count_nonzero(delta < -TIE)),
        test=test,
        interval=interval,
        most_improved=[row for row in ordered[::-1][:MOST_CHANGED] if row.delta > TIE],
        most_degraded=[row for row in ordered[:MOST_CHANGED] if row.delta < -TIE],
        ordered=ordered,
        page=paged,
        rows=list(paged.object_list),
    )


def compared_queries(first: Evaluation, second: Evaluation) -> np.ndarray:
    """Sorted ids of the queries a comparison pairs (see ``comparison``)."""
    if first.mean_over == "judged":
        return np.intersect1d(first.query_ids[first.counted], second.query_ids[second.counted])
    judged = first.judged_ids if first.judged_ids is not None else np.zeros(0, np.int64)
    return np.union1d(np.union1d(first.query_ids, second.query_ids), judged)


def _mean(values: np.ndarray) -> float | None:
    # Summed exactly, as each list's own mean is (query_mean): over the same queries the
    # two agree to the last bit.
    return math.fsum(values.tolist()) / len(values) if len(values) else None


def _unjudged(first: Evaluation, second: Evaluation, common: np.ndarray) -> int:
    if first.mean_over == "all":
        return 0  # Counted, at 0.
    return len(np.intersect1d(first.query_ids, second.query_ids)) - len(common)


@dataclass(frozen=True)
class Gate:
    """Whether B may replace A: its mean fell by no more than ``max_drop``, and why."""

    max_drop: float
    passed: bool
    reason: str


def comparison_gate(comparison: Comparison, spec: MetricSpec, *, max_drop: float) -> Gate:
    """Pass unless the mean over the queries compared fell by more than ``max_drop``
    (a drop within ``TIE`` of it passes: rounding noise is not a regression)."""
    if comparison.queries == 0:
        reason = "The two result lists have no query in common, so nothing was compared."
        if spec.mean_over == "all":
            reason = "Neither result list returned a query and no query is judged yet."
        return Gate(max_drop, False, reason)
    change = comparison.mean_difference
    moved = (
        f"Mean {spec.label} {'fell' if change < 0 else 'rose'} by {abs(change):.4f} "
        f"({comparison.mean_a:.4f} to {comparison.mean_b:.4f}) over {compared(comparison, spec)}: "
        f"{comparison.losses} lost, {comparison.wins} gained, "
        f"{comparison.ties} tied; p = {comparison.test.p_value:.3g}."
    )
    passed = -change <= max_drop + TIE
    verdict = "within" if passed else "more than"
    return Gate(max_drop, passed, f"{moved} The drop allowed is {max_drop:g}: {verdict} it.")


def compared(comparison: Comparison, spec: MetricSpec) -> str:
    """Which queries the means are over, in a few words."""
    if spec.mean_over == "judged":
        return f"{comparison.queries} queries in common"
    return (
        f"all {comparison.queries} queries (mean over all: A did not return "
        f"{comparison.missing_a}, B did not return {comparison.missing_b}, each counted 0)"
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
