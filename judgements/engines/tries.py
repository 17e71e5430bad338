"""A try: a template's ranking evaluated against the grades of now, beside a baseline,
without storing a result list unless the analyst keeps it.

The numbers come from the functions the dashboards use: the freshness rule
(``metrics.sources``), the consensus of each pair (``metrics.selectors.pair_grades``),
the ranking laid out as any result list's (``metrics.packed_reads.graded``), NDCG of the
project's metric (``metrics.evaluate.ndcg_of``), the mean over the queries its
``mean_over`` counts (``metrics.dashboards.evaluations``) and the paired test of the
comparison page (``metrics.dashboards.compare``).
"""

from dataclasses import dataclass

import numpy as np
from django.core.exceptions import ValidationError
from django.db import transaction

from judgements.engines.capture import result_list_store
from judgements.models import Capture, Document, ResultList
from metrics import evaluate, packed_reads, selectors, sources
from metrics.core.stats import RandomisationTest
from metrics.dashboards.compare import TIE, significance
from metrics.dashboards.evaluations import (
    Evaluation,
    computed_evaluation,
    counted_as,
    list_evaluations,
)
from metrics.registry import MetricSpec, project_spec


@dataclass(frozen=True)
class TryRow:
    query_id: int
    text: str
    value: float
    baseline: float | None
    unjudged: int

    @property
    def delta(self) -> float | None:
        return None if self.baseline is None else self.value - self.baseline


@dataclass(frozen=True)
class TryReport:
    capture: Capture
    spec: MetricSpec
    evaluation: Evaluation
    baseline: Evaluation | None
    rows: list[TryRow]
    unjudged: int  # Hits within the cut-off without a grade.
    unjudged_pairs: list[tuple[int, str]]
    wins: int
    ties: int
    losses: int
    test: RandomisationTest | None
    mean_baseline: float | None  # Over the queries both returned and the mean counts.
    mean_paired: float | None  # The try's mean over the same queries.

    @property
    def mean(self) -> float | None:
        return self.evaluation.mean

    @property
    def difference(self) -> float | None:
        if self.mean_paired is None or self.mean_baseline is None:
            return None
        return self.mean_paired - self.mean_baseline

    @property
    def source(self):
        return self.evaluation.source

    @property
    def p_value(self) -> float | None:
        return None if self.test is None else self.test.p_value

    # What ``metrics.dashboards.compare.comparison_gate`` reads of a comparison, so that
    # a gate over a try applies the very rule of the comparison page's gate.
    @property
    def queries(self) -> int:
        return self.wins + self.ties + self.losses

    @property
    def mean_a(self) -> float | None:
        return self.mean_baseline

    @property
    def mean_b(self) -> float | None:
        return self.mean_paired

    @property
    def mean_difference(self) -> float:
        return self.difference or 0.0

    # A try is compared over the queries both lists returned: none is missing from either.
    missing_a = missing_b = 0


def try_evaluate(capture: Capture, spec: MetricSpec | None = None) -> TryReport:
    """The try's NDCG per query and mean, against its baseline when it has one."""
    project = capture.endpoint.project
    spec = spec or project_spec(project)
    fresh = sources.freshness(project, spec, as_of=None)
    pairs = selectors.pair_grades(project.pk, fresh=fresh, policy=spec.consensus)
    ranked, keys = _ranked(project, capture.ranking)
    grades = packed_reads.graded(ranked, pairs)
    result = evaluate.ndcg_of(grades, spec)
    shown = ResultList(project=project, name=capture.name)
    [evaluation] = counted_as(
        project,
        spec,
        [computed_evaluation(shown, fresh, grades, result)],
        fresh=fresh,
        pairs=pairs,
    )
    baseline = None
    if capture.baseline is not None:
        [baseline] = list_evaluations(
            project, spec, fresh=fresh, result_lists=[capture.baseline], pairs=pairs
        )
    unjudged = _unjudged(grades, keys, spec.k)
    return _report(capture, spec, evaluation, baseline, unjudged)


def _ranked(project, ranking: list):
    """The ranking as ``RankedDocuments`` (queries in id order); documents the project
    does not have yet are id 0, which no grade names: unjudged."""
    ordered = sorted(ranking, key=lambda item: item[0])
    wanted = {hit["id"] for _, hits in ordered for hit in hits}
    ids = dict(
        Document.objects.filter(project=project, external_id__in=wanted).values_list(
            "external_id", "id"
        )
    )
    keys = [hit["id"] for _, hits in ordered for hit in hits]
    lengths = [len(hits) for _, hits in ordered]
    ranked = packed_reads.RankedDocuments(
        query_ids=np.array([query for query, _ in ordered], dtype=np.int64),
        offsets=np.r_[0, np.cumsum(lengths)].astype(np.int64),
        document_ids=np.array([ids.get(key, 0) for key in keys], dtype=np.int64),
    )
    return ranked, keys


def _unjudged(grades, keys: list[str], k: int) -> list[tuple[int, str]]:
    """(query id, document external id) of every hit within the top ``k`` without a grade."""
    found = []
    for position, query_id in enumerate(grades.query_ids.tolist()):
        start, end = grades.offsets[position], grades.offsets[position + 1]
        for i in range(start, min(end, start + k)):
            if np.isnan(grades.ranked_grades[i]):
                found.append((query_id, keys[i]))
    return found


def _report(capture, spec, evaluation, baseline, unjudged) -> TryReport:
    project = capture.endpoint.project
    texts = dict(project.queries.values_list("id", "text"))
    counted = evaluation.query_ids[evaluation.counted]
    before = (
        baseline.values_for(counted) if baseline is not None else np.full(len(counted), np.nan)
    )
    values = evaluation.values_for(counted)
    per_query = {}
    for query_id, _ in unjudged:
        per_query[query_id] = per_query.get(query_id, 0) + 1
    rows = [
        TryRow(
            query,
            texts.get(query, ""),
            value,
            None if np.isnan(old) else old,
            per_query.get(query, 0),
        )
        for query, value, old in zip(
            counted.tolist(), values.tolist(), before.tolist(), strict=True
        )
    ]
    rows.sort(key=lambda row: (row.delta is None, row.delta or 0.0, row.text.casefold()))
    paired = ~np.isnan(before)
    delta = values[paired] - before[paired]
    test = significance(before[paired], values[paired])[0] if paired.any() else None
    return TryReport(
        capture=capture,
        spec=spec,
        evaluation=evaluation,
        baseline=baseline,
        rows=rows,
        unjudged=len(unjudged),
        unjudged_pairs=unjudged,
        wins=int(np.count_nonzero(delta > TIE)),
        ties=int(np.count_nonzero(np.abs(delta) <= TIE)),
        losses=int(np.count_nonzero(delta < -TIE)),
        test=test,
        mean_baseline=float(before[paired].mean()) if paired.any() else None,
        mean_paired=float(values[paired].mean()) if paired.any() else None,
    )


@transaction.atomic
def try_keep(*, capture: Capture, name: str = "") -> ResultList:
    """Store a try as a result list (its hits within the pool depth join the raters'
    queue, as any list's); returns it."""
    capture = (
        Capture.objects.select_for_update().select_related("endpoint__project").get(pk=capture.pk)
    )
    if not capture.is_try or capture.status != Capture.Status.DONE:
        raise ValidationError("Only a finished try can be kept.")
    if capture.result_list_id is not None:
        raise ValidationError(f'This try is kept already, as "{capture.result_list.name}".')
    name = (name or capture.name).strip()
    if capture.endpoint.project.result_lists.filter(name=name).exists():
        raise ValidationError(f'The project has a result list named "{name}" already.')
    result_list_store(capture=capture, ranking=capture.ranking, name=name)
    return capture.result_list
