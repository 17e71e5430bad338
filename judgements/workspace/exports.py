"""The downloads a project page offers: the API's own streamed exports, linked."""

from dataclasses import dataclass

from django.urls import reverse

from judgements.models import Judgement, MachineJudge, Project
from metrics.models import MetricPoint

CONSENSUS_FORMATS = [
    ("qrels", "TREC qrels"),
    ("quepid", "Quepid CSV"),
    ("rre", "RRE JSON"),
    ("ltr", "LTR (RankLib)"),
]
EVENT_FORMATS = [("csv", "CSV"), ("jsonl", "JSON Lines")]


@dataclass(frozen=True)
class Download:
    label: str
    url: str


@dataclass(frozen=True)
class DownloadGroup:
    title: str
    help: str
    downloads: list[Download]


def project_exports(project: Project, result_lists) -> list[DownloadGroup]:
    """The exports of ``project`` that have something in them, grouped; each link is the
    API's streamed response. A new project offers none: an empty file reads as broken."""
    groups = _groups(project, result_lists)
    graded = Judgement.objects.filter(query__project=project).exists()
    judges = MachineJudge.objects.filter(project=project).exists()
    stored = MetricPoint.objects.filter(result_list__project=project).exists()
    kept = []
    for group in groups:
        if group.title in ("Consensus grades", "Judgement events") and not graded:
            continue
        if group.title == "Metric series":
            shown = {"CSV, human grades": stored or (graded and bool(result_lists))}
            downloads = [d for d in group.downloads if shown.get(d.label, judges)]
            group = DownloadGroup(group.title, group.help, downloads)
        if group.downloads:
            kept.append(group)
    return kept


def _groups(project: Project, result_lists) -> list[DownloadGroup]:
    slug = project.slug
    consensus = reverse("api:consensus-export", args=[slug])
    events = reverse("api:judgements-export", args=[slug])
    return [
        DownloadGroup(
            "Consensus grades",
            f"One grade per judged pair ({project.get_consensus_display()}), rounded to "
            "the scale in the pair formats.",
            [Download(label, f"{consensus}?format={name}") for name, label in CONSENSUS_FORMATS],
        ),
        DownloadGroup(
            "Judgement events",
            "The whole log: every answer with its rater and time.",
            [Download(label, f"{events}?format={name}") for name, label in EVENT_FORMATS],
        ),
        DownloadGroup(
            "Result lists",
            "Each as a TREC run file.",
            [
                Download(
                    result_list.name, reverse("api:result-list-export", args=[result_list.pk])
                )
                for result_list in result_lists
            ],
        ),
        DownloadGroup(
            "Metric series",
            "The mean of every result list over time, with its parameters: stored for "
            "human grades, replayed from the log for machine judges' grades or both.",
            [
                Download(label, f"{reverse('metrics:series_export', args=[slug])}{query}")
                for label, query in (
                    ("CSV, human grades", ""),
                    ("CSV, machine judges' grades", "?grades=machine"),
                    ("CSV, both", "?grades=both"),
                )
            ],
        ),
    ]
