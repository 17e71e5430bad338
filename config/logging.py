"""Logging helpers named by ``LOGGING`` in the settings."""

import logging


class ClientErrorWithoutTraceback(logging.Filter):
    """Drop the traceback from the log line of a 4xx response.

    Django logs a refused request (``PermissionDenied`` for a 403, ``Http404``) with
    the exception that caused it, and so with a traceback, though nothing went wrong in
    the server; the one line saying which path was refused is what an operator needs.
    Server errors (5xx) keep theirs.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if status is not None and status < 500:
            record.exc_info = None
            record.exc_text = None
        return True
