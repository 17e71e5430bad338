from django.core.management.base import BaseCommand

from judgements import services
from judgements.importers.progress import ProgressBar
from judgements.management.commands.import_judgements import project_named, run_import, size


class Command(BaseCommand):
    help = "Add or update (by id) a project's documents from JSON Lines, all or nothing."

    def add_arguments(self, parser):
        parser.add_argument("project", help="project slug")
        parser.add_argument("file")

    def handle(self, *args, **options):
        project = project_named(options["project"])
        with open(options["file"], "rb") as upload:
            result = run_import(
                self,
                services.document_import,
                project=project,
                upload=ProgressBar(self.stderr, total=size(upload)).chunks(upload),
            )
        message = f"Read {result.rows} documents: {result.created} new, {result.updated} updated."
        self.stdout.write(self.style.SUCCESS(message))
