"""Comparing two result lists query by query: deltas, wins and losses, significance."""

import datetime as dt
import hashlib
import math
from dataclasses import dataclass

import numpy as np
from django.core.cache import cache
from django.core.paginator import Page, Paginator

from judgements.models import Project, ResultList
from metrics import evaluate, packed_reads
from metrics.core.bounds import Verdict, difference_bounds, ndcg_ranges, verdict
from metrics.core.segments import positions, sorted_lookup
from metrics.core.stats import (
    ConfidenceInterval,
    RandomisationTest,
    paired_bootstrap_ci,
    paired_randomisation_test,
)
from metrics.dashboards.evaluations import Evaluation, list_evaluations
from metrics.dashboards.labels import measure_label
from metrics.dashboards.measures import list_measures
from metrics.dashboards.unjudged import pooled_count
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
    # Each list's range over every grade its unjudged hits could get (width 0 when the
    # query's top k is judged in both): see ``open_bounds``.
    a_low: float
    a_high: float
    b_low: float
    b_high: float
    # The team's own id of the query ("" without one).
    external_id: str = ""
    # The measures shown beside NDCG: (name, (A's value, B's value)), None where undefined.
    measures: tuple = ()

    @property
    def delta(self) -> float:
        return self.b - self.a

    @property
    def delta_low(self) -> float:
        return self.b_low - self.a_high

    @property
    def delta_high(self) -> float:
        return self.b_high - self.a_low

    @property
    def measure_deltas(self) -> list[float | None]:
        """B - A of each measure shown, in order; None where either is undefined."""
        return [None if a is None or b is None else b - a for _, (a, b) in self.measures]


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
    # What the unjudged hits leave open: the bounds of each mean and of the difference,
    # each list's coverage of the top k, and the decision (see ``open_bounds``).
    bounds: "Bounds"
    verdict: Verdict
    # The means over the compared queries of the measures shown beside NDCG:
    # (name, label, mean A, mean B, B - A), each None where undefined.
    measures: tuple = ()

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
    alpha: float = 0.05,
    measures: tuple[str, ...] = (),
) -> Comparison:
    """Paired comparison of ``b`` against ``a``, on the consensus of ``grades``.

    The queries compared are those each list's mean counts. Over judged queries: the
    queries both lists returned that have a current grade. Over all queries: every
    query either list returned and every judged query, a query a list did not return
    counting 0 for it (``missing_a``, ``missing_b``), as ``trec_eval -c`` counts a qrels
    query missing from the run; each mean is then the list's own mean over all queries
    (unless one list returned an unjudged query the other did not, a 0 for both).
    The ``measures`` (names of ``labels.MEASURES``) are paired over the same queries.
    """
    fresh = freshness(project, spec, as_of=as_of, grades=grades)
    first, second = list_evaluations(project, spec, fresh=fresh, result_lists=[a, b])
    common = compared_queries(first, second)
    values_a, values_b = first.values_for(common), second.values_for(common)
    if spec.mean_over == "all":
        values_a, values_b = np.nan_to_num(values_a, nan=0.0), np.nan_to_num(values_b, nan=0.0)
    delta = values_b - values_a
    texts, qids = _texts(project, common)
    paired = _paired_measures(project, spec, fresh, first, second, common, measures)
    order = _worst_first(delta, texts)
    bounds = open_bounds(project, spec, fresh, first, second, common, values_a, values_b)
    columns = (values_a, values_b, *bounds.per_query)
    ordered = [
        DeltaRow(
            query,
            texts[i],
            *values,
            qids[i],
            tuple((name, (_number(a[i]), _number(b[i]))) for name, (a, b) in paired.items()),
        )
        for i, query, *values in zip(
            order.tolist(),
            common[order].tolist(),
            *(column[order].tolist() for column in columns),
            strict=True,
        )
    ]
    paged = Paginator(ordered, page_size).get_page(page)
    test, interval = significance(values_a, values_b)
    decided = verdict(
        mean_difference=test.mean_difference,
        p_value=test.p_value,
        bounds=(bounds.low, bounds.high),
        interval=(interval.low, interval.high),
        unjudged_pairs=bounds.unjudged_pairs,
        alpha=alpha,
    )
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
        bounds=bounds,
        verdict=decided,
        measures=tuple(
            _measure_means(name, measure_label(spec, name), a, b)
            for name, (a, b) in paired.items()
        ),
    )


def _paired_measures(project, spec, fresh, first, second, common, names) -> dict:
    """Each measure of ``names`` for A and for B over the ``common`` queries (0 for a
    query a list did not return under a mean over all, as NDCG's; else NaN)."""
    found = list_measures(project, spec, [first, second], fresh=fresh, names=names)
    paired = {}
    for name in names:
        a, b = (
            sorted_lookup(evaluation.query_ids, values[name], common)
            for evaluation, values in zip((first, second), found, strict=True)
        )
        if spec.mean_over == "all":
            a = np.where(np.isin(common, first.query_ids), a, 0.0)
            b = np.where(np.isin(common, second.query_ids), b, 0.0)
        paired[name] = (a, b)
    return paired


def _measure_means(name: str, label: str, a: np.ndarray, b: np.ndarray) -> tuple:
    mean_a, mean_b = (_number(_mean(values) if len(values) else np.nan) for values in (a, b))
    delta = None if mean_a is None or mean_b is None else mean_b - mean_a
    return (name, label, mean_a, mean_b, delta)


def _number(value) -> float | None:
    return None if value is None or np.isnan(value) else float(value)


@dataclass(frozen=True)
class Coverage:
    """One list's top k over the compared queries: hits, judged hits, unjudged hits,
    and how many of those are in the raters' queue (the project's pool)."""

    hits: int
    judged: int
    unjudged: int
    queued: int

    @property
    def judged_at_k(self) -> float | None:
        return self.judged / self.hits if self.hits else None


@dataclass(frozen=True)
class Bounds:
    """Bounds of each list's mean and of the mean difference B - A over every grade
    the unjudged hits could get (``metrics.core.bounds``), the distinct unjudged
    (query, document) pairs in the top k of either list, and each list's coverage."""

    low: float
    high: float
    low_a: float
    high_a: float
    low_b: float
    high_b: float
    unjudged_pairs: int
    coverage_a: Coverage
    coverage_b: Coverage
    # Compared queries whose NDCG is 0 (IDCG 0) under both ends, for both lists.
    zero_idcg: int
    # Per compared query (in the comparison's order of ids): low_a, high_a, low_b, high_b.
    per_query: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def open_bounds(project, spec, fresh, first, second, common, values_a, values_b) -> Bounds:
    """What the unjudged hits of the two lists leave open over the compared queries.

    Per query each list's NDCG lies in its exact range over every filling of the
    unjudged hits of both lists (``ndcg_ranges``; a grade for a document only the other
    list returns still joins this list's judged ideal); a query a list did not return
    counts 0 under a mean over all, as in the comparison. Per query B - A lies in
    ``[low_b - high_a, high_b - low_a]`` and the bounds of the mean difference are the
    means of those ends: an outer bound, conservative because it ignores that a
    document both lists return gets one grade in both. Grades for documents neither
    list returns are not among the fillings. Without an unjudged hit in either top k
    the bounds have width 0 and nothing more is read.
    """
    if first.unjudged == 0 and second.unjudged == 0:
        mean_a, mean_b = _mean(values_a) or 0.0, _mean(values_b) or 0.0
        coverage = [_coverage(e, common) for e in (first, second)]
        low = high = (mean_b - mean_a) if len(common) else 0.0
        zero = int(np.count_nonzero((values_a == 0) & (values_b == 0)))
        per_query = (values_a, values_a, values_b, values_b)
        return Bounds(low, high, mean_a, mean_a, mean_b, mean_b, 0, *coverage, zero, per_query)
    read = [_read(first.result_list, spec, fresh), _read(second.result_list, spec, fresh)]
    keys = [_keys(grades, documents) for grades, documents in read]
    unjudged = [
        _unjudged_pairs(grades, documents, key, common, spec.k, project.pk, project.pool_depth)
        for (grades, documents), key in zip(read, keys, strict=True)
    ]
    ranges = []
    for side, (grades, _) in enumerate(read):
        other = unjudged[1 - side][2]
        others = _others(grades, keys[side], other)
        found = ndcg_ranges(
            grades.ranked_grades, grades.offsets, grades.judged_grades, grades.judged_offsets,
            k=spec.k, grades=range(project.max_grade + 1), gain=spec.gain,
            discount=spec.discount, ideal=spec.ideal, ideal_depth=spec.ideal_depth,
            others=others,
        )  # fmt: skip
        low = sorted_lookup(grades.query_ids, found.low, common)
        high = sorted_lookup(grades.query_ids, found.high, common)
        ranges.append((np.nan_to_num(low, nan=0.0), np.nan_to_num(high, nan=0.0)))
    (low_a, high_a), (low_b, high_b) = ranges
    low, high = difference_bounds(low_a, high_a, low_b, high_b)
    pairs = np.union1d(unjudged[0][2], unjudged[1][2])
    coverage = [
        _coverage(evaluation, common, unjudged_keys=found[2], hits=found[3], queued=found[4])
        for evaluation, found in zip((first, second), unjudged, strict=True)
    ]
    zero = int(np.count_nonzero((high_a == 0) & (high_b == 0)))
    return Bounds(
        low, high, _mean(low_a) or 0.0, _mean(high_a) or 0.0, _mean(low_b) or 0.0,
        _mean(high_b) or 0.0, len(pairs), *coverage, zero, (low_a, high_a, low_b, high_b),
    )  # fmt: skip


def _read(result_list, spec, fresh):
    """The list's grades and documents, laid out alike (read again should a write
    change the hits in between)."""
    depth = evaluate.read_depth(spec)
    for _ in range(3):
        grades, _ = evaluate.result_list_evaluate(result_list, spec, fresh=fresh)
        documents = packed_reads.ranked_documents(result_list.pk, depth=depth)
        same = np.array_equal(documents.query_ids, grades.query_ids)
        if same and np.array_equal(documents.offsets, grades.offsets):
            return grades, documents
    raise RuntimeError("The result list's hits kept changing while they were read.")


SHIFT = np.int64(1) << np.int64(32)


def _keys(grades, documents) -> np.ndarray:
    """One int64 per hit naming its (query, document) pair."""
    queries = np.repeat(grades.query_ids, np.diff(grades.offsets)).astype(np.int64)
    return queries * SHIFT + documents.document_ids.astype(np.int64)


def _unjudged_pairs(grades, documents, keys, common, k, project_id: int, pool_depth: int):
    """Unjudged hits in the top k of the compared queries: their queries, documents,
    pair keys (distinct, sorted), the top k hits counted, and how many are queued.

    Every hit within the pool depth is in the pool (as the unjudged work counts them);
    only deeper ones are looked up, since another list may rank them within it."""
    rank = positions(grades.offsets)
    queries = np.repeat(grades.query_ids, np.diff(grades.offsets))
    within = (rank < (k if k is not None else np.inf)) & np.isin(queries, common)
    missing = within & np.isnan(grades.ranked_grades)
    deep = missing & (rank >= pool_depth)
    queued = int(np.count_nonzero(missing & ~deep))
    queued += pooled_count(project_id, queries[deep], documents.document_ids[deep])
    return (
        queries[missing],
        documents.document_ids[missing],
        np.unique(keys[missing]),
        int(np.count_nonzero(within)),
        queued,
    )


def _others(grades, keys, other_unjudged: np.ndarray) -> np.ndarray:
    """Per query of ``grades``: the other list's unjudged documents it does not return."""
    # other_unjudged is sorted and distinct (np.unique): look each up in this list's keys.
    ordered = np.sort(keys)
    at = np.minimum(np.searchsorted(ordered, other_unjudged), max(len(ordered) - 1, 0))
    extra = other_unjudged[ordered[at] != other_unjudged] if len(ordered) else other_unjudged
    queries = extra // SHIFT
    at = np.searchsorted(grades.query_ids, queries)
    counts = np.zeros(len(grades.query_ids), np.int64)
    found = (
        (at < len(grades.query_ids))
        & (grades.query_ids[np.minimum(at, len(grades.query_ids) - 1)] == queries)
        if len(grades.query_ids)
        else np.zeros(0, bool)
    )
    np.add.at(counts, at[found], 1)
    return counts


def _coverage(evaluation, common, *, unjudged_keys=None, hits=None, queued=0) -> Coverage:
    if hits is None:
        mask = np.isin(evaluation.query_ids, common)
        hits = int(evaluation.retrieved[mask].sum())
        judged = int(evaluation.judged[mask].sum())
        return Coverage(hits, judged, hits - judged, 0)
    unjudged = len(unjudged_keys)
    return Coverage(hits, hits - unjudged, unjudged, queued)


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


def _texts(project, query_ids) -> tuple[list[str], list[str]]:
    """The queries' texts and the team's own ids ("" without one), in ``query_ids`` order."""
    names = {query: (text, qid) for query, text, qid in project.queries.values_list(
        "id", "text", "external_id")}  # fmt: skip
    found = [names[query] for query in query_ids.tolist()]
    return [text for text, _ in found], [qid for _, qid in found]


def _worst_first(delta: np.ndarray, texts: list[str]) -> np.ndarray:
    """Positions by change, worst regression first; ties by text so the order never jumps."""
    folded = [text.casefold() for text in texts]
    by_text = np.array(sorted(range(len(texts)), key=folded.__getitem__), dtype=np.int64)
    text_rank = np.empty(len(texts), dtype=np.int64)
    text_rank[by_text] = np.arange(len(texts))
    return np.lexsort((text_rank, delta))
