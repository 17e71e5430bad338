"""The test suite's development settings, loaded by pytest before anything reads them.

Settings refuse to load with DEBUG off and no SECRET_KEY, and DEBUG is off unless the
environment turns it on. pytest-django reads the settings before any conftest.py is
imported, so this is a plugin named in pyproject.toml (``-p config.pytest_plugin``).
Tests of the production path start their own processes with ``DEBUG=0``.
"""

import os

os.environ.setdefault("DEBUG", "1")
