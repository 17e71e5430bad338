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


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run_as_written(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)

    assert result.failed == 0
