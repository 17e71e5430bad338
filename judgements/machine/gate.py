"""Whose grades make a pair's consensus: humans, machine judges, or both.

The trigger-kept tables (pair grades, packed grades, the stored series) hold the human
consensus only. ``grades_of`` turns a choice into ``metrics.sources.Grades`` (which
raters count), which the dashboards pass to ``metrics.sources.freshness``: numbers of
machine judges' grades are then computed from the log (``metrics.selectors``), each
rater's newest event per pair combined by ``metrics.core.consensus`` exactly as human
grades are.

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
from metrics.sources import GRADES_LABELS, Grades, grades_freshness

SOURCES = tuple(GRADES_LABELS)
SOURCE_LABELS = GRADES_LABELS


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


def grades_of(project: Project, source: str) -> Grades:
    """Whose grades ``source`` (human, machine or both) counts in ``project`` now."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {', '.join(SOURCES)}, not {source!r}")
    if source == "human":
        return Grades()
    if source == "machine":
        judges = MachineJudge.objects.filter(project=project).values_list("rater_id", flat=True)
        return Grades(name=source, humans=False, judges=tuple(sorted(judges)))
    judges = sorted(judge.rater_id for judge in admitted_judges(project))
    return Grades(name=source, humans=True, judges=tuple(judges))


def source_pair_grades(
    project: Project, source: str, *, as_of: dt.datetime, policy: str
) -> selectors.PairGrades:
    """Each pair's consensus from the grades of ``source`` as of ``as_of``."""
    fresh = grades_freshness(project.pk, as_of=as_of, grades=grades_of(project, source))
    return selectors.pair_grades(project.pk, fresh=fresh, policy=policy)
