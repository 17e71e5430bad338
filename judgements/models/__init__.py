"""The judging data: projects, queries, documents, result lists, hits and grades.

One module per concern, every model importable from here as before:

- ``project``: projects, their grade scale and metric choices;
- ``catalogue``: queries, documents, result lists and hits;
- ``log``: the append-only judgement log;
- ``derived``: the tables kept from the log and the hits (docs/derived-state.md);
- ``queue``: the rating queue's pool, requests, tallies, leases and skips;
- ``jobs``: background work and its uploads;
- ``machine``: machine judges, their runs, answers, canaries and the project's gate;
- ``engines``: the team's search endpoints, their templates, captures and schedules.
"""

from judgements.models.catalogue import Document, Hit, Query, ResultList
from judgements.models.derived import (
    PackedPolicy,
    PairGrade,
    QueryActivity,
    QueryGrades,
    QueryLog,
    RankedGrades,
    RankedHits,
)
from judgements.models.engines import Capture, CaptureSchedule, SearchEndpoint, SearchTemplate
from judgements.models.jobs import Job, JobUpload
from judgements.models.log import Judgement
from judgements.models.machine import (
    MachineAnswer,
    MachineCanary,
    MachineGate,
    MachineJudge,
    MachineRun,
    MachineRunItem,
)
from judgements.models.project import (
    MAX_DEPTH,
    MAX_GRADE_MAGNITUDE,
    MAX_GRADES,
    MAX_JUDGES_PER_PAIR,
    RESERVED_SLUGS,
    SCALE_KEYS,
    Discount,
    Gain,
    IdealDepth,
    IdealSource,
    MeanOver,
    NegativeGrades,
    Project,
    Unjudged,
    default_scale,
    scale_errors,
    scale_in_use_errors,
)
from judgements.models.queue import (
    QueueLease,
    QueuePair,
    QueuePoolTally,
    QueueRaterTally,
    QueueRequest,
    QueueSkip,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_GRADES",
    "MAX_GRADE_MAGNITUDE",
    "MAX_JUDGES_PER_PAIR",
    "RESERVED_SLUGS",
    "SCALE_KEYS",
    "Capture",
    "CaptureSchedule",
    "Discount",
    "Document",
    "Gain",
    "Hit",
    "IdealDepth",
    "IdealSource",
    "Job",
    "JobUpload",
    "Judgement",
    "MachineAnswer",
    "MachineCanary",
    "MachineGate",
    "MachineJudge",
    "MachineRun",
    "MachineRunItem",
    "MeanOver",
    "NegativeGrades",
    "PackedPolicy",
    "PairGrade",
    "Project",
    "Query",
    "QueryActivity",
    "QueryGrades",
    "QueryLog",
    "QueueLease",
    "QueuePair",
    "QueuePoolTally",
    "QueueRaterTally",
    "QueueRequest",
    "QueueSkip",
    "RankedGrades",
    "RankedHits",
    "ResultList",
    "SearchEndpoint",
    "SearchTemplate",
    "Unjudged",
    "default_scale",
    "scale_errors",
    "scale_in_use_errors",
]
