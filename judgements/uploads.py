"""What can be uploaded into a project, and which import service takes each kind.

The upload page and the API's import endpoints both go through ``UPLOADS``, so that
a file is parsed by the one parser of its format (judgements.importers, or
searchlogs.parsing) and written by the one service of its kind, whether it runs in
the request or as a background job. Formats come from the importers' own registries,
so a format added there shows on the page without a change here. Options travel as
keyword arguments: a service's keyword-only flags (``bool`` with a default) that the
code below does not fill are offered on the page as check boxes.
"""

import datetime as dt
import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from judgements import importers, imports
from judgements.models import Job, Project
from searchlogs.services import LOG_FORMATS, search_log_ingest

# Arguments the kinds below fill themselves; any other keyword flag is an option.
FILLED = {"project", "upload", "file_format", "uploaded_by", "query_map"}
RUN_FIELDS = ("name", "engine", "captured_at")
# What an option does, in words, for the page (an option without words shows its name).
FLAG_HELP = {
    "create_missing": (
        "Create the documents and query ids the file names but the project lacks (ids "
        "only); without it they are one error and nothing is written."
    ),
}
FORMAT_LABELS = {"csv": "csv: CSV", "json": "json: JSON", "jsonl": "jsonl: JSON Lines"}


@dataclass(frozen=True)
class UploadKind:
    kind: str
    title: str
    help: str
    service: Callable
    formats: dict[str, Callable] = field(default_factory=dict)

    def format_choices(self) -> list[tuple[str, str]]:
        """(name, label) of every format the importers read for this kind."""
        return [(name, format_label(name, parser)) for name, parser in self.formats.items()]

    @property
    def parameters(self) -> dict[str, inspect.Parameter]:
        return dict(inspect.signature(self.service).parameters)

    @property
    def takes_ordinal_base(self) -> bool:
        """Whether the file's click positions may count from 0 (a UBI log's)."""
        return "ordinal_base" in self.parameters

    @property
    def takes_query_map(self) -> bool:
        """Whether a queries CSV (``id,text``) may say which query each qid is."""
        return "query_map" in self.parameters

    @property
    def run_fields(self) -> list[str]:
        """The result list's own fields the service takes (name, engine, capture time)."""
        return [name for name in RUN_FIELDS if name in self.parameters]

    @property
    def flags(self) -> list[str]:
        """The service's optional keyword flags that nothing above fills."""
        return [
            parameter.name
            for parameter in self.parameters.values()
            if parameter.kind is inspect.Parameter.KEYWORD_ONLY
            and parameter.name not in FILLED
            and parameter.name not in RUN_FIELDS
            and isinstance(parameter.default, bool)
        ]

    def run(self, *, project: Project, files: dict[str, Iterable[bytes]], user, options: dict):
        """Import ``files["file"]`` with ``options``; all or nothing (``ImportRejected``)."""
        arguments = {"project": project, "upload": files["file"], **_arguments(options)}
        if self.formats and "file_format" in self.parameters:
            arguments["file_format"] = arguments.pop("format")
        if "uploaded_by" in self.parameters:
            arguments["uploaded_by"] = user
        if self.takes_query_map:
            arguments["query_map"] = files.get("queries")
        return self.service(**arguments)


def format_label(name: str, parser: Callable) -> str:
    """``name``, with the format's label (``importers.ImportFormat``), else the first line
    of its parser's docstring when it has one."""
    if label := getattr(parser, "label", ""):
        return f"{name}: {label}"
    lines = (inspect.getdoc(parser) or "").splitlines()
    # Docstrings are reStructuredText and may point at code ("see EVENT_COLUMNS").
    text = re.sub(r";\s*see \S+$", "", lines[0].replace("``", "").rstrip(".")) if lines else ""
    return f"{name}: {text}" if text else FORMAT_LABELS.get(name, name)


def json_options(values: dict) -> dict:
    """An upload's options as JSON, to keep with its job: times as ISO 8601."""
    return {
        name: value.isoformat() if isinstance(value, dt.datetime) else value
        for name, value in values.items()
    }


def _arguments(options: dict) -> dict:
    """Options as stored (JSON) back into the service's keyword arguments."""
    arguments = dict(options)
    if arguments.get("captured_at"):
        arguments["captured_at"] = dt.datetime.fromisoformat(arguments["captured_at"])
    elif "captured_at" in arguments:
        arguments["captured_at"] = None
    return arguments


def summary(kind: str, result) -> dict:
    """What an import did, as JSON: the job's result and the page's summary."""
    if kind == Job.Kind.SEARCH_LOG:
        return {
            "rows": result.rows,
            "created": result.created,
            "skipped": result.already_stored,
            "unmatched": result.unmatched,
        }
    counts = {"rows": result.rows, "created": result.created}
    if kind == Job.Kind.QUERIES:
        counts["unchanged"] = result.rows - result.created
    elif kind == Job.Kind.DOCUMENTS:
        counts["updated"] = result.updated
    elif kind == Job.Kind.RESULT_LIST:
        counts["result_list"] = {"id": result.result_list.pk, "name": result.result_list.name}
    elif kind == Job.Kind.JUDGEMENTS:
        counts["rater"] = result.rater
    return counts


UPLOADS = {
    upload.kind: upload
    for upload in [
        UploadKind(
            Job.Kind.QUERIES,
            "Queries",
            "Queries the project already has are left as they are.",
            imports.query_import,
            importers.QUERY_FORMATS,
        ),
        UploadKind(
            Job.Kind.DOCUMENTS,
            "Documents",
            "JSON Lines, one document per line; a document with a known id is updated.",
            imports.document_import,
        ),
        UploadKind(
            Job.Kind.RESULT_LIST,
            "Result list",
            "One run of the engine; documents the project lacks are created from the hits.",
            imports.result_list_import,
            importers.RESULT_LIST_FORMATS,
        ),
        UploadKind(
            Job.Kind.JUDGEMENTS,
            "Judgements",
            "Grades from another tool, or events exported by this app.",
            imports.judgement_import,
            importers.JUDGEMENT_FORMATS,
        ),
        UploadKind(
            Job.Kind.SEARCH_LOG,
            "Search log",
            "Impressions, clicks and dwells, as this app's JSON Lines or User Behavior "
            "Insights records; events already stored are skipped.",
            search_log_ingest,
            LOG_FORMATS,
        ),
    ]
}
