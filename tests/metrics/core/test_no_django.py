import ast
import subprocess
import sys
from pathlib import Path

import metrics.core

CORE = Path(metrics.core.__file__).resolve().parent
REPOSITORY = CORE.parents[1]
ALLOWED_TOP_LEVEL = {"numpy", "metrics"} | set(sys.stdlib_module_names)


def core_modules():
    return sorted(CORE.glob("*.py"))


def imported_top_level_names(path):
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_core_modules_import_only_numpy_and_the_standard_library():
    for path in core_modules():
        assert imported_top_level_names(path) <= ALLOWED_TOP_LEVEL, path.name


def test_importing_every_core_module_does_not_load_django():
    names = [f"metrics.core.{p.stem}" for p in core_modules() if p.stem != "__main__"]
    program = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "frameworks = ('django', 'rest_framework')\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in frameworks)\n"
        "print(loaded)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", program], cwd=REPOSITORY, capture_output=True, text=True, check=True
    )

    assert completed.stdout.strip() == "[]"
