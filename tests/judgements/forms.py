"""What the project settings form posts, built from a project (or the defaults)."""

from judgements.models import Project, default_scale
from judgements.projects import settings_fields


def project_form_data(project: Project | None = None, **changes) -> dict:
    """The settings form's fields as the page posts them, with ``changes``; ``scale``
    (a list of steps) is posted as the editor's rows."""
    project = project or Project(name="Shop search", slug="", scale=default_scale())
    values = {name: getattr(project, name) for name in settings_fields()}
    values.update(changes)
    scale = values.pop("scale")
    data = {name: "" if value is None else value for name, value in values.items()}
    data["scale-total"] = len(scale)
    for number, step in enumerate(scale):
        for column in ("value", "label", "description"):
            data[f"scale-{number}-{column}"] = step.get(column, "")
    return data
