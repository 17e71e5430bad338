"""Current answers and pair grades: every rater's newest event per pair, recomputed
from the log, and ``judgements_pairgrade`` read back; floats compared by their bits."""

import numpy as np

from judgements.models import (
    Judgement,
    PairGrade,
)
from metrics.core.consensus import consensus, policy_names


class Bits(float):
    """A float that equals another only bit for bit (so 0.0 and -0.0 differ), and
    prints as a float."""

    def __eq__(self, other) -> bool:
        return isinstance(other, float) and _bits(self) == _bits(other)

    def __ne__(self, other) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(_bits(self))


def _bits(value: float) -> int:
    return int(np.float64(value).view(np.int64))


def bits(value) -> Bits | None:
    """A float compared bit for bit (None for None or NaN)."""
    if value is None or np.isnan(value):
        return None
    return Bits(value)


def packed(values, kind: str) -> bytes:
    return np.asarray(values, dtype=kind).tobytes()


def current_answers(project) -> dict[tuple[int, int], dict[int, tuple]]:
    """Each rater's newest event per pair (their current answer), as (kind, grade,
    created_at) by rater id, per (query id, document id)."""
    events = (
        Judgement.objects.for_project(project)
        .current()
        .values_list("query_id", "document_id", "rater_id", "kind", "grade", "created_at")
    )
    answers: dict = {}
    for query, document, rater, kind, grade, created_at in events.iterator(chunk_size=20_000):
        answers.setdefault((query, document), {})[rater] = (kind, grade, created_at)
    return answers


def pair_consensus(answers: dict) -> dict[tuple[int, int], tuple]:
    """Each pair's current grades: (count, lowest, highest, consensus by policy, in the
    order of ``policy_names()``)."""
    pairs = list(answers)
    grades = [sorted(grade for grade, _ in _graded(answers[pair])) for pair in pairs]
    offsets = np.concatenate([[0], np.cumsum([len(each) for each in grades])]).astype(np.int64)
    flat = np.fromiter((g for each in grades for g in each), dtype=np.float64, count=offsets[-1])
    by_policy = [consensus(flat, offsets, policy) for policy in policy_names()]
    return {
        pair: (
            len(grades[n]),
            grades[n][0] if grades[n] else None,
            grades[n][-1] if grades[n] else None,
            *[float(values[n]) for values in by_policy],
        )
        for n, pair in enumerate(pairs)
    }


def _graded(answers: dict) -> list[tuple[int, int]]:
    """A pair's current grades as (grade, rater), sorted by grade then rater: the order
    of judgements_pairgrade's aligned arrays."""
    return sorted((grade, rater) for rater, (kind, grade, _) in answers.items() if kind == "grade")


# judgements_pairgrade


def expected_pair_grades(project, answers=None) -> dict:
    """Each pair's (count, lowest, highest, grades sorted, their raters aligned)."""
    answers = current_answers(project) if answers is None else answers
    expected = {}
    for pair, pair_answers in answers.items():
        graded = _graded(pair_answers)
        grades = tuple(grade for grade, _ in graded)
        expected[pair] = (
            len(grades),
            grades[0] if grades else None,
            grades[-1] if grades else None,
            grades,
            tuple(rater for _, rater in graded),
        )
    return expected


def stored_pair_grades(project) -> dict:
    rows = PairGrade.objects.filter(project=project).values_list(
        "query_id", "document_id", "graded", "lowest", "highest", "grades", "raters"
    )
    return {
        (query, document): (graded, lowest, highest, tuple(grades), tuple(raters))
        for query, document, graded, lowest, highest, grades, raters in rows.iterator(
            chunk_size=20_000
        )
    }
