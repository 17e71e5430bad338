"""Query vocabulary for hits and judgements: chainable filters and annotations."""

from django.db import models
from django.db.models import Count, Max, Min, StdDev

from judgements.roles import can_rate, is_analyst

CONSENSUS_POLICIES = ("mean", "median", "majority", "quepid")

# Machine judges' events (source "machine") count in no human number until machine grades
# may enter the consensus (issue 17, phase B): the triggers' functions (migration 0015),
# the SQL that replays the log and ``JudgementQuerySet.human()`` all apply this one rule.
HUMAN_EVENT_SQL = "{alias}.source <> 'machine'"


class ConsensusGrade(models.Aggregate):
    """The consensus of a group's grades under one policy: the SQL function
    ``judgements_consensus`` of migration 0005, which equals ``metrics.core.consensus``
    bit for bit, fed the sorted grades, their sum and their most frequent value (ties
    to the lowest, as ``mode()`` over ascending grades keeps the first it meets)."""

    name = "consensus"
    output_field = models.FloatField()
    template = (
        "judgements_consensus('%(policy)s', "
        "array_agg(%(expressions)s ORDER BY %(expressions)s), sum(%(expressions)s), "
        "mode() WITHIN GROUP (ORDER BY %(expressions)s))"
    )

    def __init__(self, expression, *, policy: str):
        if policy not in CONSENSUS_POLICIES:
            raise ValueError(f"policy must be one of {CONSENSUS_POLICIES}, not {policy!r}")
        # The policy is one of the names above, so it is safe to write into the SQL.
        super().__init__(expression, policy=policy)


class HitQuerySet(models.QuerySet):
    def for_project(self, project):
        return self.filter(result_list__project=project)

    def in_pool(self, depth: int):
        return self.filter(rank__lte=depth)


class JudgementQuerySet(models.QuerySet):
    def for_project(self, project):
        return self.filter(query__project=project)

    def for_query(self, query):
        return self.filter(query=query)

    def as_of(self, moment):
        """Only events recorded at or before ``moment``: the log as it was then."""
        return self.filter(created_at__lte=moment)

    def human(self):
        """Events of human raters only: machine judges' answers left out (HUMAN_EVENT_SQL)."""
        return self.exclude(source=self.model.Source.MACHINE)

    def latest_per_rater(self):
        """Each rater's newest event per (query, document) pair: one DISTINCT ON query.

        The newest event may be a "can't tell" or a retraction; callers that want
        grades chain ``.graded()`` on ``current_grades()`` instead.
        """
        return self.order_by("query_id", "document_id", "rater_id", "-created_at", "-id").distinct(
            "query_id", "document_id", "rater_id"
        )

    def current_grades(self):
        """Each human rater's current grade per pair, leaving out can't-tell and retracted
        answers (and machine judges, see ``human``)."""
        latest = self.human().latest_per_rater().values("id")
        return self.model.objects.filter(id__in=latest, kind=self.model.Kind.GRADE)

    def consensus(self, policy: str = "mean"):
        """One row per judged pair: the consensus grade of the raters' current grades.

        ``policy`` is mean, median, majority or quepid (see metrics/core/consensus.py).

        Rows carry ``query_id``, ``document_id``, ``consensus``, ``raters`` (how many
        current grades), ``min_grade``, ``max_grade`` and ``spread`` (their standard
        deviation), in one query.
        """
        return (
            self.current_grades()
            .order_by()
            .values("query_id", "document_id")
            .annotate(
                consensus=ConsensusGrade("grade", policy=policy),
                raters=Count("id"),
                min_grade=Min("grade"),
                max_grade=Max("grade"),
                spread=StdDev("grade"),
            )
            .order_by("query_id", "document_id")
        )

    def visible_to(self, user):
        """Events ``user`` may read: every event for an analyst, their own for a rater."""
        if is_analyst(user):
            return self
        if can_rate(user):
            return self.filter(rater=user)
        return self.none()

    def still_current(self):
        """Events that no later event of the same rater on the same pair has replaced.

        Unlike ``latest_per_rater`` (one DISTINCT ON over every event), each row is
        checked with an index probe, so a page of a long history reads only that page.
        """
        later = self.model.objects.filter(
            query=models.OuterRef("query"),
            document=models.OuterRef("document"),
            rater=models.OuterRef("rater"),
        ).filter(
            models.Q(created_at__gt=models.OuterRef("created_at"))
            | models.Q(created_at=models.OuterRef("created_at"), id__gt=models.OuterRef("id"))
        )
        return self.filter(~models.Exists(later))
