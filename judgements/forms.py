"""Forms of the rating pages: one answer, a page of bulk answers, a project's raters."""

from django import forms
from django.contrib.auth.models import User
from django.db.models import Q

from config.ids import IdField
from judgements.models import Document, Judgement, Project, Query
from judgements.roles import Role

CANT_TELL = "cant_tell"
MAX_QUERY_CHOICES = 300
# The largest id PostgreSQL's bigint holds: a larger one is a bad post, not a lookup.


def answer_choices(project: Project) -> list[tuple[str, str]]:
    grades = [(str(step["value"]), f"{step['value']} {step['label']}") for step in project.scale]
    return [*grades, (CANT_TELL, "Can't tell")]


def parse_answer(value: str) -> tuple[str, int | None]:
    """The (kind, grade) of a validated answer choice."""
    if value == CANT_TELL:
        return Judgement.Kind.CANT_TELL, None
    return Judgement.Kind.GRADE, int(value)


class AnswerForm(forms.Form):
    """One answer to one pair: a grade on the project's scale or "can't tell", and a note."""

    query = IdField(widget=forms.HiddenInput)
    document = IdField(widget=forms.HiddenInput)
    answer = forms.ChoiceField()
    note = forms.CharField(required=False, max_length=2000, strip=True)

    def __init__(self, *args, project: Project, **kwargs):
        super().__init__(*args, **kwargs)
        self.project = project
        self.fields["answer"].choices = answer_choices(project)
        scale = project.grade_values
        self.fields["answer"].error_messages["invalid_choice"] = (
            f"%(value)s is not on this project's scale ({min(scale)}-{max(scale)}) "
            'and is not "can\'t tell".'
        )

    def clean_query(self) -> Query:
        query = Query.objects.filter(project=self.project, pk=self.cleaned_data["query"]).first()
        if query is None:
            raise forms.ValidationError(f"That query is not part of {self.project.name}.")
        query.project = self.project  # Read already: checking the grade needs its scale.
        return query

    def clean_document(self) -> Document:
        documents = Document.objects.filter(project=self.project)
        document = documents.filter(pk=self.cleaned_data["document"]).first()
        if document is None:
            raise forms.ValidationError(f"That document is not part of {self.project.name}.")
        return document

    def submission(self) -> dict:
        """Keyword arguments for ``judgement_submit``."""
        kind, grade = parse_answer(self.cleaned_data["answer"])
        data = self.cleaned_data
        return {
            "query": data["query"],
            "document": data["document"],
            "kind": kind,
            "grade": grade,
            "note": data["note"],
        }

    def error_text(self) -> str:
        return " ".join(error for errors in self.errors.values() for error in errors)


class PairForm(forms.Form):
    """A pair to skip or to look up: the query and document ids, as posted."""

    query = IdField()
    document = IdField()

    def pair(self) -> dict[str, int]:
        """The pair as ``query_id`` and ``document_id`` keyword arguments."""
        return {
            "query_id": self.cleaned_data["query"],
            "document_id": self.cleaned_data["document"],
        }

    def error_text(self) -> str:
        return " ".join(
            f"{self.fields[name].label or name}: {error}"
            for name, errors in self.errors.items()
            for error in errors
        )


class LeaseForm(PairForm):
    """The pair a rating page showed and its lease's end, which names that lease."""

    lease = forms.DateTimeField()


class BulkFilterForm(forms.Form):
    """Which pairs of a project the bulk page shows: one query, a rank depth, unjudged only."""

    # No empty choice: without one the first query is shown, as the page does.
    query = forms.ModelChoiceField(queryset=Query.objects.none(), required=False, empty_label=None)
    depth = forms.IntegerField(min_value=1, max_value=1000, required=False)
    unjudged = forms.BooleanField(required=False, label="Only unjudged")

    def __init__(self, *args, project: Project, **kwargs):
        super().__init__(*args, **kwargs)
        queries = project.queries.order_by("text")
        self.fields["query"].queryset = queries
        self.fields["depth"].initial = project.pool_depth
        if queries.count() > MAX_QUERY_CHOICES:
            # A list of thousands of queries is slow to render and no help to choose
            # from: take a query id, and let the page step to the next query instead.
            self.fields["query"].widget = forms.NumberInput()
            self.fields["query"].label = "Query id"


class BulkAnswerForm(forms.Form):
    """One optional answer per document of the page, named ``answer-<document id>``."""

    def __init__(self, *args, project: Project, document_ids: list[int], **kwargs):
        super().__init__(*args, **kwargs)
        choices = [("", "—"), *answer_choices(project)]
        for document_id in document_ids:
            self.fields[f"answer-{document_id}"] = forms.ChoiceField(
                choices=choices, required=False
            )

    def answers(self) -> dict[int, tuple[str, int | None]]:
        """(kind, grade) per document id, for the answers that were given."""
        return {
            int(name.removeprefix("answer-")): parse_answer(value)
            for name, value in self.cleaned_data.items()
            if value
        }


class ProjectRatersForm(forms.ModelForm):
    """The raters named for a project; none named means every rater may grade it."""

    class Meta:
        model = Project
        fields = ["raters"]
        widgets = {"raters": forms.CheckboxSelectMultiple}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Raters only (an import's account is inactive); one named before keeps its box.
        named = self.instance.raters.all() if self.instance.pk else User.objects.none()
        self.fields["raters"].queryset = (
            User.objects.filter(Q(groups__name=Role.RATER.value, is_active=True) | Q(pk__in=named))
            .distinct()
            .order_by("username")
        )
