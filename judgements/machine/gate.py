"""Whose grades make a pair's consensus: humans, machine judges, or both.

The trigger-kept tables (pair grades, packed grades, the stored series) hold the human
consensus only. Consensus with machine judges is computed here, in numpy, from the log:
each rater's newest event per pair, machine judges' included as the grade source says,
combined by ``metrics.core.consensus`` exactly as human grades are.

Sources
-------
human
    Human raters only (an analyst's overrule is a human grade).
machine
    Every machine judge of the project, certified or not.
both
    Human raters and the judges the project's gate admits: none under "humans only",
    the judges certified at the gate's threshold under "certified".
"""

import datetime as dt

from judgements.models import MachineGate, MachineJudge, Project
from metrics import selectors

SOURCES = ("human", "machine", "both")
SOURCE_LABELS = {
    "human": "human grades",
    "machine": "machine judges' grades",
    "both": "human grades and certified machine judges",
}

# Each chosen rater's newest event per pair of the project as of %(as_of)s; humans are
# every non-machine event when %(humans)s, judges those of %(judges)s.
CHOSEN_GRADES_SQL = """
WITH latest AS (
    SELECT DISTINCT ON (j.query_id, j.document_id, j.rater_id)
           j.query_id, j.document_id, j.kind, j.grade
    FROM judgements_judgement j
    JOIN judgements_query q ON q.id = j.query_id
    WHERE q.project_id = %(project)s
      AND j.created_at <= %(as_of)s
      AND ((%(humans)s AND j.source <> 'machine') OR j.rater_id = ANY(%(judges)s))
    ORDER BY j.query_id, j.document_id, j.rater_id, j.created_at DESC, j.id DESC
)
SELECT query_id, document_id, grade FROM latest
WHERE kind = 'grade'
ORDER BY query_id, document_id
"""


def gate_of(project: Project) -> MachineGate:
    """The project's gate; an unsaved default (humans only) when it has none."""
    return MachineGate.objects.filter(project=project).first() or MachineGate(project=project)


def admitted_judges(project: Project) -> list[MachineJudge]:
    """The machine judges whose grades enter the project's consensus now."""
    from judgements.machine.certification import judge_agreement

    gate = gate_of(project)
    if gate.admit != MachineGate.Admit.CERTIFIED:
        return []
    judges = MachineJudge.objects.filter(project=project).select_related("rater")
    return [judge for judge in judges if certified(judge_agreement(judge), gate)]


def certified(result, gate: MachineGate) -> bool:
    """Whether an agreement ``result`` passes the gate's threshold on enough gold pairs."""
    return result.pairs >= gate.min_gold and result.alpha >= gate.min_alpha


def default_source(project: Project) -> str:
    """The source the project's consensus uses: "both" once its gate admits a judge."""
    return "both" if admitted_judges(project) else "human"


def source_pair_grades(
    project: Project, source: str, *, as_of: dt.datetime, policy: str
) -> selectors.PairGrades:
    """Each pair's consensus from the grades of ``source`` as of ``as_of``."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {', '.join(SOURCES)}, not {source!r}")
    if source == "human":
        return selectors.pair_grades(project.pk, as_of=as_of, policy=policy)
    if source == "machine":
        judges = list(
            MachineJudge.objects.filter(project=project).values_list("rater_id", flat=True)
        )
    else:
        judges = [judge.rater_id for judge in admitted_judges(project)]
    params = {"project": project.pk, "as_of": as_of, "humans": source == "both", "judges": judges}
    return selectors.pairs_of_grades(
        selectors._fetch(CHOSEN_GRADES_SQL, params, columns=3), policy
    )
