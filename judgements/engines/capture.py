"""Capturing a result list from an endpoint: every query (or a chosen few) sent with one
template version, as a background task with its progress on the capture's row.

What the engine returned is stored through the import services a file upload uses
(``document_import``, then ``result_list_import_hits``: the hits, read once, as the
rows a result-list JSON upload becomes, in the engine's order), in one transaction:
the rating queue and the derived tables see a captured list exactly as an uploaded
one, and nothing is half-stored.
A query that failed is left out and listed with its HTTP status and the engine's
message; when every query failed, nothing is stored and the capture says why. A try
keeps its ranking on the capture instead, out of the raters' pool, until it is kept.
"""

import gc
import io
import json
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from config.encryption import SecretsUnavailable, UnreadableSecret, unseal
from judgements.engines import clients
from judgements.engines.templates import QueryValues, TemplateError, template_fill, template_parse
from judgements.importers import HitRow, ImportRejected, LineError
from judgements.imports import document_import
from judgements.imports.result_lists import result_list_import_hits
from judgements.models import Capture, CaptureSchedule, Query, SearchEndpoint, SearchTemplate

# Failures listed on the capture: enough to see the pattern, never a second log.
MAX_FAILURES = 500
PROGRESS_SECONDS = 0.5


def capture_start(
    *,
    endpoint: SearchEndpoint,
    user,
    kind: str = Capture.Kind.MANUAL,
    name: str = "",
    template: SearchTemplate | None = None,
    query_ids: list[int] | None = None,
    baseline=None,
    schedule: CaptureSchedule | None = None,
    judge: bool = True,
) -> Capture:
    """Store a capture (or try) and queue the task that runs it once this commits."""
    from judgements.engines.tasks import capture_task

    template = template or endpoint.template
    if template is None:
        raise ValidationError("The endpoint has no request template yet.")
    queries = _queries(endpoint, query_ids)
    if not queries.exists():
        raise ValidationError("The project has no queries to send: upload queries first.")
    name = name.strip() or default_name(endpoint, kind, template)
    stores = kind in (Capture.Kind.MANUAL, Capture.Kind.SCHEDULED)
    if stores and endpoint.project.result_lists.filter(name=name).exists():
        raise ValidationError(f'The project has a result list named "{name}" already.')
    with transaction.atomic():
        capture = Capture.objects.create(
            endpoint=endpoint,
            template=template,
            kind=kind,
            schedule=schedule,
            name=name[:200],
            query_ids=sorted(query_ids or []),
            baseline=baseline,
            judge=judge,
            total=queries.count(),
            created_by=user if user is not None and user.is_authenticated else None,
        )
        transaction.on_commit(lambda: capture_task.enqueue(capture.pk))
    return capture


def default_name(endpoint: SearchEndpoint, kind: str, template: SearchTemplate) -> str:
    moment = timezone.now().strftime("%Y-%m-%d %H:%M:%S")
    label = {"scheduled": "scheduled", "try": "try", "gate": "gate"}.get(kind, "capture")
    return f"{endpoint.name} v{template.version} {label} {moment}"


def _queries(endpoint: SearchEndpoint, query_ids):
    queries = Query.objects.filter(project_id=endpoint.project_id)
    return queries.filter(pk__in=query_ids) if query_ids else queries


def secret_of(endpoint: SearchEndpoint) -> str:
    return unseal(endpoint.secret_encrypted) if endpoint.secret_encrypted else ""


def capture_run(capture_id: int) -> str:
    """Run a queued capture to its end; returns its status."""
    claimed = Capture.objects.filter(pk=capture_id, status=Capture.Status.QUEUED).update(
        status=Capture.Status.RUNNING, started_at=timezone.now(), updated_at=timezone.now()
    )
    if not claimed:
        return "missing"
    capture = Capture.objects.select_related("endpoint__project", "template").get(pk=capture_id)
    try:
        with _collector_paused():
            ranking = _ranking(capture)
            if ranking and not capture.is_try:
                result_list_store(capture=capture, ranking=ranking)
    except (clients.EngineUnavailable, TemplateError, ValidationError) as error:
        return _fail(capture, " ".join(getattr(error, "messages", [str(error)])))
    except (SecretsUnavailable, UnreadableSecret) as error:
        return _fail(capture, str(error))
    except ImportRejected as rejected:
        return _fail(capture, "The hits could not be stored: " + _rejected(rejected))
    except Exception:
        _fail(capture, "The capture failed unexpectedly and stored nothing; see the server log.")
        raise
    if not ranking:
        return _fail(capture, _nothing_answered(capture))
    return _save(capture, status=Capture.Status.DONE, finished_at=timezone.now())


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector, off while the answers are read and stored: a thousand
    queries' hits are some 100,000 new objects, for which it sweeps the whole process
    (0.1 to 0.2 s of a capture taking 1.5), and they hold no reference cycles."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _ranking(capture: Capture) -> list:
    """Send every query; return [[query id, [hit, ...]], ...] of those answered, and
    record the failures on the capture."""
    endpoint, template = capture.endpoint, capture.template
    parsed = template_parse(template.body, kind=endpoint.kind)
    queries = list(
        _queries(endpoint, capture.query_ids)
        .order_by("id")
        .values_list("id", "text", "description", "external_id")
    )
    bodies = [
        template_fill(parsed, QueryValues(text, description, key), depth=endpoint.depth)
        for _, text, description, key in queries
    ]
    engine = clients.engine_open(endpoint, secret_of(endpoint))
    engine.trim_source, engine.reader.keep_raw = True, False
    try:
        answers = clients.search_all(
            engine, bodies, concurrency=endpoint.concurrency, progress=_progress(capture)
        )
    finally:
        engine.close()
    ranking, failures, notes, described = [], [], _Notes(), set()
    for (query_id, text, _, _), answer in zip(queries, answers, strict=True):
        if answer.failed:
            failures.append({"query": text, "status": answer.status, "message": answer.error})
            continue
        notes.add(answer, endpoint.depth)
        ranking.append([query_id, [hit_dict(hit, described) for hit in answer.hits]])
    if not any(hits for _, hits in ranking):
        ranking = []
    fields = {"failed": len(failures), "failures": failures[:MAX_FAILURES], "notes": notes.lines}
    fields["done"] = len(queries)
    _save(capture, **({"ranking": ranking} if capture.is_try else {}), **fields)
    return ranking


class _Notes:
    def __init__(self):
        self.deeper = self.duplicates = 0
        self.most = 0

    def add(self, answer, depth: int) -> None:
        if answer.returned > depth:
            self.deeper += 1
            self.most = max(self.most, answer.returned)
        self.duplicates += answer.duplicates

    @property
    def lines(self) -> list[str]:
        lines = []
        if self.deeper:
            lines.append(
                f"{self.deeper:,} queries returned more hits than the depth (up to "
                f"{self.most:,}); the first of each were kept."
            )
        if self.duplicates:
            lines.append(
                f"{self.duplicates:,} hits repeated a document already returned; dropped."
            )
        return lines


def hit_dict(hit, described: set[str]) -> dict:
    """A hit as the ranking keeps it: its id and score, and what describes its document
    (title, url, snippet, fields) unless a hit before it did (its id in ``described``).
    Only a document's first description is stored (``_document_lines``), so a try keeps
    each once, not once for every query that returned it (seven times, on Cranfield)."""
    found = {"id": hit.external_id, "score": hit.score}
    if hit.external_id in described:
        return found
    document = hit.document
    for name in ("title", "url", "snippet"):
        if getattr(document, name):
            found[name] = getattr(document, name)
    if document.fields:
        found["fields"] = document.fields
    if len(found) > 2:
        described.add(hit.external_id)
    return found


def _progress(capture: Capture):
    last = [0.0]

    def tell(done: int) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_SECONDS or done == capture.total:
            last[0] = now
            Capture.objects.filter(pk=capture.pk).update(done=done, updated_at=timezone.now())

    return tell


@transaction.atomic
def result_list_store(*, capture: Capture, ranking: list, name: str = "") -> None:
    """Store ``ranking`` (the capture's, or a try's kept) as the capture's result list:
    its documents created or updated from the hits, then the hits, all or nothing."""
    endpoint = capture.endpoint
    project = endpoint.project
    documents = _document_lines(project, ranking)
    if documents:
        document_import(project=project, upload=io.BytesIO(documents))
    result = result_list_import_hits(
        project=project,
        hits=_hit_rows(project, ranking),
        name=name or capture.name,
        engine=engine_label(capture),
        captured_at=capture.started_at or timezone.now(),
        uploaded_by=capture.created_by,
    )
    capture.result_list = result.result_list
    capture.save(update_fields=["result_list"])
    notes = [note for note in result.notes if note not in capture.notes]
    if notes:
        _save(capture, notes=[*capture.notes, *notes])


def engine_label(capture: Capture) -> str:
    endpoint = capture.endpoint
    label = (
        f"{endpoint.name} ({endpoint.get_kind_display()}, template v{capture.template.version})"
    )
    if capture.kind == Capture.Kind.SCHEDULED:
        label += " · scheduled"
    elif capture.is_try:
        label += f" · kept {capture.get_kind_display()}"
    return label


def _hit_rows(project, ranking: list):
    """The ranking's hits as the import's rows, each query's in the engine's order; a
    query deleted since the capture began is left out."""
    kept = set(Query.objects.filter(project=project).values_list("id", flat=True))
    for query_id, hits in ranking:
        if query_id not in kept:
            continue
        for rank, hit in enumerate(hits, start=1):
            score = hit["score"]
            if score is not None and not math.isfinite(score):
                yield LineError(rank, "score", "must be finite.")
                continue
            yield HitRow(rank, query_id, hit["id"], rank, score)


def _document_lines(project, ranking: list) -> bytes:
    """JSON Lines of the documents the hits describe, each merged over the stored
    document, so that a field the endpoint does not read keeps its value; empty when
    the hits carry nothing but ids."""
    described = {}
    for _, hits in ranking:
        for hit in hits:
            if len(hit) > 2:
                described.setdefault(hit["id"], hit)
    if not described:
        return b""
    stored = {
        row["external_id"]: row
        for row in project.documents.filter(external_id__in=list(described)).values(
            "external_id", "title", "url", "snippet", "image_url", "fields"
        )
    }
    lines = []
    for key, hit in described.items():
        old = stored.get(key, {})
        line = {name: hit.get(name, old.get(name, "")) for name in ("title", "url", "snippet")}
        line["image_url"] = old.get("image_url", "")
        fields = {**(old.get("fields") or {}), **hit.get("fields", {})}
        # A document the engine describes as it is stored is left alone: a scheduled
        # capture of an unchanged index writes no document.
        if old and all(old[name] == line[name] for name in line) and old["fields"] == fields:
            continue
        lines.append(json.dumps({"id": key, **line, **fields}))
    return ("\n".join(lines) + "\n").encode() if lines else b""


def _nothing_answered(capture: Capture) -> str:
    capture.refresh_from_db(fields=["failures", "failed", "total"])
    if capture.failures:
        first = capture.failures[0]
        status = f"HTTP {first['status']}: " if first.get("status") else ""
        return (
            f"Every query failed ({capture.failed:,} of {capture.total:,}), so nothing was "
            f'stored. The first: "{first["query"][:80]}": {status}{first["message"]}'
        )
    return "The engine returned no hit for any query, so nothing was stored."


def _rejected(rejected: ImportRejected) -> str:
    return " ".join(error.message for error in rejected.errors[:5])


def _fail(capture: Capture, message: str) -> str:
    return _save(capture, status=Capture.Status.FAILED, error=message, finished_at=timezone.now())


def _save(capture: Capture, **fields) -> str:
    for name, value in fields.items():
        setattr(capture, name, value)
    capture.updated_at = timezone.now()
    capture.save(update_fields=[*fields, "updated_at"])
    return capture.status
