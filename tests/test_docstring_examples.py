"""The examples in the app's docstrings (outside metrics.core, whose own test is
tests/metrics/core/test_doctests.py) run as written."""

from pathlib import Path

import pytest

from tests.metrics.core.test_doctests import assert_examples_run

ROOT = Path(__file__).resolve().parents[1]
APPS = ("config", "judgements", "metrics", "searchlogs")
MODULES = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts)
    for app in APPS
    for path in (ROOT / app).rglob("*.py")
    if ">>> " in path.read_text() and "core" not in path.relative_to(ROOT).parts
)


def test_some_modules_outside_the_core_show_examples():
    assert "metrics.packed_reads" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run_as_written(name):
    assert_examples_run(name)
