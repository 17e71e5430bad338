import time

from django.core.management.base import BaseCommand, CommandError

from judgements.loadgen import LoadPlan
from judgements.loads import generated_project_create


class Command(BaseCommand):
    help = "Build a large synthetic project (COPY, one transaction) for benchmarks."

    def add_arguments(self, parser):
        parser.add_argument("--queries", type=int, default=1000)
        parser.add_argument("--hits-per-query", type=int, default=100)
        parser.add_argument("--judgements", type=int, default=100_000)
        parser.add_argument("--result-lists", type=int, default=3)
        parser.add_argument("--raters", type=int, default=20)
        parser.add_argument("--days", type=int, default=30, help="judgements spread over")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--slug", default="generated-load", help="replaced if it exists")
        parser.add_argument(
            "--keep-indexes",
            action="store_true",
            help="add rows to the tables' indexes as they come instead of dropping and"
            " rebuilding them (slower for large loads, but other sessions can keep using"
            " the tables meanwhile)",
        )

    def handle(self, *args, **options):
        plan = LoadPlan(
            queries=options["queries"],
            hits_per_query=options["hits_per_query"],
            judgements=options["judgements"],
            result_lists=options["result_lists"],
            raters=options["raters"],
            days=options["days"],
            seed=options["seed"],
        )
        for name in ("queries", "hits_per_query", "result_lists", "raters", "days"):
            if getattr(plan, name) < 1:
                raise CommandError(f"--{name.replace('_', '-')} must be at least 1.")
        if plan.judgements < 0:
            raise CommandError("--judgements must not be negative.")
        started = time.perf_counter()

        def progress(message: str) -> None:
            elapsed = time.perf_counter() - started
            self.stdout.write(f"[{elapsed:6.1f} s] {message}")

        project = generated_project_create(
            plan=plan,
            slug=options["slug"],
            progress=progress,
            keep_indexes=options["keep_indexes"],
        )
        elapsed = time.perf_counter() - started
        self.stdout.write(self.style.SUCCESS(f"Built {project.slug} in {elapsed:.1f} s."))
