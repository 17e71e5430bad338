import os
from contextlib import nullcontext

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from judgements import importers, imports
from judgements.derived import pairs
from judgements.importers.progress import ProgressBar
from judgements.models import Project


class Command(BaseCommand):
    help = (
        "Import judgements (Quepid CSV or book, TREC qrels, RRE JSON, LTR, OpenSearch, or this "
        "app's events as JSON Lines or CSV) into a project, all or nothing. See the README."
    )

    def add_arguments(self, parser):
        parser.add_argument("project", help="project slug")
        parser.add_argument("file")
        parser.add_argument("--format", required=True, choices=sorted(importers.JUDGEMENT_FORMATS))
        parser.add_argument("--queries", help="CSV with id,text naming the qids of a qrels file")
        parser.add_argument("--user", help="the analyst recorded as uploading the file")
        parser.add_argument(
            "--create-missing",
            action="store_true",
            help="create the documents (and qrels query ids) the project lacks",
        )

    def handle(self, *args, **options):
        project = project_named(options["project"])
        uploaded_by = user_named(options["user"])
        with optional(options["queries"]) as queries:
            result = import_file(
                self,
                imports.judgement_import,
                options["file"],
                project=project,
                file_format=options["format"],
                uploaded_by=uploaded_by,
                query_map=chunks(queries),
                create_missing=options["create_missing"],
            )
        message = f"Imported {result.created} judgements as import {result.import_id}"
        self.stdout.write(self.style.SUCCESS(f"{message} (rater {result.rater or 'per row'})."))
        write_summary(self, result)


# Shared by the other import and export commands.


def project_named(slug: str) -> Project:
    try:
        return Project.objects.get(slug=slug)
    except Project.DoesNotExist:
        raise CommandError(f'No project has the slug "{slug}".') from None


def user_named(username: str | None):
    if username is None:
        return None
    try:
        return get_user_model().objects.get_by_natural_key(username)
    except get_user_model().DoesNotExist:
        raise CommandError(f'No user is named "{username}".') from None


def size(file) -> int:
    return os.fstat(file.fileno()).st_size


def optional(path: str | None):
    return open(path, "rb") if path else nullcontext()


def chunks(file):
    return iter(lambda: file.read(1 << 20), b"") if file else None


def import_file(command: BaseCommand, service, path: str, **arguments):
    """``run_import`` of the file at ``path``, read in chunks behind a progress bar; a
    large judgement import's steps past the file's end, a line each as it starts."""
    with open(path, "rb") as upload, pairs.stages_told(command.stderr.write):
        read = ProgressBar(command.stderr, total=size(upload)).chunks(upload)
        return run_import(command, service, upload=read, **arguments)


def write_summary(command: BaseCommand, result) -> None:
    """The import's skipped lines by reason, and its notes, one per line."""
    for reason, count in result.skipped.items():
        command.stdout.write(f"Skipped {count:,} lines: {reason}.")
    for note in result.notes:
        command.stdout.write(note)


def run_import(command: BaseCommand, service, **arguments):
    """Call an import service; on rejection print every error and fail the command."""
    try:
        return service(**arguments)
    except importers.ImportRejected as rejected:
        for error in rejected.errors:
            command.stderr.write(str(error))
        more = rejected.total - len(rejected.errors)
        tail = f" ({more} more not shown)" if more else ""
        raise CommandError(f"Nothing was imported: {rejected.total} errors{tail}.") from None
