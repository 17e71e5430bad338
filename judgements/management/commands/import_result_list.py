from django.core.management.base import BaseCommand

from judgements import importers, imports
from judgements.management.commands.import_judgements import (
    chunks,
    import_file,
    optional,
    project_named,
    user_named,
    write_summary,
)


class Command(BaseCommand):
    help = "Create a result list from a TREC run file or JSON, all or nothing."

    def add_arguments(self, parser):
        parser.add_argument("project", help="project slug")
        parser.add_argument("file")
        parser.add_argument(
            "--format", required=True, choices=sorted(importers.RESULT_LIST_FORMATS)
        )
        parser.add_argument("--name", default="", help="default: the TREC tag or JSON name")
        parser.add_argument("--engine", default="")
        parser.add_argument("--queries", help="CSV with id,text naming the qids of a run file")
        parser.add_argument("--user", help="recorded as the result list's creator")
        parser.add_argument(
            "--create-missing", action="store_true", help="create queries (qids) the project lacks"
        )

    def handle(self, *args, **options):
        project = project_named(options["project"])
        with optional(options["queries"]) as queries:
            result = import_file(
                self,
                imports.result_list_import,
                options["file"],
                project=project,
                file_format=options["format"],
                uploaded_by=user_named(options["user"]),
                name=options["name"],
                engine=options["engine"],
                query_map=chunks(queries),
                create_missing=options["create_missing"],
            )
        message = f'Created result list "{result.result_list.name}" with {result.created} hits.'
        self.stdout.write(self.style.SUCCESS(message))
        write_summary(self, result)
