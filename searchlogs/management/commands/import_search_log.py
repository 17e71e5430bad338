from django.core.management.base import BaseCommand

from judgements.management.commands.import_judgements import import_file, project_named
from searchlogs import services
from searchlogs.ubi import ROLES


class Command(BaseCommand):
    help = (
        "Store a search log in a project, all or nothing; events already stored (by id) are "
        "skipped. Our JSON Lines of impression, click and dwell events (searchlogs.parsing), "
        "or with --format ubi User Behavior Insights records: ubi_queries and ubi_events as "
        "NDJSON, an OpenSearch _bulk file, or _search/scroll responses (searchlogs.ubi)."
    )

    def add_arguments(self, parser):
        parser.add_argument("project", help="project slug")
        parser.add_argument("file")
        parser.add_argument("--format", choices=services.FORMATS, default="ours")
        parser.add_argument(
            "--ubi-role",
            choices=ROLES,
            default="auto",
            help="UBI: what plain records are (auto: events have action_name).",
        )
        parser.add_argument(
            "--ordinal-base",
            type=int,
            choices=(0, 1),
            default=1,
            help="UBI: the position.ordinal of the first result (1, or 0 for logs from 0).",
        )

    def handle(self, *args, **options):
        project = project_named(options["project"])
        result = import_file(
            self,
            services.search_log_ingest,
            options["file"],
            project=project,
            format=options["format"],
            ubi_role=options["ubi_role"],
            ordinal_base=options["ordinal_base"],
        )
        kinds = ", ".join(f"{count} {kind}s" for kind, count in result.kinds.items())
        message = (
            f"Read {result.rows} events ({kinds}): {result.created} stored, "
            f"{result.already_stored} already stored."
        )
        self.stdout.write(self.style.SUCCESS(message))
        if result.other_actions:
            actions = ", ".join(f"{count} {name}" for name, count in result.other_actions.items())
            self.stdout.write(f"UBI events of other actions, checked but not stored: {actions}.")
        if result.unmatched:
            self.stdout.write(f"{result.unmatched} results pages matched no query; most often:")
            for text, count in result.unmatched_texts:
                self.stdout.write(f"  {count:>8}  {text}")
