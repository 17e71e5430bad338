"""Which source holds a number: the one freshness rule of the dashboards and the API.

A metric's number can be read from four places, from the cheapest:

========  ==========================================  ==========================================
source    tables                                      holds the number for (spec, moment) when
========  ==========================================  ==========================================
stored    metrics_latestmetricpoint, the overall      the project keeps the spec, the moment is
          points of metrics_metricpoint               now, no query is marked stale, every list
                                                      with hits has a point, and no event was
                                                      recorded after the newest point
packed    judgements_rankedhits, rankedgrades         no event of the project is dated after the
          (one row per list and query)                moment (the triggers keep them current)
pairs     judgements_pairgrade, querygrades           the same
log       judgements_judgement, replayed              always
========  ==========================================  ==========================================

``freshness`` answers once per request; the dashboards and the reads under them take
its answer (a ``Freshness``) instead of checking again, and every page and API
response names the source its numbers came from. Whole result lists are read packed
and single queries from the pair grades: ``Freshness.lists`` and ``Freshness.pairs``
say which source each of them uses.

Whose grades make the consensus is part of the answer (``Grades``): the trigger-kept
tables and the stored series hold the human raters' grades only (machine judges' events
are no rater's current answer, judgements/sql/pair_grades.sql), so numbers from machine
judges' grades, alone or with the humans', are always computed from the log (source
``log``), and every page and response names their grades beside the source.

The answer and the reads that follow it see one state of the database: a dashboard
runs in one REPEATABLE READ transaction (``one_snapshot``), so a grade recorded while
the page is built can neither make the answer wrong nor count in half the numbers.
"""

import datetime as dt
import functools
from dataclasses import dataclass
from enum import StrEnum

from django.db import connection, transaction
from django.utils import timezone

from judgements.derived.freshness import NOTHING_AFTER_SQL
from metrics.registry import stored_specs


class Source(StrEnum):
    STORED = "stored"
    PACKED = "packed"
    PAIRS = "pairs"
    LOG = "log"

    @property
    def label(self) -> str:
        """What a page prints beside its parameters."""
        return LABELS[self]


LABELS = {
    Source.STORED: "read from the stored series",
    Source.PACKED: "computed from each list's packed grades",
    Source.PAIRS: "computed from the pair grades",
    Source.LOG: "computed by replaying the judgement log",
}
SOURCE_HELP = (
    "Where the numbers come from (metrics.sources): 'stored', the stored series (the "
    "project's metric, now, with nothing stale); 'packed', each result list's packed "
    "grades; 'pairs', the pair grades; 'log', the judgement log replayed up to the "
    "moment (a past moment, or events dated after it). All four give the same values."
)

# Each statement of the rule names it, so that a test can count how often it is asked.
RULE_MARK = "/* metrics.sources.freshness */"

DERIVED_SQL = f"SELECT {NOTHING_AFTER_SQL.format(moment='%(moment)s')} {RULE_MARK}"

# The same, and what decides whether the stored series of %(metric)s holds now: its
# newest overall point, no stale mark, and a point for every list with hits. Whether an
# event came after the newest point is asked apart (NEWER_SQL).
STORED_SQL = f"""
WITH newest AS (
    SELECT max(point.as_of) AS at
    FROM metrics_metricpoint point
    JOIN judgements_resultlist list ON list.id = point.result_list_id
    WHERE list.project_id = %(project)s AND point.metric = %(metric)s
      AND point.query_id IS NULL
)
SELECT newest.at,
       {NOTHING_AFTER_SQL.format(moment="%(moment)s")},
       EXISTS (SELECT FROM metrics_stalequery mark WHERE mark.project_id = %(project)s),
       EXISTS (
           SELECT FROM judgements_resultlist list
           WHERE list.project_id = %(project)s
             AND EXISTS (SELECT FROM judgements_rankedhits ranked
                         WHERE ranked.result_list_id = list.id AND ranked.hits > 0)
             AND NOT EXISTS (SELECT FROM metrics_metricpoint point
                             WHERE point.result_list_id = list.id
                               AND point.metric = %(metric)s AND point.query_id IS NULL))
FROM newest {RULE_MARK}
"""
# Only when the newest point is older than now (nothing was refreshed this hour).
NEWER_SQL = f"SELECT {NOTHING_AFTER_SQL.format(moment='%(moment)s')} /* newest point */"


@dataclass(frozen=True)
class Grades:
    """Whose current grades make each pair's consensus: human raters' (``humans``) and
    the machine judges' of ``judges`` (their accounts' ids). ``name`` is the choice a
    page or the API offers (judgements.machine.gate): human, machine or both."""

    name: str = "human"
    humans: bool = True
    judges: tuple[int, ...] = ()

    @property
    def label(self) -> str:
        """What a page prints beside its parameters."""
        return f"grades: {GRADES_LABELS[self.name]}"

    @property
    def human_only(self) -> bool:
        """The grades the trigger-kept tables and the stored series hold."""
        return self.humans and not self.judges


GRADES_LABELS = {
    "human": "human grades",
    "machine": "machine judges' grades",
    "both": "human grades and certified machine judges",
}
GRADES_HELP = (
    "Whose grades made the consensus: 'human', the human raters; 'machine', the "
    "project's machine judges; 'both', the human raters and the machine judges the "
    "project's gate admits (certified). Machine and both are computed from the log."
)
HUMAN = Grades()


@dataclass(frozen=True)
class Freshness:
    """The rule's answer for one project, spec and moment.

    ``moment`` is what the numbers hold as of; ``stored``: the stored series holds them;
    ``derived``: the trigger-kept tables (packed rows, pair grades) hold the state as of
    ``moment``; ``grades``: whose grades (both false unless the human raters' only).
    """

    moment: dt.datetime
    stored: bool
    derived: bool
    grades: Grades = HUMAN

    @property
    def lists(self) -> Source:
        """The source of whole result lists' values."""
        if self.stored:
            return Source.STORED
        return Source.PACKED if self.derived else Source.LOG

    @property
    def pairs(self) -> Source:
        """The source of pair grades (one query's working, the pool's progress)."""
        return Source.PAIRS if self.derived else Source.LOG


def freshness(
    project, spec=None, *, as_of: dt.datetime | None, grades: Grades = HUMAN
) -> Freshness:
    """Which source holds the numbers of ``spec`` for the project as of ``as_of`` (now
    when None), from ``grades``: one SQL statement (two when the newest point is older
    than now). Without ``spec``, or for a past moment or a spec the project does not
    keep, the stored series is not asked; nor anything for grades other than the
    human raters' (the log)."""
    if as_of is not None or spec is None or spec not in stored_specs(project):
        return grades_freshness(project.pk, as_of=as_of, grades=grades)
    if not grades.human_only:
        return Freshness(moment=timezone.now(), stored=False, derived=False, grades=grades)
    moment = timezone.now()
    params = {"project": project.pk, "metric": spec.name, "moment": moment}
    with connection.cursor() as cursor:
        cursor.execute(STORED_SQL, params)
        newest, derived, stale, missing = cursor.fetchone()
        stored = newest is not None and derived and not stale and not missing
        if stored and newest < moment:
            cursor.execute(NEWER_SQL, {"project": project.pk, "moment": newest})
            [stored] = cursor.fetchone()
    # A bucket ends on the next boundary, which may be ahead of the clock; the stored
    # values hold as of now then, since nothing was recorded after it.
    return Freshness(
        moment=min(newest, moment) if stored else moment, stored=stored, derived=derived
    )


def grades_freshness(
    project_id: int, *, as_of: dt.datetime | None, grades: Grades = HUMAN
) -> Freshness:
    """``freshness`` for numbers the stored series does not keep (agreement, the pool,
    a past moment): whether the trigger-kept tables hold the state as of ``as_of``."""
    moment = as_of or timezone.now()
    if not grades.human_only:
        return Freshness(moment=moment, stored=False, derived=False, grades=grades)
    with connection.cursor() as cursor:
        cursor.execute(DERIVED_SQL, {"project": project_id, "moment": moment})
        [derived] = cursor.fetchone()
    return Freshness(moment=moment, stored=False, derived=derived)


def one_snapshot(function):
    """Run ``function`` in one REPEATABLE READ transaction: the freshness answer and
    every read after it see the same state. Inside a transaction already (tests,
    callers that write), the caller's transaction is used as it is."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if connection.in_atomic_block:
            return function(*args, **kwargs)
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            return function(*args, **kwargs)

    return wrapper
