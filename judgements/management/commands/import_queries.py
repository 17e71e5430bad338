from django.core.management.base import BaseCommand

from judgements import importers, imports
from judgements.management.commands.import_judgements import (
    import_file,
    project_named,
    write_summary,
)


class Command(BaseCommand):
    help = "Add queries to a project from CSV (text, description, id) or JSON, all or nothing."

    def add_arguments(self, parser):
        parser.add_argument("project", help="project slug")
        parser.add_argument("file")
        parser.add_argument("--format", required=True, choices=sorted(importers.QUERY_FORMATS))

    def handle(self, *args, **options):
        project = project_named(options["project"])
        result = import_file(
            self,
            imports.query_import,
            options["file"],
            project=project,
            file_format=options["format"],
        )
        message = f"Read {result.rows} queries: {result.created} new, the others known already."
        self.stdout.write(self.style.SUCCESS(message))
        write_summary(self, result)
