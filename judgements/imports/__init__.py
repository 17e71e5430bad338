"""Import services: an upload's rows written all or nothing, with a summary.

A parser (``judgements.importers``) turns an upload into rows, skips and
line-numbered errors. Rows are written in batches as they come; the first error
stops the writing while parsing goes on, to report every error at once; raising
ImportRejected at the end rolls back what was written. So an import is all or
nothing, and memory stays flat for a file of any length.

Every service takes plain arguments (a project, the upload as a path, a binary file
or byte chunks, and options), so that a background task can call it as a request
does.

One module per workflow: ``catalogue`` (queries, documents), ``result_lists`` (runs),
``events`` (judgements), and ``common``, what they share.
"""

from judgements.imports.catalogue import document_import, query_import
from judgements.imports.common import ImportResult, upload_chunks
from judgements.imports.events import import_rater, judgement_import
from judgements.imports.result_lists import result_list_import

__all__ = [
    "ImportResult",
    "document_import",
    "import_rater",
    "judgement_import",
    "query_import",
    "result_list_import",
    "upload_chunks",
]
