from pathlib import Path

from django.core.management.base import BaseCommand

from judgements.management.commands.import_judgements import project_named
from searchlogs.ubi_export import UbiExport, ubi_events, ubi_queries


class Command(BaseCommand):
    help = (
        "Write a project's stored search log as User Behavior Insights 1.3.0 NDJSON: "
        "FOLDER/ubi_queries.ndjson and FOLDER/ubi_events.ndjson (searchlogs.ubi_export)."
    )

    def add_arguments(self, parser):
        parser.add_argument("project", help="project slug")
        parser.add_argument("folder")

    def handle(self, *args, **options):
        project = project_named(options["project"])
        folder = Path(options["folder"])
        folder.mkdir(parents=True, exist_ok=True)
        counts = UbiExport()
        for name, lines in (("ubi_queries", ubi_queries), ("ubi_events", ubi_events)):
            with open(folder / f"{name}.ndjson", "wb") as out:
                out.writelines(lines(project, counts))
        self.stdout.write(self.style.SUCCESS(
            f"Wrote {counts.queries} query records and {counts.clicks} click events to {folder}."
        ))  # fmt: skip
        if counts.clicks_without_page:
            self.stdout.write(f"{counts.clicks_without_page} clicks without a results page "
                              "have no query to name: not written.")  # fmt: skip
