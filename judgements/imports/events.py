"""Importing judgements: every format's grades appended to the log as events with
``source=import``, under the file's raters, the project's import rater or Quepid's
accounts (anonymous ones the import rater's, an AI judge's a machine judge's)."""

import uuid
from collections import Counter

import numpy as np
from django.contrib.auth.models import Group, User
from django.db import transaction
from django.db.models.functions import Lower
from django.utils import timezone

from config import pgcopy
from judgements import importers
from judgements.derived import pairs
from judgements.importers import ImportRejected, JudgementBlock, LineError, Vocabulary
from judgements.imports.book_raters import BookRaters
from judgements.imports.common import (
    ImportResult,
    Summary,
    add_documents_by_key,
    add_queries,
    created_notes,
    import_rows,
    upload_chunks,
    vocabulary_for,
)
from judgements.models import Judgement, Project
from judgements.roles import Role
from judgements.staging import Staging, copy_value
from metrics.refresh import metrics_schedule_refresh


@transaction.atomic
def judgement_import(
    *,
    project: Project,
    upload,
    file_format: str,
    uploaded_by,
    query_map=None,
    create_missing: bool = False,
) -> ImportResult:
    """Append the judgements of an upload as events with ``source=import``; all or nothing.

    All rows share one new ``import_id``. Formats with one grade per pair and no rater
    (Quepid CSV, qrels, RRE, LTR, OpenSearch) go to the project's import rater (see
    ``import_rater``), with a note naming the format and ``uploaded_by``. Event files
    name active raters (or the import rater) and keep their times, which may not be
    later than now; an event whose ``id`` the project has imported before, or equal
    to an event it holds already, is skipped, so sending a file twice adds nothing.
    A Quepid book's judgements go to rater accounts matched (or created) by e-mail;
    its anonymous ones to the import rater, and its AI judges' to a machine judge, as
    events of source "machine" (``judgements.imports.book_raters``).

    With ``create_missing``, documents (and qrels query ids) the project lacks are
    created instead of refused. A file with no judgement in it is refused.
    """
    spec = importers.JUDGEMENT_FORMATS[file_format]
    vocabulary = vocabulary_for(
        project, query_map=query_map, documents=True, raters=spec.raters == "file"
    )
    vocabulary.create_missing = create_missing
    rater = import_rater(project) if spec.raters != "accounts" else None
    if spec.raters == "file":
        vocabulary.raters[rater.get_username()] = rater.pk
        rater = None
    uploader = uploaded_by.get_username() if uploaded_by else "a management command"
    note = f"Imported from {file_format} by {uploader}" if rater else ""
    writer = _JudgementWriter(project, vocabulary, spec, rater.pk if rater else None, note)
    summary = Summary()
    rows = import_rows(summary.rows(spec.parse(upload_chunks(upload), vocabulary)), writer.write)
    if not rows:
        raise ImportRejected([LineError(None, None, _nothing_message(summary.skipped))], 1)
    created = writer.finish()
    summary.notes += created_notes(writer.created, writer.account_names)
    summary.notes += writer.book.notes() if writer.book else []
    if skipped := rows - created:
        summary.skipped["already imported"] = skipped
    metrics_schedule_refresh(project_id=project.pk, query_ids=sorted(writer.query_ids))
    rater_name = rater.get_username() if rater else ""
    return summary.result(rows=rows, created=created, import_id=writer.import_id, rater=rater_name)


def _nothing_message(skipped: Counter) -> str:
    left_out = ", ".join(f"{count:,} {reason}" for reason, count in skipped.items())
    return "The file holds no judgements" + (f" (skipped: {left_out})." if left_out else ".")


JUDGEMENT_COLUMNS = {
    "query_id": "bigint",
    "document_id": "bigint",
    "rater_id": "integer",
    "kind": "varchar(16)",
    "grade": "smallint",
    "note": "text",
    "created_at": "timestamptz",
    "source": "varchar(16)",
    "import_id": "uuid",
    "source_event_id": "varchar(200)",
    "timed": "boolean",
}
# An event is imported once: by its id in the project, and (when the file dates it)
# by being equal to one the project holds.
NEW_EVENTS = """
SELECT {names} FROM {table} s
WHERE NOT EXISTS (
    SELECT FROM judgements_judgement j JOIN judgements_query q ON q.id = j.query_id
    WHERE s.source_event_id <> '' AND j.source_event_id <> '' AND q.project_id = %(project)s
      AND j.source_event_id = s.source_event_id)
  AND NOT (s.timed AND EXISTS (
    SELECT FROM judgements_judgement j
    WHERE j.query_id = s.query_id AND j.document_id = s.document_id
      AND j.rater_id = s.rater_id AND j.created_at = s.created_at AND j.kind = s.kind
      AND j.grade IS NOT DISTINCT FROM s.grade))
ORDER BY query_id, document_id"""
# Pair formats (Quepid CSV, qrels, ...) give grades of the import rater and nothing
# else of their own: every row is a new event, and only its pair, grade and rater are
# staged (the rater, so that Staging locks it as it locks the query and document).
PAIR_COLUMNS = {
    "query_id": "bigint",
    "document_id": "bigint",
    "rater_id": "integer",
    "grade": "smallint",
}
ALL_PAIRS = """
SELECT query_id, document_id, rater_id, %(kind)s, grade, %(note)s, %(now)s, %(source)s,
       %(import_id)s, ''
FROM {table} ORDER BY query_id, document_id"""


class _JudgementWriter:
    def __init__(self, project, vocabulary: Vocabulary, spec, rater_id: int | None, note: str):
        self.project, self.vocabulary, self.spec = project, vocabulary, spec
        self.rater_id, self.note, self.query_ids, self.created = rater_id, note, set(), Counter()
        self.import_id, self.now = uuid.uuid4(), timezone.now()
        self.accounts: dict[str, int] = {}
        self.account_names: list[str] = []
        self.pairs = spec.raters == "import"
        self.staging = Staging(Judgement, PAIR_COLUMNS if self.pairs else JUDGEMENT_COLUMNS)
        self.staged = 0
        accounts = spec.raters == "accounts"
        self.book = BookRaters(project, lambda: import_rater(project)) if accounts else None

    def write(self, items) -> None:
        rows = [item for item in items if not isinstance(item, JudgementBlock)]
        blocks = [item for item in items if isinstance(item, JudgementBlock)]
        self.staged += len(rows) + sum(len(block) for block in blocks)
        if rows:
            self._write_rows(rows)
        for block in blocks:
            self._write_block(block)

    def _write_rows(self, rows) -> None:
        self.created["documents"] += add_documents_by_key(self.project, self.vocabulary, rows)
        self.created["queries"] += add_queries(self.project, self.vocabulary, rows, self.spec)
        if self.book:
            self._add_accounts(rows)
            rows = [self.book.resolved(row) for row in rows]
        queries, documents = self.vocabulary.qids, self.vocabulary.documents
        resolved = [
            (
                row.query_id or queries[row.query_key],
                row.document_id or documents[row.document_key],
                row,
            )
            for row in rows
        ]
        self.query_ids.update(query for query, _, _ in resolved)
        if self.pairs:
            self._copy_pairs(resolved)
            return
        # Formatting in Python is the slow part of an import: what every row shares
        # is formatted once per batch.
        # A Quepid book's AI judgements are a machine judge's events (see book_raters).
        sources = (Judgement.Source.IMPORT, Judgement.Source.MACHINE)
        fixed = [f"{source.value}\t{self.import_id}" for source in sources]
        note, now = copy_value(self.note), copy_value(self.now)
        self.staging.copy(
            f"{query}\t{document}\t{self._rater(row)}\t{row.kind}\t"
            f"{copy_value(row.grade)}\t{copy_value(row.note) if row.note else note}\t"
            f"{copy_value(row.created_at) if row.created_at else now}\t"
            f"{fixed[bool(row.machine_judge)]}\t"
            f"{copy_value(row.event_id)}\t{'t' if row.created_at else 'f'}\n"
            for query, document, row in resolved
        )

    def _copy_pairs(self, resolved) -> None:
        for _, _, row in resolved:
            own = row.rater_id or row.rater_key or row.note or row.created_at or row.event_id
            if own or row.kind != "grade":
                raise TypeError("A pair format's rows are grades of the import rater alone.")
        rater = self.rater_id
        self.staging.copy(
            f"{query}\t{document}\t{rater}\t{row.grade}\n" for query, document, row in resolved
        )

    def _write_block(self, block: JudgementBlock) -> None:
        """A block's rows in COPY's binary format, laid out by numpy."""
        if not self.pairs:
            raise TypeError("A JudgementBlock holds grades of the import rater.")
        self.query_ids.update(np.unique(block.query_ids).tolist())
        data = pgcopy.binary_copy_data(
            [
                (block.query_ids, "bigint"),
                (block.document_ids, "bigint"),
                (np.full(len(block), self.rater_id), "integer"),
                (block.grades, "smallint"),
            ]
        )
        self.staging.copy_binary(data)

    def _rater(self, row) -> int:
        return row.rater_id or (self.accounts[row.rater_key] if row.rater_key else self.rater_id)

    def finish(self) -> int:
        """Write the new events; return how many there were."""
        names = ", ".join(name for name in JUDGEMENT_COLUMNS if name != "timed")
        select = (ALL_PAIRS if self.pairs else NEW_EVENTS).format(
            names=names, table=self.staging.table
        )
        shared = {
            "project": self.project.pk,
            "kind": Judgement.Kind.GRADE.value,
            "note": self.note,
            "now": self.now,
            "source": Judgement.Source.IMPORT.value,
            "import_id": self.import_id,
        }

        def insert() -> int:
            return self.staging.insert(names.split(", "), select, shared)

        if self.staging.empty:
            return 0
        # A large import recounts the pairs it touched once, set-based; a small one
        # leaves them to the triggers.
        graded_by = (self.rater_id, self.now) if self.pairs else None
        created = pairs.insert_counted(
            self.project.pk, self.staging.table, insert, self.staged, graded_by
        )
        if self.book:
            self.book.answers_record(self.import_id)
        return created

    def _add_accounts(self, rows) -> None:
        keys = {row.rater_key for row in rows if row.rater_key} - set(self.accounts)
        if not keys:
            return
        found = _accounts_for(keys)
        missing = sorted(keys - set(found))
        refused = [key for key, user in found.items() if not _may_rate(user)]
        if refused:
            message = f"These users are not active raters: {', '.join(refused[:10])}."
            raise ImportRejected([LineError(None, "user_email", message)], 1)
        for key in missing:
            found[key] = _account_create(key)
        self.accounts.update({key: user.pk for key, user in found.items()})
        self.created["raters"] += len(missing)
        self.account_names += missing


def _accounts_for(keys: set[str]) -> dict[str, User]:
    """Users whose e-mail is one of ``keys`` (lower-case e-mail addresses)."""
    users = User.objects.annotate(lower_email=Lower("email"))
    found = {}
    for user in users.filter(lower_email__in=keys).prefetch_related("groups"):
        found.setdefault(user.lower_email, user)
    return found


def _may_rate(user) -> bool:
    from judgements.roles import can_rate

    return can_rate(user)


def _account_create(key: str) -> User:
    """A rater account for a Quepid user's e-mail: no usable password until an admin
    sets one."""
    username = key[:150]
    while User.objects.filter(username__iexact=username).exists():
        username = f"{username[:140]}-{uuid.uuid4().hex[:6]}"
    user = User(username=username, email=key, is_active=True)
    user.set_unusable_password()
    user.save()
    user.groups.add(Group.objects.get(name=Role.RATER.value))
    return user


def import_rater(project: Project) -> User:
    """The user that imported judgements without a rater of their own are recorded under.

    One per project, so that an import counts as one more rater of each pair it grades
    (a second import of the same tool's grades replaces the first as that rater's
    current grades). It cannot log in and holds no role.
    """
    user, created = User.objects.get_or_create(
        username=f"import.{project.slug}",
        defaults={"first_name": "Imported", "last_name": project.name[:150], "is_active": False},
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user
