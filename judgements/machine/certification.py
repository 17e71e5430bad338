"""A machine judge's report card: its grades against the human consensus, and canaries.

Gold pairs are the pairs with a human consensus (the project's policy, human grades
only) that the judge has a current grade on. The numbers come from
``metrics.core.certification``.
"""

import datetime as dt
from dataclasses import dataclass

import numpy as np
from django.db.models import Count, Q, Sum
from django.utils import timezone

from judgements.models import MachineAnswer, MachineCanary, MachineJudge
from metrics import selectors
from metrics.core.certification import Agreement, agreement
from metrics.sources import grades_freshness

# The judge's current answer per pair: its newest event, when a grade.
JUDGE_GRADES_SQL = """
SELECT query_id, document_id, grade FROM (
    SELECT DISTINCT ON (j.query_id, j.document_id) j.query_id, j.document_id, j.kind, j.grade
    FROM judgements_judgement j
    WHERE j.rater_id = %(rater)s AND j.created_at <= %(as_of)s
    ORDER BY j.query_id, j.document_id, j.created_at DESC, j.id DESC
) newest
WHERE kind = 'grade'
"""


@dataclass(frozen=True)
class GoldPairs:
    query_ids: np.ndarray
    document_ids: np.ndarray
    human: np.ndarray  # The human consensus (may fall between grades).
    judged: np.ndarray  # The judge's grade.


def gold_pairs(judge: MachineJudge, *, as_of: dt.datetime | None = None) -> GoldPairs:
    moment = as_of or timezone.now()
    project = judge.project
    fresh = grades_freshness(project.pk, as_of=moment)
    human = selectors.pair_grades(project.pk, fresh=fresh, policy=project.consensus)
    rows = selectors.int64_rows(
        JUDGE_GRADES_SQL, {"rater": judge.rater_id, "as_of": moment}, columns=3
    )
    keys = selectors.pair_keys(rows[:, 0], rows[:, 1])
    found = np.isin(keys, human.keys)
    rows, keys = rows[found], keys[found]
    reference = human.grades[np.searchsorted(human.keys, keys)]
    return GoldPairs(rows[:, 0], rows[:, 1], reference, rows[:, 2].astype(np.float64))


def judge_agreement(judge: MachineJudge, *, as_of: dt.datetime | None = None) -> Agreement:
    gold = gold_pairs(judge, as_of=as_of)
    return agreement(gold.human, gold.judged, judge.project.grade_values)


@dataclass(frozen=True)
class CanaryRate:
    kind: str
    label: str
    asked: int
    passed: int
    failed: int  # Graded above the human consensus: fooled.
    unanswered: int

    @property
    def rate(self) -> float | None:
        answered = self.passed + self.failed
        return self.passed / answered if answered else None


def canary_rates(judge: MachineJudge) -> list[CanaryRate]:
    counts = {
        row["kind"]: row
        for row in judge.canaries.values("kind").annotate(
            asked=Count("id"),
            passes=Count("id", filter=Q(passed=True)),
            fails=Count("id", filter=Q(passed=False)),
        )
    }
    rates = []
    for kind, label in MachineCanary.Kind.choices:
        row = counts.get(kind, {"asked": 0, "passes": 0, "fails": 0})
        unanswered = row["asked"] - row["passes"] - row["fails"]
        rates.append(
            CanaryRate(kind, label, row["asked"], row["passes"], row["fails"], unanswered)
        )
    return rates


@dataclass(frozen=True)
class Spending:
    answers: int
    failures: int
    tokens_in: int
    tokens_out: int
    cost: float
    mean_latency_ms: float | None


def judge_spending(judge: MachineJudge) -> Spending:
    totals = MachineAnswer.objects.filter(judge=judge).aggregate(
        answers=Count("id"),
        failures=Count("id", filter=~Q(error="")),
        tokens_in=Sum("tokens_in"),
        tokens_out=Sum("tokens_out"),
        cost=Sum("cost"),
        latency=Sum("latency_ms"),
    )
    answers = totals["answers"]
    return Spending(
        answers=answers,
        failures=totals["failures"],
        tokens_in=totals["tokens_in"] or 0,
        tokens_out=totals["tokens_out"] or 0,
        cost=float(totals["cost"] or 0),
        mean_latency_ms=(totals["latency"] or 0) / answers if answers else None,
    )
