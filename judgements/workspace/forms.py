"""Forms of the workspace: a project's settings with its scale editor, uploads, raters."""

from django import forms
from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe
from django.utils.text import slugify

from judgements.models import MAX_GRADES, Project, default_scale
from judgements.projects import GENERAL_FIELDS, metric_default_fields, settings_fields
from judgements.uploads import FLAG_HELP, UploadKind, json_options

SCALE_COLUMNS = ("value", "label", "description")


class ScaleEditor(forms.Widget):
    """Rows of value, label and description, posted as ``scale-<n>-<column>``.

    Rows come in the order posted; a row with "remove" ticked or left blank is left
    out. The page's script adds, removes and reorders rows (renumbering them); without
    it, one blank row is there to add a grade.
    """

    template_name = "judgements/widgets/scale_editor.html"

    def _render(self, template_name, context, renderer=None):
        # The form renderer searches only the apps' folders; this template lives with
        # the project's other templates, in templates/.
        return mark_safe(render_to_string(template_name, context))

    def value_from_datadict(self, data, files, name):
        if f"{name}-total" not in data:
            return None
        try:
            total = min(int(data[f"{name}-total"]), 2 * MAX_GRADES)
        except (TypeError, ValueError):
            total = 0
        rows = []
        for number in range(max(total, 0)):
            row = {column: data.get(f"{name}-{number}-{column}", "") for column in SCALE_COLUMNS}
            if data.get(f"{name}-{number}-remove") or not any(map(str.strip, row.values())):
                continue
            rows.append(row)
        return rows

    def format_value(self, value):
        return value if isinstance(value, list) else []

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        rows = [*context["widget"]["value"], dict.fromkeys(SCALE_COLUMNS, "")]
        context["widget"]["rows"] = [
            {"number": number, **{column: row.get(column, "") for column in SCALE_COLUMNS}}
            for number, row in enumerate(rows)
        ]
        context["widget"]["total"] = len(rows)
        return context


class ScaleField(forms.Field):
    """The editor's rows as a scale (``[{value, label, description}]``). Whole numbers
    are read here; every other rule is the model's (``Project.clean``)."""

    widget = ScaleEditor

    def to_python(self, value):
        if not value:
            return []
        steps, errors = [], []
        for position, row in enumerate(value, start=1):
            text = str(row.get("value", "")).strip()
            try:
                number = int(text)
            except ValueError:
                errors.append(f"Grade {position}: “{text}” is not a whole number.")
                continue
            label, description = row.get("label", ""), row.get("description", "")
            steps.append(
                {"value": number, "label": label.strip(), "description": description.strip()}
            )
        if errors:
            raise ValidationError(errors)
        return steps

    def validate(self, value):
        if not value:
            raise ValidationError("The scale needs at least two grades.")


# Shown in the guidelines' fieldset rather than among the general fields.
RATER_TEXTS = ("scale", "guidelines", "cant_tell_text")


class ProjectForm(forms.ModelForm):
    """A project's settings: the New project page and the settings page."""

    scale = ScaleField(initial=default_scale)

    class Meta:
        model = Project
        fields = settings_fields()
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2}),
            "guidelines": forms.Textarea(attrs={"rows": 14, "data-preview": "guidelines"}),
        }
        labels = {"metric_k": "k (rank cut-off)"}
        help_texts = {
            "guidelines": "Markdown, shown to raters beside every pair; the preview shows "
            "exactly what they will see.",
            "judges_per_pair": "How many raters should grade each pair (1 to 100).",
            "consensus": "How several raters' grades of a pair become one grade.",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            # The slug names the project in URLs, exports and its import rater.
            self.fields["slug"].disabled = True
            self.fields["slug"].help_text = "Fixed once the project exists."
        else:
            self.fields["slug"].required = False
            self.fields["slug"].help_text = "Letters, digits and hyphens; blank: from the name."

    def clean_slug(self):
        if self.instance.pk:
            return self.instance.slug
        slug = self.cleaned_data.get("slug") or slugify(self.cleaned_data.get("name", ""))
        if not slug:
            raise ValidationError("Give a slug of letters, digits and hyphens.")
        return slug[:100]

    @property
    def general_fields(self):
        return [self[name] for name in GENERAL_FIELDS if name not in RATER_TEXTS]

    @property
    def metric_fields(self):
        return [self[name] for name in metric_default_fields()]


class ProjectDeleteForm(forms.Form):
    """Deleting a project asks for its slug, typed, as a guard against a slip."""

    confirm = forms.CharField(label="Type the project's slug to confirm", max_length=100)

    def __init__(self, *args, project: Project, **kwargs):
        super().__init__(*args, **kwargs)
        self.project = project

    def clean_confirm(self):
        if self.cleaned_data["confirm"].strip() != self.project.slug:
            raise ValidationError(f"Type {self.project.slug} to delete this project.")
        return self.cleaned_data["confirm"]


class UploadForm(forms.Form):
    """One kind of upload: the file, its format, and the options its service takes."""

    file = forms.FileField()

    def __init__(self, *args, upload: UploadKind, **kwargs):
        kwargs.setdefault("auto_id", f"id_{upload.kind}_%s")
        super().__init__(*args, **kwargs)
        self.upload = upload
        if upload.formats:
            self.fields["format"] = forms.ChoiceField(choices=upload.format_choices())
        if "name" in upload.run_fields:
            self.fields["name"] = forms.CharField(
                max_length=200, required=False, help_text="Blank: the TREC tag or the JSON's name."
            )
        if "engine" in upload.run_fields:
            self.fields["engine"] = forms.CharField(
                max_length=200, required=False, help_text="The engine's configuration."
            )
        if "captured_at" in upload.run_fields:
            self.fields["captured_at"] = forms.DateTimeField(
                required=False,
                label="Captured at (UTC)",
                help_text="When the engine returned these hits; blank: the file's, else now.",
                widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
            )
        if upload.takes_ordinal_base:
            self.fields["ordinal_base"] = forms.TypedChoiceField(
                choices=[(1, "1 (UBI's own)"), (0, "0 (as Chorus's ESCI sample)")],
                coerce=int,
                initial=1,
                label="UBI click positions start at",
                help_text="Only for UBI records: the ordinal of a page's first hit.",
            )
        if upload.takes_query_map:
            self.fields["queries"] = forms.FileField(
                required=False,
                label="Query ids (optional)",
                help_text="A CSV with id,text saying which query each qid is; "
                "without it a qid is the query's id in this app.",
            )
        for flag in upload.flags:
            self.fields[flag] = forms.BooleanField(
                required=False,
                label=flag.replace("_", " ").capitalize(),
                help_text=FLAG_HELP.get(flag, ""),
            )

    def files_by_part(self) -> dict:
        files = {"file": self.cleaned_data["file"]}
        if self.cleaned_data.get("queries"):
            files["queries"] = self.cleaned_data["queries"]
        return files

    def options(self) -> dict:
        """The service's keyword arguments, as JSON (see UploadKind.run)."""
        skipped = ("file", "queries")
        return json_options(
            {name: value for name, value in self.cleaned_data.items() if name not in skipped}
        )


class RaterAccountForm(forms.Form):
    """A new rater: an invitation link to choose a password, or a password set now."""

    HOW = [("invite", "Invitation link: they choose a password"), ("password", "Set a password")]

    username = forms.CharField(max_length=150, validators=[UnicodeUsernameValidator()])
    first_name = forms.CharField(max_length=150, required=False, label="Name")
    how = forms.ChoiceField(choices=HOW, initial="invite", widget=forms.RadioSelect, label="")
    password = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="Only with “Set a password”.",
    )

    def clean_username(self):
        username = self.cleaned_data["username"]
        if User.objects.filter(username__iexact=username).exists():
            raise ValidationError(f"The account {username} exists already.")
        return username

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("how") == "password" and "username" in cleaned:
            password = cleaned.get("password") or ""
            user = User(username=cleaned["username"], first_name=cleaned.get("first_name", ""))
            try:
                validate_password(password, user)
            except ValidationError as error:
                self.add_error("password", error)
        return cleaned


class AccountForm(forms.Form):
    """An account an action applies to (a role, an invitation), by id."""

    user = forms.IntegerField(min_value=1, max_value=2**31 - 1)
    rater = forms.BooleanField(required=False)
