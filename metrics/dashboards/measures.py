"""P@k, AP@k, RR@k and ERR@k beside NDCG: the measures the API computes
(``binary_and_cascade_measures``), for the dashboards' tables and CSV files too."""

import numpy as np

from metrics import evaluate, packed_reads
from metrics.core import (
    average_precision_batch,
    expected_reciprocal_rank_batch,
    precision_batch,
    reciprocal_rank_batch,
)
from metrics.core.segments import (
    condense,
    offsets_from_lengths,
    positions,
    segment_sums,
    sorted_lookup,
)
from metrics.registry import MetricSpec

# The lowest consensus grade that P, AP and RR count as relevant: trec_eval's -l 1.
RELEVANT_FROM = 1.0


def binary_and_cascade_measures(
    grades: packed_reads.ResultListGrades, spec: MetricSpec, *, max_grade: int
) -> dict[str, np.ndarray]:
    """P@k, AP@k, RR@k and ERR@k of every query of ``grades``, with trec_eval's
    definitions (AP@k is its map_cut.k; without k, all four look at whole lists).

    Relevant means a consensus grade of at least ``RELEVANT_FROM``; AP divides by the
    query's relevant judged documents. With ``spec.unjudged == "remove"`` unjudged hits
    leave the lists first (trec_eval on condensed lists). P is NaN without a cut-off,
    ERR NaN on a scale whose top grade is not positive. Gain, discount and the ideal
    are NDCG's parameters and change none of these.
    """
    ranked, offsets = grades.ranked_grades, grades.offsets
    if spec.unjudged == "remove":
        ranked, offsets = condense(ranked, offsets)
    if spec.k is not None:
        # Only the top k counts: whole lists (read for NDCG's returned ideal or to remove
        # unjudged hits) are cut first, which changes no value.
        ranked = ranked[positions(offsets) < spec.k]
        offsets = offsets_from_lengths(np.minimum(np.diff(offsets), spec.k))
    relevant = (grades.judged_grades >= RELEVANT_FROM).astype(np.float64)
    n_relevant = segment_sums(relevant, grades.judged_offsets)
    unknown = np.full(len(offsets) - 1, np.nan)
    return {
        "precision": (
            precision_batch(ranked, offsets, k=spec.k, threshold=RELEVANT_FROM)
            if spec.k
            else unknown
        ),
        "average_precision": average_precision_batch(
            ranked, offsets, n_relevant, k=spec.k, threshold=RELEVANT_FROM
        ),
        "reciprocal_rank": reciprocal_rank_batch(
            ranked, offsets, k=spec.k, threshold=RELEVANT_FROM
        ),
        "err": (
            expected_reciprocal_rank_batch(ranked, offsets, k=spec.k, max_grade=max_grade)
            if max_grade > 0
            else unknown
        ),
    }


def list_measures(project, spec: MetricSpec, evaluations, *, fresh, pairs=None, names):
    """The measures ``names`` of each evaluation's queries, as ``{name: values}`` aligned
    on its ``query_ids`` (NaN for a query the grades' read did not return), from one read
    of each list's grades; an empty dict per list when no measure is asked for."""
    if not names:
        return [{} for _ in evaluations]
    lists = [evaluation.result_list for evaluation in evaluations]
    evaluated = evaluate.result_lists_evaluate(lists, spec, fresh=fresh, pairs=pairs)
    found = []
    for evaluation in evaluations:
        grades, _ = evaluated[evaluation.result_list.pk]
        measures = binary_and_cascade_measures(grades, spec, max_grade=project.max_grade)
        found.append(
            {
                name: sorted_lookup(grades.query_ids, measures[name], evaluation.query_ids)
                for name in names
            }
        )
    return found


def query_measures(spec: MetricSpec, ranked, judged, *, max_grade: int) -> dict[str, float]:
    """The measures of one query from its consensus grades in rank order (None:
    unjudged) and every judged grade of it, by the same batch functions as a list's."""
    ranked = np.array([np.nan if grade is None else grade for grade in ranked], np.float64)
    judged = np.asarray(judged, dtype=np.float64)
    grades = packed_reads.ResultListGrades(
        query_ids=np.zeros(1, np.int64),
        ranked_grades=ranked,
        offsets=np.array([0, len(ranked)]),
        judged_grades=judged,
        judged_offsets=np.array([0, len(judged)]),
        judgements=np.array([len(judged)]),
    )
    measures = binary_and_cascade_measures(grades, spec, max_grade=max_grade)
    return {name: float(values[0]) for name, values in measures.items()}
