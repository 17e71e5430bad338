import doctest
import importlib
from pathlib import Path

import pytest

import metrics.core

MODULES = sorted(
    f"metrics.core.{path.stem}"
    for path in Path(metrics.core.__file__).parent.glob("*.py")
    if path.stem != "__main__"
)


def assert_examples_run(name: str) -> None:
    """The examples in module ``name``'s docstrings all ran, as written."""
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)

    assert result.failed == 0
    # A module whose docstrings show examples ran them: none was skipped unseen.
    assert result.attempted == Path(module.__file__).read_text().count(">>> ")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run_as_written(name):
    assert_examples_run(name)


def test_the_engine_documents_itself_with_examples():
    with_examples = [
        name
        for name in MODULES
        if ">>> " in Path(importlib.import_module(name).__file__).read_text()
    ]

    assert len(with_examples) >= 5
