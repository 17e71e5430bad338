"""The forms of the engines' pages; the services check again whatever they are given."""

from django import forms

from judgements.engines.templates import default_template
from judgements.models import ResultList, SearchEndpoint

ENDPOINT_FIELDS = [
    "name",
    "kind",
    "base_url",
    "index",
    "method",
    "id_field",
    "title_field",
    "url_field",
    "snippet_field",
    "hits_path",
    "auth",
    "username",
    "timeout_seconds",
    "concurrency",
    "depth",
]


class EndpointForm(forms.ModelForm):
    kept = forms.CharField(
        label="Other fields kept",
        required=False,
        help_text="Comma-separated field names stored with each document, e.g. author, source.",
    )
    secret = forms.CharField(
        label="Password, API key or token",
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Stored encrypted and never shown again; leave empty to keep the stored one.",
    )
    template = forms.CharField(
        label="Request template",
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false", "class": "code"}),
        help_text="JSON with {{query}} where the query goes ({{description}}, "
        "{{external_id}} and {{depth}} too).",
    )

    class Meta:
        model = SearchEndpoint
        fields = ENDPOINT_FIELDS

    def __init__(self, *args, new: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        if new:
            self.fields["template"].initial = default_template("elasticsearch")
        else:
            del self.fields["template"]
            self.fields["kept"].initial = ", ".join(self.instance.kept_fields or [])
            if self.instance.has_secret:
                self.fields[
                    "secret"
                ].help_text = "A secret is stored (not shown). Type a new one to replace it."

    def service_fields(self) -> dict:
        data = {name: self.cleaned_data[name] for name in ENDPOINT_FIELDS}
        data["kept_fields"] = [
            name.strip() for name in self.cleaned_data["kept"].split(",") if name.strip()
        ]
        return data


class CaptureForm(forms.Form):
    name = forms.CharField(
        max_length=200, required=False, help_text="The result list's name; empty: a dated one."
    )
    queries = forms.CharField(
        label="Only these queries",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="External ids (or texts), one a line; empty: every query of the project.",
    )


class TryForm(forms.Form):
    template = forms.CharField(
        label="Request template",
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false", "class": "code"}),
    )
    baseline = forms.ModelChoiceField(
        ResultList.objects.none(), required=False, empty_label="(no baseline)"
    )
    note = forms.CharField(max_length=200, required=False, help_text="What this version changes.")
    queries = CaptureForm.base_fields["queries"]

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["baseline"].queryset = project.result_lists.order_by("-captured_at")


class KeepForm(forms.Form):
    name = forms.CharField(max_length=200)


class ScheduleForm(forms.Form):
    every = forms.ChoiceField(
        choices=[
            ("daily", "daily (03:00 UTC)"),
            ("weekly", "weekly (Mondays 03:00 UTC)"),
            ("cron", "cron expression"),
        ]
    )
    expression = forms.CharField(
        max_length=100,
        required=False,
        help_text="minute hour day month weekday, e.g. 30 */6 * * *",
    )
