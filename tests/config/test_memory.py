"""Freed memory kept for the next computation: with the glibc variables the Dockerfile
sets (and the Makefile exports), the app's processes reuse the pages of the arrays a
recompute freed instead of faulting them in again."""

import json
import re
import subprocess
import sys

import pytest

from tests.config.test_production import ROOT, database_url, production_environment

# A process started as the app's are in production (django.setup(), DEBUG off), then a
# recompute's pattern of allocations repeated: arrays of 0.8 to 16 MB, freed together.
# It prints the page faults of one repetition after the first.
REPEATED_WORK = """
import json, resource, django
import numpy as np
django.setup()

def work():
    arrays = [np.ones(n) for n in (100_000, 500_000, 250_000, 1_000_000, 2_000_000, 500_000)]
    del arrays

def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

work()
before = faults()
for _ in range(10):
    work()
print(json.dumps((faults() - before) / 10))
"""


def deployed_malloc_variables() -> dict[str, str]:
    """The MALLOC_* variables of the Dockerfile's ENV lines."""
    text = (ROOT / "Dockerfile").read_text()
    return dict(re.findall(r"\b(MALLOC_\w+_)=(\d+)", text))


def page_faults_per_repetition(variables: dict[str, str]) -> float:
    environment = production_environment(DATABASE_URL=database_url(), **variables)
    for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"):
        if name not in variables:
            environment.pop(name, None)
    run = subprocess.run(
        [sys.executable, "-c", REPEATED_WORK],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(run.stdout.splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc only")
def test_an_app_process_reuses_the_pages_its_arrays_freed():
    # 35 MB of arrays are allocated and freed each repetition (8,500 pages of 4 KiB);
    # with glibc's defaults about 3,700 of those pages are faulted in again each time.
    deployed = deployed_malloc_variables()
    assert set(deployed) == {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"}
    assert page_faults_per_repetition({}) > 1_000, "glibc's defaults returned the pages"
    assert page_faults_per_repetition(deployed) < 50
