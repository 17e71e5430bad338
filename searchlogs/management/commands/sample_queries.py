from django.core.management.base import BaseCommand, CommandError

from judgements.management.commands.import_judgements import project_named
from searchlogs.sampling import queries_from_traffic


class Command(BaseCommand):
    help = (
        "Draw a project's queries from its search log's traffic, keeping each one's traffic "
        "(for NDCG's mean weight=traffic): a seeded sample stratified into head, torso and "
        "tail (the cuts are printed), or the top N. The same seed draws the same queries."
    )

    def add_arguments(self, parser):
        parser.add_argument("project", help="project slug")
        parser.add_argument("size", type=int)
        parser.add_argument("--top", action="store_true", help="The N of most traffic.")
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, **options):
        project = project_named(options["project"])
        try:
            sample = queries_from_traffic(
                project=project, size=options["size"], seed=options["seed"],
                method="top" if options["top"] else "stratified",
            )  # fmt: skip
        except ValueError as error:
            raise CommandError(str(error)) from None
        for cut in sample.cuts:
            self.stdout.write(f"{cut.stratum:>5}: {cut.texts} texts, {cut.pages} pages "
                              f"({cut.min_pages}-{cut.max_pages} each)")  # fmt: skip
        seed = f", seed {sample.seed}" if sample.seed is not None else ""
        self.stdout.write(
            self.style.SUCCESS(f"Drew {len(sample.drawn)} queries ({sample.method}{seed}):")
        )
        for text, pages, stratum in sample.drawn:
            self.stdout.write(f"  {pages:>8}  {stratum:<5}  {text}")
