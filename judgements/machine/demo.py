"""The demo judge's rule: no model, a fixed word-overlap heuristic.

It exists so that a fresh install (``load_demo``) shows a machine judge with real
certification numbers without any model server. It is labelled as a demo everywhere
it shows (model ``demo-word-overlap``); nobody should trust its grades.
"""

import datetime as dt
import re

from django.db import transaction
from django.utils import timezone

from judgements.machine.client import Reply

DEMO_MODEL = "demo-word-overlap"
WORD = re.compile(r"\w+")


def demo_grade(query: str, text: str, grades: list[int]) -> int:
    """The share of the query's words found in ``text``, mapped onto the scale: none
    is the lowest grade, all the highest, in equal steps between (rounded down).

    >>> demo_grade("green tent", "A green tent for two", [0, 1, 2, 3])
    3
    >>> demo_grade("green tent", "A tent", [0, 1, 2, 3])
    1
    """
    words = set(WORD.findall(query.lower()))
    if not words:
        return grades[0]
    found = words & set(WORD.findall(text.lower()))
    step = int(len(found) / len(words) * (len(grades) - 1))
    return grades[step]


def demo_reply(pair, grades: list[int]) -> Reply:
    text = f"{pair.title} {pair.snippet}"
    grade = demo_grade(pair.query, text, grades)
    rationale = "Demo rule: share of the query's words in the title and snippet."
    return Reply(grade, rationale, "", 1, 0, 0, 0)


DEMO_JUDGE_NAME = "Demo judge (word overlap, not a model)"


def demo_judge_load(project) -> int:
    """Give the demo project its demo judge, run over the whole pool, and its canaries;
    returns the judge's new answers (none when it was loaded before)."""
    from judgements.machine.canaries import machine_canaries_run
    from judgements.machine.runs import machine_run_start
    from judgements.machine.services import machine_judge_create
    from judgements.models import Judgement, MachineJudge

    judge = MachineJudge.objects.filter(project=project, demo=True).first()
    if judge is None:
        judge = machine_judge_create(
            project=project,
            name=DEMO_JUDGE_NAME,
            base_url="http://127.0.0.1/demo-judge-asks-no-server",
            model=DEMO_MODEL,
            demo=True,
        )
    if judge.runs.exists():
        return 0
    # The demo judge graded the pool the day before the raters began, as a team would
    # have a model pre-label a pool.
    first = Judgement.objects.for_project(project).human().order_by("created_at").first()
    moment = first.created_at - dt.timedelta(days=1) if first else timezone.now()
    run = machine_run_start(judge=judge, user=None, tasks=0)
    answered = _demo_run(judge, run, moment)
    if not judge.canaries.exists():
        machine_canaries_run(judge=judge)
    return answered


@transaction.atomic
def _demo_run(judge, run, moment) -> int:
    """The run's answers all at once: the rule needs no claims, retries or threads, and
    the demo loads in every test that uses it."""
    from judgements.machine.prompting import Pair, prompt_version
    from judgements.models import Judgement, MachineAnswer, MachineRun, MachineRunItem

    grades = judge.project.grade_values
    items = list(run.items.select_related("query", "document").order_by("position"))
    replies = [
        demo_reply(Pair(i.query.text, "", i.document.title, "", i.document.snippet, {}), grades)
        for i in items
    ]
    events = Judgement.objects.bulk_create(
        Judgement(
            query_id=item.query_id,
            document_id=item.document_id,
            rater_id=judge.rater_id,
            grade=reply.grade,
            created_at=moment,
            source=Judgement.Source.MACHINE,
        )
        for item, reply in zip(items, replies, strict=True)
    )
    version = prompt_version(judge.prompt_template)
    MachineAnswer.objects.bulk_create(
        MachineAnswer(
            judgement=event,
            judge=judge,
            run=run,
            model=judge.model,
            prompt_version=version,
            rationale=reply.rationale,
        )
        for event, reply in zip(events, replies, strict=True)
    )
    MachineRunItem.objects.filter(run=run).update(status=MachineRunItem.Status.DONE)
    MachineRun.objects.filter(pk=run.pk).update(
        status=MachineRun.Status.DONE, graded=len(items), finished_at=timezone.now()
    )
    return len(items)
