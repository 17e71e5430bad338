"""What several benchmarks do alike: raters to act as, and the derived-state check.

Imported after ``django.setup()`` (as ``summary`` is, the benchmarks' folder being on
the path when one runs).
"""

from io import StringIO

from django.contrib.auth.models import Group, User
from django.core.management import call_command

from judgements.roles import Role


def raters_named(prefix: str, count: int) -> list[User]:
    """``count`` users with the rater role, ``<prefix>00`` onwards (kept between runs)."""
    group, _ = Group.objects.get_or_create(name=Role.RATER.value)
    raters = []
    for number in range(count):
        rater, _ = User.objects.get_or_create(username=f"{prefix}{number:02d}")
        rater.groups.add(group)
        raters.append(rater)
    return raters


def derived_state_clean(slug: str) -> tuple[bool, str]:
    """Whether ``manage.py derived_state --check`` finds every derived table of the
    project equal to its recomputation from the log, and what it printed."""
    output = StringIO()
    try:
        call_command("derived_state", check=True, project=slug, stdout=output)
    except SystemExit:
        return False, output.getvalue().strip()
    return True, output.getvalue().strip()
