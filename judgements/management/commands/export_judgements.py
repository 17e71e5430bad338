import sys

from django.core.management.base import BaseCommand, CommandError

from judgements import exporters
from judgements.api.filters import JudgementFilter
from judgements.importers.progress import ProgressBar
from judgements.management.commands.import_judgements import project_named
from judgements.models import Judgement
from metrics.core.consensus import policy_names


class Command(BaseCommand):
    help = (
        "Stream a project's judgement events, current grades or consensus to a file "
        "(JSON Lines, CSV, qrels, Quepid CSV, RRE JSON, LTR, OpenSearch). Pair formats "
        "write the consensus. See judgements.exporters."
    )

    def add_arguments(self, parser):
        parser.add_argument("project", help="project slug")
        parser.add_argument("--dataset", default="events", choices=exporters.DATASETS)
        parser.add_argument("--format", default="jsonl", choices=exporters.FORMATS)
        parser.add_argument("--policy", default="", choices=["", *policy_names()])
        parser.add_argument("--output", "-o", help="default: standard output")
        parser.add_argument(
            "--raw", action="store_true", help="CSV cells without the spreadsheet formula guard"
        )
        for name in ("rater", "source", "since", "until"):
            parser.add_argument(f"--{name}", help="filter the events, as in the API")

    def handle(self, *args, **options):
        project = project_named(options["project"])
        filters = {name: options[name] for name in ("rater", "source", "since", "until")}
        events = JudgementFilter(
            {key: value for key, value in filters.items() if value},
            Judgement.objects.for_project(project),
        )
        if not events.is_valid():
            raise CommandError(f"Invalid filters: {events.errors.as_text()}")
        export = exporters.judgement_export(
            project=project,
            events=events.qs,
            dataset=options["dataset"],
            file_format=options["format"],
            policy=options["policy"],
            raw=options["raw"],
        )
        write(export, options["output"], self.stderr)


def write(export: exporters.Export, path: str | None, progress_stream) -> None:
    if path is None:
        for chunk in export.chunks:
            sys.stdout.buffer.write(chunk)
        return
    with open(path, "wb") as out:
        ProgressBar(progress_stream).written(export.chunks, out)
