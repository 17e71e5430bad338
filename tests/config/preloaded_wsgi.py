"""config.wsgi with the URLconf, and so every view, imported before gunicorn forks.

Django imports the URLconf on a worker's first request. On a busy machine that import
alone can outlast the few seconds of worker timeout tests/config/test_background_uploads.py
sets, and the worker is killed mid-import. Imported here, under ``--preload``, it is
done once before the fork, so the timeout measures requests only.
"""

from django.urls import get_resolver

from config.wsgi import application

get_resolver().url_patterns  # noqa: B018 (imported for its side effect)

__all__ = ["application"]
