"""Writes that span more than one check or row: recording grades, loading data."""

from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction

from judgements.models import Document, Judgement, Query
from judgements.roles import can_rate


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
    judgement.full_clean()
    judgement.save()
    return judgement
