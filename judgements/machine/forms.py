"""Forms of the machine judges' pages."""

from django import forms

from judgements.machine.prompting import PROMPT_FIELDS, template_errors
from judgements.models import MachineGate, MachineJudge, MachineRun

JUDGE_FIELDS = [
    "name",
    "base_url",
    "model",
    "api_key",
    "api_key_env",
    "prompt_template",
    "temperature",
    "concurrency",
    "timeout_seconds",
    "max_retries",
    "cost_input_per_1k",
    "cost_output_per_1k",
]


def _key_field() -> forms.CharField:
    return forms.CharField(
        label="API key",
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Stored encrypted and never shown again; or leave it empty and name a "
        "variable below (or neither, for a local server that wants no key).",
    )


class MachineJudgeForm(forms.ModelForm):
    api_key = _key_field()

    class Meta:
        model = MachineJudge
        fields = JUDGE_FIELDS
        widgets = {"prompt_template": forms.Textarea(attrs={"rows": 14})}
        help_texts = {
            "prompt_template": "Fields: "
            + ", ".join(f"{{{name}}} ({what})" for name, what in PROMPT_FIELDS.items())
            + ". Write {{ and }} for literal braces.",
        }

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.project = project

    def clean_prompt_template(self):
        # Browsers send a textarea's line breaks as CRLF: the template (and its version
        # hash) should not depend on the browser.
        template = self.cleaned_data["prompt_template"].replace("\r\n", "\n")
        if errors := template_errors(template):
            raise forms.ValidationError(errors)
        return template

    def clean(self):
        data = super().clean()
        if data.get("api_key") and data.get("api_key_env"):
            self.add_error("api_key", "Enter the key or name its variable, not both.")
        return data

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if MachineJudge.objects.filter(project=self.project, name=name).exists():
            raise forms.ValidationError(f"{self.project.name} already has a judge named {name}.")
        return name


class KeyForm(forms.Form):
    """Where a judge's key comes from: the key itself, a prefixed variable, or neither."""

    api_key = _key_field()
    api_key_env = MachineJudge._meta.get_field("api_key_env").formfield()

    def clean(self):
        data = super().clean()
        if data.get("api_key") and data.get("api_key_env"):
            raise forms.ValidationError("Enter the key or name its variable, not both.")
        return data


class RunForm(forms.ModelForm):
    class Meta:
        model = MachineRun
        fields = ["max_pairs", "max_cost"]
        labels = {"max_pairs": "Budget in pairs", "max_cost": "Budget in money"}
        help_texts = {
            "max_pairs": "Empty: every pool pair the judge has not graded.",
            "max_cost": "Stops asking once spent (in the prices' currency); empty: no cap.",
        }

    def clean_max_pairs(self):
        value = self.cleaned_data["max_pairs"]
        if value is not None and value < 1:
            raise forms.ValidationError("A budget of pairs is at least 1.")
        return value

    def clean_max_cost(self):
        value = self.cleaned_data["max_cost"]
        if value is not None and value <= 0:
            raise forms.ValidationError("A money budget is more than 0.")
        return value


class GateForm(forms.ModelForm):
    class Meta:
        model = MachineGate
        fields = ["admit", "min_alpha", "min_gold"]
        labels = {"admit": "Whose grades enter the consensus"}


class OverruleForm(forms.Form):
    judgement = forms.IntegerField(min_value=1, max_value=2**63 - 1)
    grade = forms.ChoiceField()

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        choices = [(str(s["value"]), f"{s['value']} {s['label']}") for s in project.scale]
        self.fields["grade"].choices = [*choices, ("cant_tell", "Can't tell")]

    @property
    def chosen_grade(self) -> int | None:
        value = self.cleaned_data["grade"]
        return None if value == "cant_tell" else int(value)
