from django.core.management.base import BaseCommand

from judgements import importers, services
from judgements.importers.progress import ProgressBar
from judgements.management.commands.import_judgements import project_named, run_import, size


class Command(BaseCommand):
    help = "Add queries to a project from CSV (text, description, id) or JSON, all or nothing."

    def add_arguments(self, parser):
        parser.add_argument("project", help="project slug")
        parser.add_argument("file")
        parser.add_argument("--format", required=True, choices=sorted(importers.QUERY_FORMATS))

    def handle(self, *args, **options):
        project = project_named(options["project"])
        with open(options["file"], "rb") as upload:
            result = run_import(
                self,
                services.query_import,
                project=project,
                upload=ProgressBar(self.stderr, total=size(upload)).chunks(upload),
                file_format=options["format"],
            )
        message = f"Read {result.rows} queries: {result.created} new, the others known already."
        self.stdout.write(self.style.SUCCESS(message))
