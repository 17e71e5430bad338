from django.core.management.base import BaseCommand

from judgements.management.commands.import_judgements import import_file, project_named
from searchlogs import services


class Command(BaseCommand):
    help = (
        "Store a search log (JSON Lines of impression, click and dwell events) in a project, "
        "all or nothing; events already stored (by id) are skipped. See searchlogs.parsing."
    )

    def add_arguments(self, parser):
        parser.add_argument("project", help="project slug")
        parser.add_argument("file")

    def handle(self, *args, **options):
        project = project_named(options["project"])
        result = import_file(
            self,
            services.search_log_ingest,
            options["file"],
            project=project,
        )
        kinds = ", ".join(f"{count} {kind}s" for kind, count in result.kinds.items())
        message = (
            f"Read {result.rows} events ({kinds}): {result.created} stored, "
            f"{result.already_stored} already stored."
        )
        self.stdout.write(self.style.SUCCESS(message))
        if result.unmatched:
            self.stdout.write(f"{result.unmatched} results pages matched no query; most often:")
            for text, count in result.unmatched_texts:
                self.stdout.write(f"  {count:>8}  {text}")
