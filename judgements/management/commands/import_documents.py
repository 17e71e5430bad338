from django.core.management.base import BaseCommand

from judgements import imports
from judgements.management.commands.import_judgements import (
    import_file,
    project_named,
    write_summary,
)


class Command(BaseCommand):
    help = "Add or update (by id) a project's documents from JSON Lines, all or nothing."

    def add_arguments(self, parser):
        parser.add_argument("project", help="project slug")
        parser.add_argument("file")

    def handle(self, *args, **options):
        project = project_named(options["project"])
        result = import_file(
            self,
            imports.document_import,
            options["file"],
            project=project,
        )
        message = f"Read {result.rows} documents: {result.created} new, {result.updated} updated."
        self.stdout.write(self.style.SUCCESS(message))
        write_summary(self, result)
