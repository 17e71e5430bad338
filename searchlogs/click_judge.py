"""A click model as a machine judge: its grades come from the project's search log.

The judge is a ``MachineJudge`` of kind "clicks", with its own rater account like every
machine judge; ``model`` names the click model (metrics.core.clickmodels): "pbm", the
position-based model fitted by EM, or "coec", clicks over expected clicks. Its answers
are machine events (source "machine", like a language model's), so they stay out of
every human number, and the gate admits them only once certification shows they agree
with the human consensus (judgements.machine.certification): a click judge must earn its
vote as any other. Pairs shown fewer than ``min_impressions`` times are "can't tell",
the note giving their count.

Impressions are the documents each results page listed (its ``results``, or UBI's
``query_response_hit_ids``), at their ranks; a click counts for the page it belongs to
(the latest page of its session at or before it, as in the online metrics). Pages of
no project query, and documents the project does not have, are left out.
"""

import hashlib

import numpy as np
import orjson
from django.db import connection, transaction
from django.utils import timezone

from judgements.machine.services import machine_judge_create
from judgements.models import Document, Judgement, MachineAnswer, MachineJudge, Project
from metrics.core.clickmodels import ClickEstimate, Impressions, coec, grades_of, pbm

MODELS = {"pbm": pbm, "coec": coec}
DEFAULT_MIN_IMPRESSIONS = 10

# Each page with its results and the documents clicked on it: pages numbered in each
# session in the online metrics' order (metrics.core.online), a click on the latest.
_PAGES_SQL = """
WITH ordered AS (
    SELECT kind, query_id, documents, document, session_id COLLATE "C" AS sid,
           sum(CASE WHEN kind = 0 THEN 1 ELSE 0 END) OVER (
               PARTITION BY session_id COLLATE "C" ORDER BY at, kind, event_id COLLATE "C"
               ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS page
    FROM searchlogs_searchevent WHERE project_id = %(project)s AND kind IN (0, 1)
)
SELECT max(query_id), (array_agg(documents) FILTER (WHERE kind = 0))[1],
       coalesce(array_agg(DISTINCT document) FILTER (WHERE kind = 1), '{}')
FROM ordered WHERE page > 0 GROUP BY sid, page HAVING max(query_id) IS NOT NULL
"""


def click_judge_create(
    *, project: Project, name: str, model: str = "pbm",
    min_impressions: int = DEFAULT_MIN_IMPRESSIONS,
) -> MachineJudge:  # fmt: skip
    """A click-model judge of ``project`` (``model``: "pbm" or "coec")."""
    if model not in MODELS:
        raise ValueError(f"model must be one of {', '.join(MODELS)}, not {model!r}")
    return machine_judge_create(
        project=project, name=name, kind=MachineJudge.Kind.CLICKS, model=model,
        min_impressions=min_impressions,
    )  # fmt: skip


def log_impressions(project: Project) -> tuple[Impressions, np.ndarray, np.ndarray]:
    """The log's impressions of project pairs, and each pair code's query and document."""
    documents = dict(Document.objects.filter(project=project).values_list("external_id", "id"))
    codes: dict[tuple[int, int], int] = {}
    pair, rank, clicked = [], [], []
    with connection.cursor() as cursor:
        cursor.execute(_PAGES_SQL, {"project": project.pk})
        pages = cursor.fetchall()
    for query_id, shown, clicks in pages:
        chosen = set(clicks)
        # A raw cursor gives jsonb as its text (Django parses it only for JSONField reads).
        for position, external in enumerate(orjson.loads(shown), start=1):
            document = documents.get(external)
            if document is None:
                continue
            pair.append(codes.setdefault((query_id, document), len(codes)))
            rank.append(position)
            clicked.append(external in chosen)
    keys = np.array(list(codes), np.int64).reshape(len(codes), 2)
    return Impressions.of(pair, rank, clicked), keys[:, 0], keys[:, 1]


@transaction.atomic
def click_judge_answer(*, judge: MachineJudge) -> dict[str, int]:
    """Fit the judge's click model to the log and record an answer per pair seen.

    Returns how many pairs were graded and how many are can't tell.
    """
    if judge.kind != MachineJudge.Kind.CLICKS:
        raise ValueError(f"{judge} is not a click-model judge.")
    project = judge.project
    log, queries, documents = log_impressions(project)
    estimate = MODELS[judge.model](log)
    minimum = judge.min_impressions
    grades = grades_of(estimate, project.grade_values, min_impressions=minimum)
    now = timezone.now()
    events = [
        Judgement(query_id=int(query), document_id=int(document), rater_id=judge.rater_id,
                  kind=Judgement.Kind.GRADE if grade >= 0 else Judgement.Kind.CANT_TELL,
                  grade=int(grade) if grade >= 0 else None,
                  note=_note(estimate, index, minimum, grade), created_at=now,
                  source=Judgement.Source.MACHINE)
        for index, (query, document, grade) in enumerate(zip(queries, documents, grades,
                                                              strict=True))
    ]  # fmt: skip
    Judgement.objects.bulk_create(events, batch_size=5_000)
    version = hashlib.sha256(f"{judge.model} {minimum}".encode()).hexdigest()[:12]
    MachineAnswer.objects.bulk_create(
        [MachineAnswer(judgement=event, judge=judge, model=f"clicks:{judge.model}",
                       prompt_version=version, rationale=event.note) for event in events],
        batch_size=5_000,
    )  # fmt: skip
    graded = int((grades >= 0).sum())
    return {"graded": graded, "cant_tell": len(events) - graded}


def _note(estimate: ClickEstimate, index: int, minimum: int, grade: int) -> str:
    shown, clicks = int(estimate.impressions[index]), int(estimate.clicks[index])
    if grade < 0:
        return f"Can't tell: {shown} impressions, fewer than {minimum}."
    name = "PBM attractiveness" if estimate.model == "pbm" else "COEC"
    return f"{name} {estimate.score[index]:.3f} from {shown} impressions and {clicks} clicks."
