"""Synthetic projects for benchmarks: rankings and judgement events as numpy arrays.

Each query has ``hits_per_query * 3 // 2`` candidate documents with a hidden true
grade (mostly 0 and 1, as in real pools). Each result list ranks the candidates by
the true grade scaled by the list's quality plus Gaussian noise, so that better lists
have measurably higher NDCG. Judgement events pick hit pairs (top ranks more often),
a random rater and the true grade with some disagreement.
"""

import datetime as dt
from dataclasses import dataclass

import numpy as np

# How strongly each successive result list follows the true grades.
LIST_QUALITIES = (1.0, 0.6, 0.3, 0.15)
GRADE_SHARES = (0.45, 0.3, 0.17, 0.08)


@dataclass(frozen=True)
class LoadPlan:
    queries: int
    hits_per_query: int
    judgements: int
    result_lists: int = 3
    raters: int = 20
    days: int = 30
    seed: int = 0
    end: dt.datetime = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)

    @property
    def candidates(self) -> int:
        return self.hits_per_query * 3 // 2

    @property
    def documents(self) -> int:
        """Size of the shared catalogue: queries draw their candidates from it."""
        return max(self.candidates * 4, self.queries * self.candidates // 10)


def candidate_documents(plan: LoadPlan) -> np.ndarray:
    """Catalogue index of each (query, candidate), distinct within each query.

    Consecutive indexes from a per-query offset, modulo the catalogue size, are
    distinct because a query has fewer candidates than the catalogue has documents.
    """
    offsets = (np.arange(plan.queries, dtype=np.int64) * 7919) % plan.documents
    return (offsets[:, None] + np.arange(plan.candidates)) % plan.documents


def true_grades(rng: np.random.Generator, plan: LoadPlan) -> np.ndarray:
    """Hidden grade of every (query, candidate), shape ``(queries, candidates)``."""
    size = (plan.queries, plan.candidates)
    return rng.choice(len(GRADE_SHARES), size=size, p=GRADE_SHARES).astype(np.int8)


def rankings(rng: np.random.Generator, plan: LoadPlan, grades: np.ndarray) -> np.ndarray:
    """Candidate index at each rank, shape ``(result_lists, queries, hits_per_query)``."""
    ranked = np.empty((plan.result_lists, plan.queries, plan.hits_per_query), dtype=np.int32)
    for position in range(plan.result_lists):
        quality = LIST_QUALITIES[min(position, len(LIST_QUALITIES) - 1)]
        scores = grades * quality + rng.normal(size=grades.shape)
        top = np.argpartition(-scores, plan.hits_per_query - 1, axis=1)[:, : plan.hits_per_query]
        order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1, kind="stable")
        ranked[position] = np.take_along_axis(top, order, axis=1)
    return ranked


def judgement_events(
    rng: np.random.Generator, plan: LoadPlan, grades: np.ndarray, ranked: np.ndarray
) -> dict[str, np.ndarray]:
    """``judgements`` events over hit pairs: query, candidate, rater, grade, seconds."""
    ranks = np.broadcast_to(np.arange(1, plan.hits_per_query + 1), ranked.shape).ravel()
    queries = np.broadcast_to(np.arange(plan.queries)[None, :, None], ranked.shape).ravel()
    keys = queries.astype(np.int64) * plan.candidates + ranked.ravel()
    # Weight each hit by 1/rank so that raters see the top of the rankings more.
    weights = 1.0 / ranks
    picks = rng.choice(keys.size, size=plan.judgements, p=weights / weights.sum())
    query, candidate = np.divmod(keys[picks], plan.candidates)
    noise = rng.choice([-1, 0, 0, 0, 0, 0, 0, 1], size=plan.judgements)
    grade = np.clip(grades[query, candidate] + noise, 0, len(GRADE_SHARES) - 1)
    seconds = np.sort(rng.integers(0, plan.days * 86400, size=plan.judgements))
    return {
        "query": query,
        "candidate": candidate,
        "rater": rng.integers(0, plan.raters, size=plan.judgements),
        "grade": grade.astype(np.int8),
        "seconds": seconds,
    }


def timestamps(plan: LoadPlan, seconds: np.ndarray) -> np.ndarray:
    """UTC moments (numpy datetime64) ``seconds`` after the start of the plan's period."""
    start = np.datetime64(plan.end.replace(tzinfo=None) - dt.timedelta(days=plan.days), "s")
    return start + seconds.astype("timedelta64[s]")
