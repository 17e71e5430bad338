"""Uploads parsed into rows and line-numbered errors: pure functions, no database.

A parser takes the upload as byte chunks (a large file is read a chunk at a time,
never whole; JSON is parsed as it streams in, up to 32 MB) and a ``Vocabulary`` of
what the project already knows, and yields rows, ``Skip``s and ``LineError``s in
file order. Services write the rows only if no error came out, so an import is all
or nothing. For speed, a parser may yield a ``JudgementBlock`` (many lines' rows as
columns) after the Skips of its lines; ``one_by_one`` turns it back into rows.

``FORMATS`` is the one registry of what can be imported: the API, the management
commands and the upload pages offer exactly its formats, and the README's import
section describes each (a test checks that it names them all).
"""

from collections.abc import Callable
from dataclasses import dataclass

from judgements.importers.catalogue import (
    documents_jsonl,
    queries_csv,
    queries_json,
    run_json,
    run_trec,
)
from judgements.importers.event_files import events_csv, events_jsonl
from judgements.importers.grades import ltr, qrels, quepid_csv
from judgements.importers.grades_json import opensearch_json, quepid_book, rre_json
from judgements.importers.rows import (
    DocumentRow,
    ErrorLog,
    HitRow,
    ImportRejected,
    JudgementBlock,
    JudgementRow,
    LineError,
    Note,
    QueryRow,
    RunInfo,
    Skip,
    Vocabulary,
    one_by_one,
)


@dataclass(frozen=True)
class ImportFormat:
    """One importable file format.

    ``target`` is what it fills: queries, documents, result_lists or judgements.
    For judgements, ``raters`` says whose events the rows become: ``import`` (one
    grade per pair, the project's import rater), ``file`` (each row names an
    existing rater) or ``accounts`` (raters matched or created by e-mail). For
    result lists, ``order`` is ``trec_eval`` (by score, ties by document id, both
    descending) or ``file`` (the file's own order). ``queries_by`` is how the
    format names queries: ``text`` or ``id`` (an external id).
    """

    name: str
    target: str
    label: str
    parse: Callable
    queries_by: str = "text"
    raters: str = ""
    order: str = ""


FORMATS = (
    ImportFormat("csv", "queries", "Queries CSV (text, description, id)", queries_csv),
    ImportFormat("json", "queries", "Queries JSON", queries_json),
    ImportFormat("jsonl", "documents", "Documents JSON Lines", documents_jsonl),
    ImportFormat("trec", "result_lists", "TREC run", run_trec, "id", order="trec_eval"),
    ImportFormat("json", "result_lists", "Result list JSON", run_json, order="file"),
    ImportFormat("quepid", "judgements", "Quepid ratings CSV", quepid_csv, raters="import"),
    ImportFormat("qrels", "judgements", "TREC qrels", qrels, "id", raters="import"),
    ImportFormat("rre", "judgements", "RRE ratings JSON", rre_json, raters="import"),
    ImportFormat("ltr", "judgements", "LTR / RankLib judgement list", ltr, raters="import"),
    ImportFormat(
        "opensearch", "judgements", "OpenSearch judgment list", opensearch_json, raters="import"
    ),
    ImportFormat("quepid_book", "judgements", "Quepid book JSON", quepid_book, raters="accounts"),
    ImportFormat(
        "jsonl", "judgements", "Judgement events JSON Lines", events_jsonl, raters="file"
    ),
    ImportFormat("csv", "judgements", "Judgement events CSV", events_csv, raters="file"),
)


def formats_for(target: str) -> dict[str, ImportFormat]:
    """The formats that fill ``target``, by name."""
    return {spec.name: spec for spec in FORMATS if spec.target == target}


QUERY_FORMATS = formats_for("queries")
DOCUMENT_FORMATS = formats_for("documents")
RESULT_LIST_FORMATS = formats_for("result_lists")
JUDGEMENT_FORMATS = formats_for("judgements")

__all__ = [
    "DOCUMENT_FORMATS",
    "FORMATS",
    "JUDGEMENT_FORMATS",
    "QUERY_FORMATS",
    "RESULT_LIST_FORMATS",
    "DocumentRow",
    "ErrorLog",
    "HitRow",
    "ImportFormat",
    "ImportRejected",
    "JudgementBlock",
    "JudgementRow",
    "LineError",
    "Note",
    "QueryRow",
    "RunInfo",
    "Skip",
    "Vocabulary",
    "formats_for",
    "one_by_one",
]
