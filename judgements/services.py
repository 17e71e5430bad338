"""Recording raters' answers: one event, a page of them, an undo, each after its checks.

Imports are ``judgements.imports``; whole projects at once, ``judgements.loads``."""

import datetime as dt
from datetime import datetime

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from judgements import queue
from judgements.models import Document, Judgement, Project, Query
from judgements.roles import can_rate
from metrics.refresh import metrics_schedule_refresh


@transaction.atomic
def judgement_record(
    *,
    rater,
    query: Query,
    document: Document,
    grade: int | None,
    kind: str = Judgement.Kind.GRADE,
    note: str = "",
    source: str = Judgement.Source.WEB,
    created_at: datetime | None = None,
) -> Judgement:
    """Append one judgement event after checking the rater, the pair and the grade.

    Raises ``ValidationError`` and writes nothing when the user may not rate, the
    document belongs to another project than the query, or the grade is outside the
    project's scale.
    """
    if not can_rate(rater):
        raise ValidationError({"rater": f"{rater.get_username()} does not have the rater role."})
    judgement = Judgement(
        query=query,
        document=document,
        rater=rater,
        kind=kind,
        grade=grade,
        note=note,
        source=source,
    )
    if created_at is not None:
        judgement.created_at = created_at
    # The query, document and rater are rows already read, so the foreign keys are
    # not looked up again; clean() checks what the two check constraints say (and the
    # database still enforces them).
    judgement.full_clean(exclude={"query", "document", "rater"}, validate_constraints=False)
    judgement.save()
    metrics_schedule_refresh(project_id=query.project_id, query_ids=[query.pk])
    return judgement


# A second copy of the same answer this soon is a double click or a resubmitted form.
DUPLICATE_WINDOW = dt.timedelta(seconds=1)


class NotRateable(ValidationError):
    """The rater may not rate the project (the API answers 404, as for no project)."""


class PairComplete(ValidationError):
    """The pair already has the grades it needs from other raters (see queue.pair_has_room)."""


@transaction.atomic
def judgement_submit(
    *,
    rater,
    project: Project,
    query: Query,
    document: Document,
    kind: str,
    grade: int | None,
    note: str = "",
    source: str = Judgement.Source.WEB,
    deduplicate: bool = True,
) -> tuple[Judgement, bool]:
    """Record a rater's answer (rating pages or API); return it and whether it is new.

    Refuses (``ValidationError``, nothing written) a rater who may not rate the project
    and a pair that is not one of the project's hits. With ``deduplicate`` (the rating
    pages), the same answer to the same pair again within ``DUPLICATE_WINDOW`` returns
    the first event instead of a second one; API clients get an event per post and
    read the log to avoid repeats. The rater's lease on the pair is released.

    A new answer to a pair that already has its ``judges_per_pair`` grades from other
    raters (the queue's rule, leases included) is refused with ``PairComplete``; a
    rater may always change their own answer, and retract it.
    """
    _check_rating_allowed(rater, project, query, document)
    if deduplicate:
        # Serialise this rater's submissions, so that two copies of one post cannot
        # both pass the duplicate check below.
        User.objects.select_for_update(no_key=True).filter(pk=rater.pk).first()
        newest = _newest_event(rater, query, document)
        if (
            newest is not None
            and (newest.kind, newest.grade) == (kind, grade)
            and timezone.now() - newest.created_at < DUPLICATE_WINDOW
        ):
            return newest, False
    # Asked of a retraction too: the check locks the pair's row before the triggers lock
    # its pair grades, and a retraction that skipped it deadlocked with a grade of the
    # same pair (found by 100 raters at once, tests/judgements/test_derived_state.py).
    has_room = queue.pair_has_room(
        rater=rater, project=project, query_id=query.pk, document_id=document.pk
    )
    if kind != Judgement.Kind.RETRACT and not has_room:
        raise PairComplete(
            f"This pair already has the {project.judges_per_pair} grade(s) it needs from "
            "other raters; ask for the next pair."
        )
    judgement = judgement_record(
        rater=rater,
        query=query,
        document=document,
        kind=kind,
        grade=grade,
        note=note,
        source=source,
    )
    queue.lease_release(rater=rater, query_id=query.pk, document_id=document.pk)
    return judgement, True


@transaction.atomic
def judgement_undo(*, rater, judgement: Judgement) -> Judgement:
    """Take ``judgement`` back with a new event; nothing is deleted.

    The new event repeats the rater's answer before it, or retracts the answer when
    ``judgement`` was their first. Refuses an event of another rater, and one that is
    no longer the rater's current answer (it was changed since).
    """
    if judgement.rater_id != rater.pk:
        raise ValidationError("Only your own answers can be undone.")
    User.objects.select_for_update(no_key=True).filter(pk=rater.pk).first()
    if _newest_event(rater, judgement.query, judgement.document) != judgement:
        raise ValidationError("That answer has changed since; revise it in My judgements.")
    earlier = (
        Judgement.objects.filter(rater=rater, query=judgement.query, document=judgement.document)
        .filter(
            Q(created_at__lt=judgement.created_at)
            | Q(created_at=judgement.created_at, id__lt=judgement.pk)
        )
        .order_by("-created_at", "-id")
        .first()
    )
    if earlier is None or earlier.kind == Judgement.Kind.RETRACT:
        kind, grade, note = Judgement.Kind.RETRACT, None, ""
    else:
        kind, grade, note = earlier.kind, earlier.grade, earlier.note
    return judgement_record(
        rater=rater,
        query=judgement.query,
        document=judgement.document,
        kind=kind,
        grade=grade,
        note=note,
    )


def _check_rating_allowed(rater, project: Project, query: Query, document: Document) -> None:
    is_pair = queue.pair_is_rateable(rater, project, query.pk, document.pk)
    if is_pair is None:
        raise NotRateable(f"{rater.get_username()} may not rate {project.name}.")
    in_project = query.project_id == project.pk and document.project_id == project.pk
    if not (in_project and is_pair):
        raise ValidationError(f"That query and document are not a pair of {project.name}.")


def _newest_event(rater, query: Query, document: Document) -> Judgement | None:
    events = Judgement.objects.filter(rater=rater, query=query, document=document)
    return events.current().first()


@transaction.atomic
def judgement_bulk_submit(
    *, rater, project: Project, query: Query, answers: dict[int, tuple[str, int | None]]
) -> int:
    """Record the bulk page's answers, keyed by document id, all or nothing.

    An answer equal to the rater's current one is not repeated. Returns how many
    events were written; raises ``ValidationError`` (nothing written) when any pair is
    not part of the project.
    """
    documents = Document.objects.filter(project=project).in_bulk(list(answers))
    written = 0
    for document_id, (kind, grade) in sorted(answers.items()):
        document = documents.get(document_id)
        if document is None:
            raise ValidationError(f"Document {document_id} is not part of {project.name}.")
        _check_rating_allowed(rater, project, query, document)
        newest = _newest_event(rater, query, document)
        if newest is not None and (newest.kind, newest.grade) == (kind, grade):
            continue
        judgement_record(rater=rater, query=query, document=document, kind=kind, grade=grade)
        written += 1
    return written
