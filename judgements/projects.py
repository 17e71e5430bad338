"""A project's settings: which fields an analyst sets, and the one check they pass.

The "New project" and settings pages (a ModelForm) and the projects API (a
ModelSerializer) both validate through ``Project.full_clean()``: the field
validators, the scale's rules and "no grade in use may be dropped"
(``Project.clean``), and the metric defaults as ``MetricSpec`` accepts them. So the
page and the API cannot disagree on what a valid project is.
"""

import copy
import dataclasses

from judgements.models import Project
from metrics.registry import MetricSpec

GENERAL_FIELDS = [
    "name",
    "slug",
    "description",
    "scale",
    "guidelines",
    "cant_tell_text",
    "judges_per_pair",
    "pool_depth",
]


def metric_default_fields() -> list[str]:
    """The project's fields that hold its metric defaults, in ``MetricSpec``'s order.

    A ``MetricSpec`` parameter is stored as ``metric_<name>`` (``consensus`` as
    itself); a parameter added to both flows into the page and the API unchanged.
    """
    stored = {field.name for field in Project._meta.concrete_fields}
    names = []
    for spec_field in dataclasses.fields(MetricSpec):
        for name in (f"metric_{spec_field.name}", spec_field.name):
            if name in stored:
                names.append(name)
                break
    extra = sorted(name for name in stored if name.startswith("metric_") and name not in names)
    return names + extra


def settings_fields() -> list[str]:
    return [*GENERAL_FIELDS, *metric_default_fields()]


def project_validate(project: Project, changes: dict) -> None:
    """Raise ``ValidationError`` (by field) unless ``project`` with ``changes`` is valid.

    Checks a copy, so that a refused change leaves ``project`` as it was.
    """
    candidate = copy.copy(project)
    for name, value in changes.items():
        setattr(candidate, name, value)
    candidate.full_clean(exclude=["created_at"], validate_constraints=False)
