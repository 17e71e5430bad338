"""Every measure of one result list under one metric: NDCG as the pages show it (stored
where current, else computed), and P@k, AP@k, RR@k and ERR@k from the same grades."""

import datetime as dt
from dataclasses import dataclass

import numpy as np

from judgements.models import Project, ResultList
from metrics import selectors, services
from metrics.core import (
    average_precision_batch,
    expected_reciprocal_rank_batch,
    precision_batch,
    reciprocal_rank_batch,
)
from metrics.core.segments import condense, segment_sums, sorted_lookup
from metrics.dashboards.evaluations import Evaluation, list_evaluations
from metrics.dashboards.overview import ListSummary, list_summary
from metrics.registry import MetricSpec

# The lowest consensus grade that P, AP and RR count as relevant: trec_eval's -l 1.
RELEVANT_FROM = 1.0
MEASURES = ("precision", "average_precision", "reciprocal_rank", "err")


@dataclass(frozen=True)
class ResultListMetrics:
    """NDCG of each query (``evaluation``), the mean with its interval (``summary``) and
    the other measures of each query, aligned on ``evaluation.query_ids``."""

    evaluation: Evaluation
    summary: ListSummary
    measures: dict[str, np.ndarray]
    max_grade: int
    relevant_from: float = RELEVANT_FROM

    @property
    def means(self) -> dict[str, float | None]:
        means = {"ndcg": self.summary.mean}
        for name, values in self.measures.items():
            mean = self.evaluation.mean_of(values)
            means[name] = None if mean is None or np.isnan(mean) else mean
        return means


def result_list_metrics(
    project: Project, result_list: ResultList, spec: MetricSpec, *, as_of: dt.datetime | None
) -> ResultListMetrics:
    """The list's NDCG as the dashboards give it, and its other measures as of the same
    moment (a past moment's grades are replayed from the log once, for both)."""
    pairs = None
    if as_of is not None:
        pairs = selectors.pair_grades(project.pk, as_of=as_of, policy=spec.consensus)
    (evaluation,) = list_evaluations(
        project, spec, as_of=as_of, result_lists=[result_list], pairs=pairs
    )
    # The measures look at the top k, but removing unjudged hits first needs them all.
    depth = spec.k if spec.unjudged == "zero" else None
    grades, _ = services.result_list_grades_read(
        result_list, as_of=evaluation.as_of, policy=spec.consensus, depth=depth, pairs=pairs
    )
    computed = binary_and_cascade_measures(grades, spec, max_grade=project.max_grade)
    measures = {
        name: sorted_lookup(grades.query_ids, values, evaluation.query_ids)
        for name, values in computed.items()
    }
    summary = list_summary(spec, evaluation)
    return ResultListMetrics(evaluation, summary, measures, project.max_grade)


def binary_and_cascade_measures(
    grades: selectors.ResultListGrades, spec: MetricSpec, *, max_grade: int
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
