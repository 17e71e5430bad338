"""GET forms of the dashboards: the metric's parameters, the moment, sorting and filtering.

Every parameter a page did not receive takes the project's default, so that
``?k=5`` changes k alone and a bare URL shows the project's own metric.
"""

import datetime as dt
from functools import cached_property, partial
from urllib.parse import urlencode

from django import forms

from config.ids import IdField
from metrics.core.consensus import policy_names
from metrics.dashboards.labels import CONSENSUS_LABELS, MEASURES, PARAMETER_LABELS, measure_label
from metrics.registry import MetricSpec, project_spec
from metrics.sources import GRADES_LABELS, Grades

# Every parameter of the metric, in MetricSpec's order: a new one needs only a label.
SPEC_FIELDS = MetricSpec.field_names()
MAX_K = 1000


def _choices(values: tuple[str, ...], labels: dict[str, str]) -> list[tuple[str, str]]:
    return [(value, labels.get(value, value)) for value in values]


def utc(moment: dt.datetime | None) -> dt.datetime | None:
    """``moment`` in UTC: PostgreSQL refuses offsets beyond 15:59 that Python accepts."""
    try:
        return moment.astimezone(dt.UTC) if moment else moment
    except OverflowError:
        raise forms.ValidationError("This moment is out of range.") from None


class ProjectDefaultsForm(forms.Form):
    """A GET form whose missing parameters take the project's metric defaults."""

    as_of = forms.DateTimeField(
        required=False,
        label="As of",
        help_text="UTC. Judgements recorded later are ignored; empty: now.",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": 1}),
    )

    def __init__(self, query_params, *, project, **kwargs):
        self.project = project
        self.submitted = {name: query_params.get(name) for name in query_params}
        defaults = {
            name: "" if value is None else str(value)
            for name, value in project_spec(project).as_dict().items()
        }
        super().__init__({**defaults, **self.submitted}, **kwargs)

    def clean_as_of(self):
        return utc(self.cleaned_data["as_of"])

    @property
    def moment(self):
        """The as-of moment asked for, or None for now."""
        return self.cleaned_data.get("as_of")

    def query_string(self, **changes) -> str:
        """The parameters this page was given, with ``changes`` (None drops one), for links."""
        params = {name: value for name, value in self.submitted.items() if name in self.fields}
        params.update(changes)
        kept = {name: value for name, value in params.items() if value is not None}
        return urlencode(kept, doseq=True)

    @property
    def metric_query_string(self) -> str:
        """Only the metric's parameters and the moment: for links to other dashboards."""
        kept = {*SPEC_FIELDS, "grades", "as_of", *MEASURE_FIELDS}
        return self.query_string(**{name: None for name in self.fields if name not in kept})


class RatersForm(ProjectDefaultsForm):
    consensus = forms.ChoiceField(choices=lambda: _choices(policy_names(), CONSENSUS_LABELS))

    field_order = ["consensus", "as_of"]

    def parameter_line(self) -> list[str]:
        return [
            "Krippendorff's alpha, ordinal metric",
            f"consensus {CONSENSUS_LABELS[self.cleaned_data['consensus']]}",
        ]


def _k_field() -> forms.IntegerField:
    return forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_K,
        label="k",
        help_text="Rank cut-off; empty: the whole list.",
    )


def _live_choices(name: str, words) -> list[tuple[str, str]]:
    return _choices(MetricSpec._choices()[name], words)


def _spec_fields() -> dict[str, forms.Field]:
    """A form field for every parameter of MetricSpec: k, then one choice per choice."""
    fields: dict[str, forms.Field] = {"k": _k_field()}
    for name in MetricSpec._choices():
        label, words = PARAMETER_LABELS[name]
        # Called on every use, so that a consensus policy registered later is a choice.
        fields[name] = forms.ChoiceField(choices=partial(_live_choices, name, words), label=label)
    return fields


# The metaclass turns the generated fields into declared fields, as if written out.
MetricFields = type(ProjectDefaultsForm)(
    "MetricFields", (ProjectDefaultsForm,), {"__module__": __name__, **_spec_fields()}
)


class MetricForm(MetricFields):
    grades = forms.ChoiceField(
        required=False,
        choices=list(GRADES_LABELS.items()),
        label="Grades from",
        help_text="Whose grades make the consensus; empty: the project's gate decides.",
    )

    field_order = [*SPEC_FIELDS, "grades", "as_of"]

    def clean_grades(self):
        from judgements.machine.gate import default_source

        return self.cleaned_data["grades"] or default_source(self.project)

    @cached_property
    def chosen_grades(self) -> Grades:
        """Whose grades count (``metrics.sources.Grades``), for ``freshness``."""
        from judgements.machine.gate import grades_of

        return grades_of(self.project, self.cleaned_data["grades"])

    def clean(self):
        cleaned = super().clean()
        if not self.errors:
            try:
                cleaned["spec"] = MetricSpec(**{name: cleaned[name] for name in SPEC_FIELDS})
            except ValueError as error:
                raise forms.ValidationError(str(error)) from error
        return cleaned

    @property
    def spec(self) -> MetricSpec:
        return self.cleaned_data["spec"]


# The measures beside NDCG a page shows: checkboxes, none by default, and a hidden field
# that keeps links' query strings as the form writes them.
MEASURE_FIELDS = ("measures", "measures_set")


class MeasuresMixin(forms.Form):
    """Which of P@k, AP@k, RR@k and ERR@k a dashboard shows beside NDCG; none by default.

    Each one shown reads every hit's grade of the lists on the page (NDCG comes from the
    stored series): on a 10,000-query project with its packed rows filled the overview
    took 0.33-0.37 s with all four against 0.11-0.13 s with NDCG alone, past the
    dashboards' 300 ms budget, so they are the user's choice, not the default."""

    measures = forms.MultipleChoiceField(
        required=False,
        choices=[(name, f"{short}@k") for name, short in MEASURES.items()],
        widget=forms.CheckboxSelectMultiple,
        label="Also show",
        help_text="Measures beside NDCG, at the same k (trec_eval's definitions).",
    )
    measures_set = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, query_params, *, project, **kwargs):
        super().__init__(query_params, project=project, **kwargs)
        chosen = []
        if "measures_set" in query_params or "measures" in query_params:
            getlist = getattr(query_params, "getlist", None)
            chosen = getlist("measures") if getlist else [query_params.get("measures", "")]
            self.submitted["measures"] = chosen
        self.data["measures"] = chosen
        self.data["measures_set"] = "1"

    @property
    def chosen_measures(self) -> list[str]:
        """The names chosen, in ``MEASURES`` order."""
        chosen = set(self.cleaned_data.get("measures") or ())
        return [name for name in MEASURES if name in chosen]


class DashboardForm(MeasuresMixin, MetricForm):
    """The metric of a dashboard page, with the measures shown beside NDCG."""

    field_order = [*SPEC_FIELDS, "measures", "grades", "as_of"]


QUERY_SORTS = {
    "query": "Query",
    "ndcg": "NDCG",
    "dcg": "DCG",
    "idcg": "IDCG",
    "judged": "Judged@k",
    "change": "Change",
}


class QueryTableForm(MeasuresMixin, MetricForm):
    q = forms.CharField(required=False, max_length=200, label="Query contains")
    # Sorting is chosen by the column headers' links; the form only carries it along.
    sort = forms.ChoiceField(
        required=False,
        choices=[(f"{sign}{key}", key) for key in QUERY_SORTS for sign in ("", "-")],
        widget=forms.HiddenInput,
    )

    field_order = ["q", *SPEC_FIELDS, "measures", "grades", "as_of"]

    def __init__(self, query_params, *, project, **kwargs):
        super().__init__(query_params, project=project, **kwargs)
        # A measure's column sorts too: its name is a sort key.
        self.fields["sort"].choices += [
            (f"{sign}{name}", name) for name in MEASURES for sign in ("", "-")
        ]

    @property
    def ordering(self) -> str:
        return self.cleaned_data.get("sort") or "ndcg"

    def columns(self) -> list[dict]:
        """Header links: a click sorts by the column, a second click reverses the order."""
        current = self.ordering
        return [
            {
                "label": label,
                "numeric": key != "query",
                "href": "?" + self.query_string(sort=f"-{key}" if current == key else key),
                "state": {key: "ascending", f"-{key}": "descending"}.get(current, "none"),
            }
            for key, label in self._sortable().items()
        ]

    def _sortable(self) -> dict[str, str]:
        """The columns in order: query, NDCG's, the measures chosen, change."""
        columns = dict(QUERY_SORTS)
        change = columns.pop("change")
        spec = self.cleaned_data.get("spec")
        for name in self.chosen_measures:
            columns[name] = measure_label(spec, name) if spec else MEASURES[name]
        return {**columns, "change": change}


class CompareForm(MetricForm):
    a = forms.TypedChoiceField(coerce=int, label="A (baseline)")
    b = forms.TypedChoiceField(coerce=int, label="B (candidate)")

    field_order = ["a", "b", *SPEC_FIELDS, "grades", "as_of"]

    def __init__(self, query_params, *, project, **kwargs):
        super().__init__(query_params, project=project, **kwargs)
        lists = list(project.result_lists.order_by("captured_at", "name"))
        choices = [(result_list.pk, result_list.name) for result_list in lists]
        self.fields["a"].choices = self.fields["b"].choices = choices
        # Without a choice, compare the two most recent result lists.
        if len(lists) >= 2:
            self.data.setdefault("a", str(lists[-2].pk))
            self.data.setdefault("b", str(lists[-1].pk))

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("a") is not None and cleaned.get("a") == cleaned.get("b"):
            raise forms.ValidationError("Choose two different result lists to compare.")
        return cleaned


class ComparePageForm(MeasuresMixin, CompareForm):
    """The comparison page's form: the API's, with the measures shown beside NDCG."""

    field_order = ["a", "b", *SPEC_FIELDS, "measures", "grades", "as_of"]


class GateForm(CompareForm):
    """The comparison, and the largest fall of the mean that still passes (the API's gate)."""

    max_drop = forms.FloatField(
        required=False,
        min_value=0,
        help_text="Fail when B's mean is lower than A's by more than this (e.g. 0.01); "
        "empty: no verdict.",
    )
    alpha = forms.FloatField(
        required=False,
        min_value=0,
        max_value=1,
        help_text="The randomisation test's level for the verdict (0 < alpha < 1); default 0.05.",
    )

    def clean_alpha(self):
        alpha = self.cleaned_data["alpha"]
        if alpha is None:
            return 0.05
        if not 0 < alpha < 1:
            raise forms.ValidationError("alpha must lie strictly between 0 and 1.")
        return alpha


class SeriesForm(MetricForm):
    """Which stored series (the metric's name), the points' time range and the format."""

    as_of = forms.DateTimeField(
        required=False, help_text="UTC. Only points as of this moment or earlier; empty: all."
    )
    since = forms.DateTimeField(
        required=False, help_text="UTC. Only points as of this moment or later; empty: all."
    )
    format = forms.ChoiceField(
        required=False, choices=[("json", "JSON"), ("csv", "CSV")], help_text="Default: json."
    )

    def clean_since(self):
        return utc(self.cleaned_data["since"])


class UnjudgedForm(ProjectDefaultsForm):
    k = _k_field()

    field_order = ["k", "as_of"]


class GradeRequestForm(forms.Form):
    """Which disputed pairs to send back to the queue: one (query and document) or all."""

    query = IdField(required=False)
    document = IdField(required=False)
    all = forms.BooleanField(required=False)

    def clean(self):
        cleaned = super().clean()
        one = cleaned.get("query") is not None and cleaned.get("document") is not None
        if not self.errors and cleaned.get("all") == one:
            raise forms.ValidationError("Choose either one pair (query and document) or all.")
        return cleaned
