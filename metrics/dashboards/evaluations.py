"""Per-query values of result lists for the dashboards: stored where current, else computed.

Where the values come from
--------------------------
``metrics.sources.freshness``, asked once per request, says: the project's own
metric, now, with nothing stale, is read from the stored series (each query's latest
``MetricPoint``); anything else is computed with
``metrics.refresh.result_list_evaluate`` from the packed grades or, for a past
moment, from the judgement log. Each evaluation carries its source and moment.

A mean over queries counts the queries of the metric's ``mean_over``: those with a
current grade, or all of them and, at 0, the judged queries the list did not return.
"""

import datetime as dt
from dataclasses import dataclass, replace

import numpy as np
from django.db import connection

from config import pgcopy
from judgements.models import Project, ResultList
from metrics import evaluate, selectors
from metrics.core import query_mean
from metrics.core.segments import sorted_lookup
from metrics.registry import MetricSpec
from metrics.sources import Freshness, Source

# Each query's latest stored point: one range read of latest_metric_point_unique per
# list, however long the series has grown. Every column comes back as one bytea of
# its values in query order, packed by PostgreSQL's binary send functions (big-endian)
# and unpacked with numpy.frombuffer: exact to the bit, and three rows to fetch
# instead of tens of thousands of Python tuples.
STORED_SQL = """
SELECT result_list_id, max(as_of),
       string_agg(int8send(query_id), ''::bytea ORDER BY query_id),
       string_agg(float8send(value), ''::bytea ORDER BY query_id),
       string_agg(float8send(coalesce(dcg, 'NaN')), ''::bytea ORDER BY query_id),
       string_agg(float8send(coalesce(idcg, 'NaN')), ''::bytea ORDER BY query_id),
       string_agg(int4send(judged), ''::bytea ORDER BY query_id),
       string_agg(int4send(retrieved), ''::bytea ORDER BY query_id),
       string_agg(int4send(judgements), ''::bytea ORDER BY query_id),
       string_agg(int4send(zero_idcg), ''::bytea ORDER BY query_id)
FROM metrics_latestmetricpoint
WHERE result_list_id = ANY(%(lists)s::bigint[]) AND metric = %(metric)s
GROUP BY result_list_id
"""
STORED_TYPES = (">i8", ">f8", ">f8", ">f8", ">i4", ">i4", ">i4", ">i4")


@dataclass(frozen=True)
class Evaluation:
    """Per-query values of one result list under one metric, aligned on ``query_ids``.

    ``judgements`` counts each query's current grades and ``all_irrelevant`` marks the
    queries whose NDCG is 0 by convention; ``unreturned`` is the number of judged
    queries the list did not return, which a mean over all queries counts at 0, and
    ``judged_ids`` (under a mean over all, else None) the judged queries' ids, which a
    comparison of two lists needs as well.
    """

    result_list: ResultList
    query_ids: np.ndarray
    ndcg: np.ndarray
    dcg: np.ndarray
    idcg: np.ndarray
    judged: np.ndarray
    retrieved: np.ndarray
    judgements: np.ndarray
    all_irrelevant: np.ndarray
    as_of: dt.datetime
    source: Source
    mean_over: str = "judged"  # list_evaluations sets the metric's.
    unreturned: int = 0
    judged_ids: np.ndarray | None = None
    # With weight=traffic: each query's traffic, and that of the unreturned queries.
    weights: np.ndarray | None = None
    unreturned_weight: float = 0.0

    @property
    def stored(self) -> bool:
        return self.source == Source.STORED

    @property
    def counted(self) -> np.ndarray:
        """Mask of the returned queries the mean counts."""
        if self.mean_over == "judged":
            return self.judgements > 0
        return np.ones(len(self.query_ids), dtype=bool)

    @property
    def counted_values(self) -> np.ndarray:
        """The values behind the mean, in query order (zeros for unreturned queries last)."""
        return query_mean(
            self.ndcg, self.judgements, over=self.mean_over, unreturned=self.unreturned
        ).counted

    @property
    def queries(self) -> int:
        """How many queries the mean counts."""
        return int(np.count_nonzero(self.counted)) + (
            self.unreturned if self.mean_over == "all" else 0
        )

    @property
    def queries_judged(self) -> int:
        return int(np.count_nonzero(self.judgements > 0))

    @property
    def mean(self) -> float | None:
        return self.mean_of(self.ndcg)

    def mean_of(self, values: np.ndarray) -> float | None:
        """The mean of per-query ``values`` (aligned on ``query_ids``) over the queries
        that count, as NDCG's mean is taken; None when no query counts."""
        if not self.queries:
            return None
        return query_mean(
            values, self.judgements, over=self.mean_over, unreturned=self.unreturned,
            weights=self.weights, unreturned_weight=self.unreturned_weight,
        ).mean  # fmt: skip

    @property
    def unjudged(self) -> int:
        """Hits within the cut-off without a grade: while any remain, the numbers are
        provisional."""
        return int(self.retrieved.sum() - self.judged.sum())

    @property
    def zero_idcg(self) -> int:
        return int(np.count_nonzero(self.all_irrelevant & self.counted))

    @property
    def coverage(self) -> float | None:
        retrieved = int(self.retrieved.sum())
        return int(self.judged.sum()) / retrieved if retrieved else None

    def values_for(self, query_ids: np.ndarray) -> np.ndarray:
        """NDCG of the given queries, NaN for a query this list did not return."""
        return sorted_lookup(self.query_ids, self.ndcg, query_ids)


def list_evaluations(
    project: Project, spec: MetricSpec, *, fresh: Freshness, result_lists, pairs=None
) -> list[Evaluation]:
    """Evaluate ``result_lists`` (in their order) from the source ``fresh`` names: the
    stored series, or computed (from ``pairs``, the grades as of the moment, when given)."""
    if fresh.stored:
        found = _stored_evaluations(spec, result_lists, fresh)
    else:
        evaluated = evaluate.result_lists_evaluate(result_lists, spec, fresh=fresh, pairs=pairs)
        found = {
            result_list.pk: computed_evaluation(result_list, fresh, *evaluated[result_list.pk])
            for result_list in result_lists
        }
    evaluations = [found[result_list.pk] for result_list in result_lists]
    return counted_as(project, spec, evaluations, fresh=fresh, pairs=pairs)


def counted_as(
    project: Project, spec: MetricSpec, evaluations: list[Evaluation], *, fresh, pairs=None
) -> list[Evaluation]:
    """``evaluations`` with the metric's ``mean_over``: under "all", each also counts at 0
    the judged queries (as of the moment; those of ``pairs`` when given) it did not return."""
    judged = None
    if spec.mean_over == "all" and evaluations:
        if pairs is not None:
            judged = np.unique(pairs.query_ids)
        else:
            judged = selectors.judged_query_ids(project.pk, fresh=fresh)

    def unreturned(evaluation: Evaluation) -> int:
        return 0 if judged is None else evaluate.unreturned_count(judged, evaluation.query_ids)

    counted = [
        replace(e, mean_over=spec.mean_over, unreturned=unreturned(e), judged_ids=judged)
        for e in evaluations
    ]
    return _weighted(project, judged, counted) if spec.weight == "traffic" else counted


def _weighted(project, judged, evaluations: list[Evaluation]) -> list[Evaluation]:
    """With weight=traffic, each query weighs its traffic in the search log (0 without)."""
    from searchlogs.selectors import query_traffic

    ids, traffic = query_traffic(project)

    def weights_of(query_ids):
        return np.nan_to_num(sorted_lookup(ids, traffic, np.asarray(query_ids)), nan=0.0)

    def missing(evaluation: Evaluation) -> float:
        if judged is None:
            return 0.0
        return float(weights_of(np.setdiff1d(judged, evaluation.query_ids)).sum())

    return [replace(e, weights=weights_of(e.query_ids), unreturned_weight=missing(e))
            for e in evaluations]  # fmt: skip


def computed_evaluation(result_list, fresh: Freshness, grades, result) -> Evaluation:
    """The evaluation of ``evaluate.result_list_evaluate``'s (grades, result)."""
    return Evaluation(
        result_list=result_list,
        query_ids=grades.query_ids,
        ndcg=result.ndcg,
        dcg=result.dcg,
        idcg=result.idcg,
        judged=result.judged,
        retrieved=result.retrieved,
        judgements=np.asarray(grades.judgements, dtype=np.int64),
        all_irrelevant=result.all_irrelevant,
        as_of=fresh.moment,
        source=Source.PACKED if fresh.derived else Source.LOG,
    )


def _stored_evaluations(spec, result_lists, fresh: Freshness) -> dict[int, Evaluation]:
    """Each list's latest stored points; a list with none returned no query."""
    params = {"lists": [result_list.pk for result_list in result_lists], "metric": spec.name}
    with connection.cursor() as cursor:
        cursor.execute(STORED_SQL, params)
        rows = {row[0]: row[2:] for row in cursor.fetchall()}
    empty = [b""] * len(STORED_TYPES)
    return {
        result_list.pk: _unpacked(result_list, rows.get(result_list.pk, empty), fresh.moment)
        for result_list in result_lists
    }


def _unpacked(result_list, columns, as_of) -> Evaluation:
    query_ids, ndcg, dcg, idcg, judged, retrieved, judgements, zero_idcg = (
        pgcopy.unpacked(column, kind) for column, kind in zip(columns, STORED_TYPES, strict=True)
    )
    return Evaluation(
        result_list=result_list,
        query_ids=query_ids.astype(np.int64),
        ndcg=ndcg,
        dcg=dcg,
        idcg=idcg,
        judged=judged.astype(np.int64),
        retrieved=retrieved.astype(np.int64),
        judgements=judgements.astype(np.int64),
        all_irrelevant=zero_idcg != 0,
        as_of=as_of,
        source=Source.STORED,
    )


def epoch_ms(moment: dt.datetime) -> int:
    """Milliseconds since the epoch: the x value of Chart.js linear time axes."""
    return int(moment.timestamp() * 1000)
