"""Query vocabulary for hits and judgements: chainable filters and annotations."""

from django.db import models

from judgements.roles import can_rate, is_analyst

# Machine judges' events (source "machine") are no rater's current answer and count in no
# human number: the SQL rule judgements_current_answers (judgements/sql/pair_grades.sql),
# the SQL that replays the log and ``JudgementQuerySet.human()`` / ``current()`` all apply
# this one predicate. Grades with machine judges are chosen in judgements.machine.gate.
HUMAN_EVENT_SQL = "{alias}.source <> 'machine'"


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

    def current(self, grades=None):
        """Each human rater's current answer per (query, document) pair: their newest event,
        by ``created_at`` then ``id``, in one DISTINCT ON query (judgement_latest_idx);
        machine judges' events are no rater's answer (``human``).

        The ORM's copy of the one rule, whose SQL is ``judgements_current_answers``
        (judgements/sql/pair_grades.sql). The newest event may be a "can't tell" or a
        retraction; ``current_grades()`` keeps the grades. ``grades``
        (``metrics.sources.Grades``) lets the chosen machine judges' newest answers in
        too, or counts them alone; its default is the human raters only.
        """
        return self.of_grades(grades).newest_per_rater()

    def of_grades(self, grades=None):
        """The events of ``grades``' raters (``metrics.sources.Grades``): the human raters'
        (``human``) by default; with chosen machine judges', or theirs alone."""
        if grades is None or grades.human_only:
            return self.human()
        chosen = models.Q(rater_id__in=grades.judges)
        if grades.humans:
            chosen |= ~models.Q(source=self.model.Source.MACHINE)
        return self.filter(chosen)

    def newest_per_rater(self):
        """Each rater's newest event per pair among these events, whoever the rater."""
        ordered = self.order_by("query_id", "document_id", "rater_id", "-created_at", "-id")
        return ordered.distinct("query_id", "document_id", "rater_id")

    def current_grades(self, grades=None):
        """Each rater's current grade per pair, leaving out can't-tell and retracted answers
        (``grades``: whose, as in ``current``)."""
        latest = self.current(grades).values("id")
        return self.model.objects.filter(id__in=latest, kind=self.model.Kind.GRADE)

    def consensus(self, policy: str = "mean"):
        """One row per judged pair: the consensus under ``policy`` of the raters' current
        grades, computed by metrics.core.consensus (see judgements.consensus).

        Rows carry ``query_id``, ``document_id``, ``consensus``, ``raters`` (how many
        current grades), ``min_grade``, ``max_grade`` and ``spread`` (their standard
        deviation), read in one query.
        """
        from judgements.consensus import pair_consensus

        return pair_consensus(self, policy)

    def visible_to(self, user):
        """Events ``user`` may read: every event for an analyst, their own for a rater."""
        if is_analyst(user):
            return self
        if can_rate(user):
            return self.filter(rater=user)
        return self.none()

    def still_current(self):
        """Events that no later event of the same rater on the same pair has replaced.

        Unlike ``current`` (one DISTINCT ON over every event), each row is
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
