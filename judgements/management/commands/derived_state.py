import time

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from judgements.derived import oracles
from judgements.derived.rebuild import repair
from judgements.models import Project

SHOWN_PER_TABLE = 20


class Command(BaseCommand):
    help = (
        "Recompute every derived table (pair grades, packed summaries, the rating pool and "
        "its tallies, the latest metric points, revision counts) from the judgement log, "
        "the hits and the projects, and report each row that differs; exit status 1 if "
        "any does. --rebuild repairs them, then checks again."
    )

    def add_arguments(self, parser):
        action = parser.add_mutually_exclusive_group(required=True)
        action.add_argument("--check", action="store_true", help="report differences")
        action.add_argument("--rebuild", action="store_true", help="repair, then check")
        parser.add_argument("--project", help="one project's slug (default: every project)")

    def handle(self, *args, **options):
        projects = Project.objects.order_by("slug")
        if options["project"]:
            projects = projects.filter(slug=options["project"])
            if not projects.exists():
                raise CommandError(f'There is no project with the slug "{options["project"]}".')
        differing = 0
        for project in projects:
            if options["rebuild"]:
                started = time.perf_counter()
                with transaction.atomic():
                    Project.objects.select_for_update().get(pk=project.pk)
                    repair(project.pk)
                seconds = time.perf_counter() - started
                self.stdout.write(f"{project.slug}: rebuilt in {seconds:.1f} s")
            differing += self._check(project)
        if differing:
            raise SystemExit(1)

    def _check(self, project) -> int:
        """Report the project's differences; return how many there were."""
        started = time.perf_counter()
        per_table: dict[str, int] = {}
        for difference in oracles.differences(project):
            shown = per_table.get(difference.table, 0)
            per_table[difference.table] = shown + 1
            if shown < SHOWN_PER_TABLE:
                self.stdout.write(
                    f"{project.slug}: {difference.table} {_key(difference.key)}: "
                    f"stored {_row(difference.stored)}, recomputed {_row(difference.expected)}"
                )
        seconds = time.perf_counter() - started
        if not per_table:
            message = f"{project.slug}: every derived table matches ({seconds:.1f} s)"
            self.stdout.write(self.style.SUCCESS(message))
            return 0
        counts = ", ".join(f"{table} {count:,}" for table, count in per_table.items())
        self.stdout.write(self.style.ERROR(f"{project.slug}: rows differ: {counts}"))
        return sum(per_table.values())


def _key(key: tuple) -> str:
    return "(" + ", ".join(map(str, key)) + ")"


def _row(row: tuple | None) -> str:
    if row is None:
        return "missing"
    return "(" + ", ".join(_value(value) for value in row) + ")"


def _value(value) -> str:
    if isinstance(value, bytes):
        return f"{len(value)} bytes {value[:16].hex()}{'...' if len(value) > 16 else ''}"
    return repr(value)
