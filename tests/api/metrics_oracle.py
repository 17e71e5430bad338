"""The long way to a result list's numbers, for the metrics API's tests to compare with.

Consensus from the ORM (SQL, not numpy), then metrics.core's per-query functions one
query at a time: nothing is shared with the batch path the API takes but the
definitions in metrics.core.
"""

import inspect
import math

import numpy as np

from judgements.models import Hit, Judgement
from metrics.core import (
    average_precision,
    expected_reciprocal_rank,
    ideal_grades,
    ndcg,
    precision,
    reciprocal_rank,
)
from metrics.core.stats import bootstrap_mean_ci
from metrics.registry import MetricSpec
from searchlogs.models import QueryTraffic

# The spec's parameters that core's ndcg() takes by the same name: a parameter added to
# both (the spec and the core) reaches the oracle without a change here.
NDCG_PARAMETERS = [
    name for name in inspect.signature(ndcg).parameters if name in MetricSpec.__dataclass_fields__
]


def consensus(project, spec: MetricSpec, as_of) -> dict[tuple[int, int], float]:
    rows = Judgement.objects.for_project(project).as_of(as_of).consensus(spec.consensus)
    return {(row["query_id"], row["document_id"]): float(row["consensus"]) for row in rows}


def per_query(result_list, spec: MetricSpec, as_of) -> dict[int, dict]:
    """Every query the list returned hits for, by id: NDCG's parts and P, AP, RR, ERR."""
    project = result_list.project
    grade = consensus(project, spec, as_of)
    values = {}
    for query in project.queries.order_by("pk"):
        hits = Hit.objects.filter(result_list=result_list, query=query).order_by("rank")
        if not hits:
            continue
        ranked = [grade.get((query.pk, hit.document_id)) for hit in hits]
        judged = [g for (q, _), g in grade.items() if q == query.pk]
        ideal = ideal_grades(spec.ideal, ranked_grades=ranked, judged_grades=judged)
        options = {name: getattr(spec, name) for name in NDCG_PARAMETERS}
        result = ndcg(ranked, ideal, **options)
        kept = [g for g in ranked if g is not None] if spec.unjudged == "remove" else ranked
        values[query.pk] = {
            "ndcg": result.ndcg,
            "dcg": result.dcg,
            "idcg": result.idcg,
            "judged": result.judged,
            "retrieved": result.retrieved,
            "precision": precision(kept, k=spec.k) if spec.k else None,
            "average_precision": average_precision(kept, judged, k=spec.k),
            "reciprocal_rank": reciprocal_rank(kept, k=spec.k),
            "err": expected_reciprocal_rank(kept, k=spec.k, max_grade=project.max_grade),
            "graded": bool(judged),
        }
    return values


def counts(row: dict, spec: MetricSpec) -> bool:
    """Whether a returned query counts in the mean: with ``mean_over="judged"`` only
    those with a grade, as trec_eval counts the queries of its qrels."""
    return spec.mean_over == "all" or row["graded"]


def unreturned(result_list, spec: MetricSpec, as_of) -> list[dict]:
    """Under ``mean_over="all"``, a zero row for each judged query the list did not
    return, as ``trec_eval -c`` counts the qrels' queries missing from the run."""
    if spec.mean_over != "all":
        return []
    returned = set(Hit.objects.filter(result_list=result_list).values_list("query", flat=True))
    judged = {query for query, _ in consensus(result_list.project, spec, as_of)}
    zero = dict.fromkeys(("ndcg", "average_precision", "reciprocal_rank", "err"), 0.0)
    row = {**zero, "precision": 0.0 if spec.k else None, "judged": 0, "retrieved": 0}
    return [{**row, "idcg": None, "graded": True, "id": query} for query in judged - returned]


def traffic(project) -> dict[int, float]:
    """Each query's traffic kept from the search log (weight=traffic), read row by row."""
    return {row.query_id: float(row.impressions) for row in QueryTraffic.objects.filter(
        project=project
    )}  # fmt: skip


def _mean(values: list[float], weights: list[float] | None = None) -> float | None:
    """The plain mean, or with ``weights`` sum(weight * value) / sum(weight), 0.0 when
    every weight is 0 (metrics.core.aggregate.query_mean's rule)."""
    if not values:
        return None
    if weights is None:
        return float(np.mean(values))
    total = math.fsum(weights)
    return math.fsum(w * v for w, v in zip(weights, values, strict=True)) / total if total else 0.0


def summary(
    values: dict[int, dict], spec: MetricSpec, missing: list[dict] = (), traffic=None
) -> dict:
    """The mean of each measure, coverage, zero-IDCG count and the mean's interval
    (``missing``: the rows of ``unreturned``; ``traffic``: each query's weight when
    ``spec.weight`` is "traffic", 0 for a query without)."""
    ids = [query for query, row in sorted(values.items()) if counts(row, spec)]
    counted = [values[query] for query in ids] + list(missing)
    ids += [row["id"] for row in missing]
    weights = [traffic.get(query, 0.0) for query in ids] if spec.weight == "traffic" else None
    ndcg_values = np.array([row["ndcg"] for row in counted])
    interval = bootstrap_mean_ci(ndcg_values, confidence=0.95, n_resamples=1000, seed=0)
    names = ("ndcg", "average_precision", "reciprocal_rank", "err")
    # No query counts before the first grade (judged mean): then there is no mean.
    means = {name: _mean([row[name] for row in counted], weights) for name in names}
    means["precision"] = _mean([row["precision"] for row in counted], weights) if spec.k else None
    # Coverage is judged@k over every query the list returned, as the overview draws it.
    judged = sum(row["judged"] for row in values.values())
    retrieved = sum(row["retrieved"] for row in values.values())
    # Unjudged hits are the list's, whichever queries count in the mean.
    unjudged = sum(row["retrieved"] - row["judged"] for row in values.values())
    return {
        "queries": len(counted),
        "means": means,
        "coverage": judged / retrieved,
        "unjudged": unjudged,
        "zero_idcg": sum(row["idcg"] == 0.0 for row in counted),
        "interval": (interval.low, interval.high),
    }
