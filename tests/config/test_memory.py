"""Freed memory kept for the next computation (config/memory.py): the app's processes
reuse the pages of the arrays a recompute freed instead of faulting them in again."""

import json
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


def page_faults_per_repetition(kept_mb: str) -> float:
    environment = production_environment(DATABASE_URL=database_url(), FREED_MEMORY_KEPT_MB=kept_mb)
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
    assert page_faults_per_repetition("0") > 1_000, "glibc's defaults returned the pages"
    assert page_faults_per_repetition("256") < 50
