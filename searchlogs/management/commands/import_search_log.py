from django.core.management.base import BaseCommand

from judgements.importers.progress import ProgressBar
from judgements.management.commands.import_judgements import project_named, run_import, size
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
        with open(options["file"], "rb") as upload:
            result = run_import(
                self,
                services.search_log_ingest,
                project=project,
                upload=ProgressBar(self.stderr, total=size(upload)).chunks(upload),
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
