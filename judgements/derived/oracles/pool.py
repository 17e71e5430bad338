"""The rating pool (``judgements_queuepair``) and its tallies, recomputed by the
rule of ``judgements.queue`` written out, and read back."""

import datetime as dt

from django.utils import timezone

from judgements.derived.oracles.answers import current_answers
from judgements.models import (
    Hit,
    QueuePair,
    QueuePoolTally,
    QueueRaterTally,
    QueueRequest,
)

# judgements_queuepair, judgements_queuepooltally, judgements_queueratertally


def expected_pool(project, answers=None) -> dict:
    """The pool: every pair in the top ``pool_depth`` hits of a result list, or asked for
    by an analyst (at any depth), with its best rank, current grades, how many more it
    needs, who answered it on which UTC day (grade or can't tell) and the grades asked for.
    """
    answers = current_answers(project) if answers is None else answers
    wanted: dict = {}
    requests = QueueRequest.objects.filter(project=project)
    for query, document, count in requests.values_list("query_id", "document_id", "wanted"):
        wanted[(query, document)] = max(wanted.get((query, document), 0), count)
    best: dict = {}
    rows = Hit.objects.for_project(project).values_list("query_id", "document_id", "rank")
    for query, document, rank in rows.iterator(chunk_size=50_000):
        pair = (query, document)
        if rank <= project.pool_depth or pair in wanted:
            best[pair] = min(best.get(pair, rank), rank)
    pool = {}
    for pair, rank in best.items():
        current = answers.get(pair, {})
        grades = sum(kind == "grade" for kind, _, _ in current.values())
        answered = {
            str(rater): created_at.astimezone(dt.UTC).date().isoformat()
            for rater, (kind, _, created_at) in current.items()
            if kind != "retract"
        }
        needed = max(project.judges_per_pair, wanted.get(pair, 0)) - grades
        pool[pair] = (rank, grades, needed, answered, wanted.get(pair, 0))
    return pool


def stored_pool(project) -> dict:
    rows = QueuePair.objects.filter(project=project).values_list(
        "query_id", "document_id", "best_rank", "grades", "needed", "answered", "wanted"
    )
    return {
        (query, document): tuple(state)
        for query, document, *state in rows.iterator(chunk_size=20_000)
    }


def expected_tallies(project, pool: dict) -> tuple[dict, dict]:
    """(open pairs by project, (answered, still open, answered today) by rater) of a pool
    as ``expected_pool`` gives it; no row where every count is 0."""
    today = timezone.now().astimezone(dt.UTC).date().isoformat()
    open_pairs = sum(needed > 0 for _, _, needed, _, _ in pool.values())
    per_rater: dict = {}
    for _, _, needed, answered, _ in pool.values():
        for rater, day in answered.items():
            done, still_open, on_day = per_rater.get(int(rater), (0, 0, 0))
            per_rater[int(rater)] = (done + 1, still_open + (needed > 0), on_day + (day == today))
    return ({project.pk: open_pairs} if open_pairs else {}), per_rater


def stored_tallies(project) -> tuple[dict, dict]:
    today = timezone.now().astimezone(dt.UTC).date()
    pool = dict(
        QueuePoolTally.objects.filter(project=project).values_list("project_id", "open_pairs")
    )
    raters = {
        rater: (answered, still_open, on_day if day == today else 0)
        for rater, answered, still_open, day, on_day in QueueRaterTally.objects.filter(
            project=project
        ).values_list("rater_id", "answered", "answered_open", "day", "answered_on_day")
    }
    return pool, raters
