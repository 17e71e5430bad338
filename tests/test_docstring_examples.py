"""The examples in the app's docstrings (outside metrics.core, whose own test is
tests/metrics/core/test_doctests.py) run as written."""

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APPS = ("config", "judgements", "metrics", "searchlogs")
MODULES = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts)
    for app in APPS
    for path in (ROOT / app).rglob("*.py")
    if ">>> " in path.read_text() and "core" not in path.relative_to(ROOT).parts
)


def test_some_modules_outside_the_core_show_examples():
    assert "metrics.selectors" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run_as_written(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)

    assert result.failed == 0
    assert result.attempted == Path(module.__file__).read_text().count(">>> ")
