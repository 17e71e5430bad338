"""Rater agreement: Krippendorff's alpha, each rater's deviation from the consensus, disputes."""

import datetime as dt
from dataclasses import dataclass, field

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection, models
from django.utils import timezone

from judgements import query_log
from judgements.models import Document, PairGrade, Project, QueuePair
from metrics.core.agreement import krippendorff_alpha, krippendorff_alpha_by_group
from metrics.core.consensus import consensus
from metrics.core.segments import segment_ids
from metrics.log_replay import postgres_time
from metrics.sources import Source

# Grades this far apart on one pair mean the raters read the guidelines differently.
DISPUTE_SPREAD = 2
SHOWN = 200


@dataclass(frozen=True)
class RaterRow:
    username: str
    grades: int
    compared: int
    mean_absolute_deviation: float | None
    distribution: list[int]


@dataclass(frozen=True)
class QueryAgreement:
    query_id: int
    text: str
    pairs: int
    alpha: float | None


@dataclass(frozen=True)
class DisputedPair:
    query_id: int
    query_text: str
    document: Document
    grades: list[int | None]
    spread: int
    # Grades still wanted after an analyst sent the pair back to the queue; 0 if none.
    waiting: int = 0


@dataclass(frozen=True)
class RatersReport:
    as_of: dt.datetime
    policy: str
    scale: list[int]
    alpha: float | None
    grades: int
    pairs: int
    shared_pairs: int
    raters: list[RaterRow]
    queries: list[QueryAgreement]
    queries_with_alpha: int
    rater_names: list[str]
    disputed: list[DisputedPair]
    disputed_total: int
    # Pairs can be sent back to the queue only from the present state, not a past one.
    present: bool = True
    # How often each rater skipped and answered "can't tell" (rater_answer_counts).
    answer_counts: list["RaterAnswerCounts"] = field(default_factory=list)
    # Every rater's grades are read from the judgement log as of the moment, always.
    source = Source.LOG

    @property
    def chart(self) -> dict:
        """Grade counts per rater, for ``json_script``."""
        return {
            "grades": self.scale,
            "raters": [{"label": row.username, "counts": row.distribution} for row in self.raters],
        }


@dataclass(frozen=True)
class CurrentGrades:
    """Every rater's current grade, sorted by pair; ``offsets`` delimit the pairs."""

    queries: np.ndarray
    documents: np.ndarray
    raters: np.ndarray
    grades: np.ndarray
    offsets: np.ndarray

    @property
    def pair_of_grade(self) -> np.ndarray:
        return segment_ids(self.offsets)

    @property
    def pair_starts(self) -> np.ndarray:
        return self.offsets[:-1]


def current_grades(project: Project, *, as_of: dt.datetime) -> CurrentGrades:
    """Every human rater's current grade as of ``as_of``, by (query, document, rater):
    the spans of the packed log that hold the moment (``judgements.query_log``; the
    rule of ``Judgement.objects.current()``), one read of the project's rows."""
    found = query_log.spans(project.pk).current(postgres_time(as_of))
    order = np.lexsort((found.raters, found.keys))
    keys = found.keys[order]
    queries, documents = keys >> 32, keys & 0xFFFFFFFF
    new_pair = np.r_[True, keys[1:] != keys[:-1]]
    starts = np.flatnonzero(new_pair) if len(keys) else np.zeros(0, dtype=np.int64)
    offsets = np.r_[starts, len(keys)].astype(np.int64)
    raters = found.raters[order].astype(np.int64)
    return CurrentGrades(queries, documents, raters, found.grades[order].astype(np.int64), offsets)


def raters_report(project: Project, *, policy: str, as_of: dt.datetime | None) -> RatersReport:
    """Agreement of the project's raters on their current grades as of ``as_of``."""
    moment = as_of or timezone.now()
    current = current_grades(project, as_of=moment)
    values = current.grades.astype(np.float64)
    sizes = np.diff(current.offsets)
    texts = dict(project.queries.values_list("id", "text"))
    names = dict(get_user_model().objects.values_list("id", "username"))
    queries = _query_agreement(current, values, texts)
    disputed, disputed_total = _disputes(current, names, texts)
    raters = _rater_rows(current, values, policy, names, project.grade_values)
    return RatersReport(
        as_of=moment,
        policy=policy,
        scale=project.grade_values,
        alpha=_or_none(krippendorff_alpha(values, current.offsets, "ordinal")),
        grades=len(values),
        pairs=len(sizes),
        shared_pairs=int(np.count_nonzero(sizes >= 2)),
        raters=raters,
        queries=queries[:SHOWN],
        queries_with_alpha=len(queries),
        rater_names=[row.username for row in raters],
        disputed=disputed,
        disputed_total=disputed_total,
        present=as_of is None,
        answer_counts=rater_answer_counts(project, as_of=moment),
    )


@dataclass(frozen=True)
class RaterAnswerCounts:
    """How often one rater put pairs off or could not judge them."""

    username: str
    skips: int  # Presses of Skip ("judge later"), each counted.
    skipped_pairs: int  # Distinct pairs those skips were on.
    cant_tell: int  # Pairs whose current answer by this rater is "can't tell".


RATER_ANSWER_COUNTS_SQL = """
WITH skips AS (
    SELECT skip.rater_id, count(*) AS skips,
           count(DISTINCT (skip.query_id, skip.document_id)) AS pairs
    FROM judgements_queueskip skip
    WHERE skip.project_id = %(project)s AND skip.skipped_at <= %(as_of)s
    GROUP BY skip.rater_id
),
cant_tell AS (
    -- Can't-tell events no later event of the same rater on the same pair replaced:
    -- few events, each checked with a probe of judgement_latest_idx.
    SELECT event.rater_id, count(*) AS pairs
    FROM judgements_judgement event
    JOIN judgements_query query ON query.id = event.query_id
    WHERE query.project_id = %(project)s AND event.kind = 'cant_tell'
      AND event.source <> 'machine'
      AND event.created_at <= %(as_of)s
      AND NOT EXISTS (
          SELECT FROM judgements_judgement later
          WHERE later.query_id = event.query_id AND later.document_id = event.document_id
            AND later.rater_id = event.rater_id AND later.created_at <= %(as_of)s
            AND (later.created_at, later.id) > (event.created_at, event.id))
    GROUP BY event.rater_id
)
SELECT account.username, coalesce(skips.skips, 0), coalesce(skips.pairs, 0),
       coalesce(cant_tell.pairs, 0)
FROM (SELECT rater_id FROM skips UNION SELECT rater_id FROM cant_tell) rater
JOIN auth_user account ON account.id = rater.rater_id
LEFT JOIN skips ON skips.rater_id = rater.rater_id
LEFT JOIN cant_tell ON cant_tell.rater_id = rater.rater_id
ORDER BY account.username
"""


def rater_answer_counts(
    project: Project, *, as_of: dt.datetime | None = None
) -> list[RaterAnswerCounts]:
    """Each rater's skips and can't-tell answers in ``project`` as of ``as_of`` (default
    now), by username; raters with neither are left out."""
    params = {"project": project.pk, "as_of": as_of or timezone.now()}
    with connection.cursor() as cursor:
        cursor.execute(RATER_ANSWER_COUNTS_SQL, params)
        return [RaterAnswerCounts(*row) for row in cursor.fetchall()]


def _rater_rows(current, values, policy, names, scale) -> list[RaterRow]:
    """Grades, deviation from the consensus (on shared pairs only) and grade counts per rater."""
    agreed = consensus(values, current.offsets, policy)[current.pair_of_grade]
    shared = np.diff(current.offsets)[current.pair_of_grade] >= 2
    rows = []
    for rater in np.unique(current.raters):
        mine = current.raters == rater
        compared = mine & shared
        deviation = np.abs(values[compared] - agreed[compared])
        rows.append(
            RaterRow(
                username=names.get(int(rater), str(rater)),
                grades=int(mine.sum()),
                compared=int(compared.sum()),
                mean_absolute_deviation=float(deviation.mean()) if len(deviation) else None,
                distribution=[int(np.count_nonzero(current.grades[mine] == g)) for g in scale],
            )
        )
    return sorted(rows, key=lambda row: row.username)


def _query_agreement(current, values, texts) -> list[QueryAgreement]:
    """Alpha within each query's pairs, lowest first; queries without shared pairs left out."""
    query_ids, group = np.unique(current.queries[current.pair_starts], return_inverse=True)
    alphas = krippendorff_alpha_by_group(values, current.offsets, group, n_groups=len(query_ids))
    shared = np.bincount(group, weights=np.diff(current.offsets) >= 2, minlength=len(query_ids))
    rows = [
        QueryAgreement(int(query), texts.get(int(query), "?"), int(count), _or_none(alpha))
        for query, count, alpha in zip(query_ids, shared, alphas, strict=True)
        if count > 0
    ]
    return sorted(rows, key=lambda row: (row.alpha is None, row.alpha or 0.0, row.text))


def _disputes(current, names, texts) -> tuple[list[DisputedPair], int]:
    """Pairs whose current grades are ``DISPUTE_SPREAD`` or more apart, widest first."""
    if len(current.grades) == 0:
        return [], 0
    starts = current.pair_starts
    spread = np.maximum.reduceat(current.grades, starts) - np.minimum.reduceat(
        current.grades, starts
    )
    disputed = np.flatnonzero(spread >= DISPUTE_SPREAD)
    shown = disputed[np.argsort(-spread[disputed], kind="stable")][:SHOWN]
    documents = Document.objects.in_bulk([int(current.documents[starts[p]]) for p in shown])
    columns = sorted(names.get(int(rater), str(rater)) for rater in np.unique(current.raters))
    waiting = _waiting(current.queries[starts[shown]], current.documents[starts[shown]])
    rows = []
    for pair in shown:
        span = slice(current.offsets[pair], current.offsets[pair + 1])
        given = {
            names.get(int(rater), str(rater)): int(grade)
            for rater, grade in zip(current.raters[span], current.grades[span], strict=True)
        }
        query_id, document_id = (
            int(current.queries[starts[pair]]),
            int(current.documents[starts[pair]]),
        )
        rows.append(
            DisputedPair(
                query_id=query_id,
                query_text=texts.get(query_id, "?"),
                document=documents[document_id],
                grades=[given.get(name) for name in columns],
                spread=int(spread[pair]),
                waiting=waiting.get((query_id, document_id), 0),
            )
        )
    return rows, len(disputed)


def _waiting(queries: np.ndarray, documents: np.ndarray) -> dict[tuple[int, int], int]:
    """Grades still wanted for each of these pairs that an analyst sent back to the queue."""
    shown = set(zip(queries.tolist(), documents.tolist(), strict=True))
    requested = QueuePair.objects.filter(
        query_id__in={query for query, _ in shown}, wanted__gt=0, needed__gt=0
    ).values_list("query_id", "document_id", "needed")
    return {(q, d): needed for q, d, needed in requested if (q, d) in shown}


def disputed_pairs(project: Project) -> list[tuple[int, int]]:
    """(query id, document id) of every pair whose current grades are ``DISPUTE_SPREAD``
    or more apart now, from the trigger-kept current grades."""
    pairs = PairGrade.objects.filter(
        project=project, highest__gte=models.F("lowest") + DISPUTE_SPREAD
    )
    return list(pairs.order_by("query_id", "document_id").values_list("query_id", "document_id"))


def _or_none(value: float) -> float | None:
    return None if np.isnan(value) else float(value)
