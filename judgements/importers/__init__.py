"""Uploads parsed into rows and line-numbered errors: pure functions, no database.

A parser takes the upload as byte chunks (a large file is read a chunk at a time,
never whole, except JSON documents, which are capped at 32 MB) and a
``Vocabulary`` of what the project already knows, and yields rows and
``LineError``s in file order. Services write the rows only if no error came out,
so an import is all or nothing.

Formats accepted (CSV column names are case-insensitive; blank lines are skipped):

- queries ``csv``: a header with ``text`` (or ``query``), optional ``description``
  and ``id``; ``json``: a list of strings or of ``{"text", "description", "id"}``.
- documents ``jsonl``: one object per line: ``id`` (or ``external_id``, ``docid``,
  ``_id``), ``title``, ``url``, ``snippet`` (or ``text``), ``image_url``; every
  other key is kept in ``fields``.
- result lists ``trec``: ``qid Q0 docid rank score tag``, ranks from 1, one tag;
  ``json``: ``{"name", "engine", "captured_at", "queries": [{"query", "hits":
  [{"id", "score", "title", "url", "snippet"}]}]}``, ranked in list order.
- judgements ``quepid``: CSV ``query,docid,rating`` (a line with only a query, as
  Quepid writes for an unrated query, is skipped); ``qrels``: ``qid iter docid
  rel`` (``iter`` ignored); ``rre``: RRE ratings JSON (``query_groups`` at the top
  or under ``topics``, or Quepid's ``queries``; ``relevant_documents`` as
  ``{docid: {"gain": g}}``, ``{g: [docid, ...]}`` or ``[{"document_ids", "gain"}]``);
  ``ltr``: ``grade qid:N [feature:value ...] # docid query text`` as Quepid and
  RankLib write it (the query is found by its text; with no text after the docid,
  ``qid`` is read as a query id); ``jsonl`` and ``csv``: judgement events as this
  app exports them (``query``, ``document``, ``rater``, ``kind``, ``grade``,
  ``note``, ``created_at``; other columns are ignored).

Queries are named by their text, documents by their external id. A TREC ``qid``
is the app's query id unless a queries file (``id,text``) maps ids to texts.
"""

from judgements.importers.catalogue import (
    documents_jsonl,
    queries_csv,
    queries_json,
    run_json,
    run_trec,
)
from judgements.importers.grades import events_csv, events_jsonl, ltr, qrels, quepid_csv, rre_json
from judgements.importers.rows import (
    DocumentRow,
    ErrorLog,
    HitRow,
    ImportRejected,
    JudgementRow,
    LineError,
    QueryRow,
    RunInfo,
    Vocabulary,
)

QUERY_FORMATS = {"csv": queries_csv, "json": queries_json}
DOCUMENT_FORMATS = {"jsonl": documents_jsonl}
RESULT_LIST_FORMATS = {"trec": run_trec, "json": run_json}
JUDGEMENT_FORMATS = {
    "quepid": quepid_csv,
    "qrels": qrels,
    "rre": rre_json,
    "ltr": ltr,
    "jsonl": events_jsonl,
    "csv": events_csv,
}
# Formats with one grade per pair and no rater: their rows go to the import rater.
PAIR_FORMATS = {"quepid", "qrels", "rre", "ltr"}

__all__ = [
    "DOCUMENT_FORMATS",
    "JUDGEMENT_FORMATS",
    "PAIR_FORMATS",
    "QUERY_FORMATS",
    "RESULT_LIST_FORMATS",
    "DocumentRow",
    "ErrorLog",
    "HitRow",
    "ImportRejected",
    "JudgementRow",
    "LineError",
    "QueryRow",
    "RunInfo",
    "Vocabulary",
]
