"""What several benchmarks do alike: raters to act as, the derived-state check, and
waiting for the machine to be quiet.

Imported after ``django.setup()`` (as ``summary`` is, the benchmarks' folder being on
the path when one runs).
"""

import time
from io import StringIO
from pathlib import Path

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


def idle_share(seconds: float) -> float:
    """The share of the machine's CPU time that was idle over the next ``seconds``
    (``/proc/stat``: every CPU's idle time against all its time)."""

    def counters() -> tuple[int, int]:
        fields = [int(value) for value in Path("/proc/stat").read_text().split()[1:11]]
        return fields[3], sum(fields)

    idle_before, total_before = counters()
    time.sleep(seconds)
    idle_after, total_after = counters()
    return (idle_after - idle_before) / max(1, total_after - total_before)


def wait_until_quiet(idle: float = 0.9, window: float = 5.0, limit: float = 180.0) -> str:
    """Wait until the CPUs were at least ``idle`` idle over a ``window`` of seconds (a
    database just built still writes and vacuums for a while), at most ``limit``
    seconds; says how long it waited and how idle the machine was."""
    start = time.perf_counter()
    share = idle_share(window)
    while share < idle and time.perf_counter() - start < limit:
        share = idle_share(window)
    waited = time.perf_counter() - start
    return f"waited {waited:.0f} s for a quiet machine: {share:.0%} idle over {window:g} s"
