"""The demo judge's rule: no model, a fixed word-overlap heuristic.

It exists so that a fresh install (``load_demo``) shows a machine judge with real
certification numbers without any model server. It is labelled as a demo everywhere
it shows (model ``demo-word-overlap``); nobody should trust its grades.
"""

import datetime as dt
import re

from judgements.machine.client import Reply

DEMO_MODEL = "demo-word-overlap"
WORD = re.compile(r"\w+")


def demo_grade(query: str, text: str, grades: list[int]) -> int:
    """The share of the query's words found in ``text``, mapped onto the scale: none
    is the lowest grade, all the highest, in equal steps between."""
    words = set(WORD.findall(query.lower()))
    if not words:
        return grades[0]
    found = words & set(WORD.findall(text.lower()))
    step = round(len(found) / len(words) * (len(grades) - 1))
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
    from judgements.machine.runs import machine_run_start, machine_run_work
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
            concurrency=2,
        )
    if judge.runs.exists():
        return 0
    # The demo judge graded the pool the day before the raters began, as a team would
    # have a model pre-label a pool.
    first = Judgement.objects.for_project(project).human().order_by("created_at").first()
    before = first.created_at - dt.timedelta(days=1) if first else None
    run = machine_run_start(judge=judge, user=None, tasks=0)
    machine_run_work(run.pk, recorded_at=before)
    if not judge.canaries.exists():
        machine_canaries_run(judge=judge)
    run.refresh_from_db()
    return run.answered
