"""One query live: the endpoint's ranking now, beside a stored result list's, each hit
with its consensus grade (or marked unjudged) and, on demand, its raw JSON."""

import json
from dataclasses import dataclass, field

from judgements.engines import clients
from judgements.engines.capture import secret_of
from judgements.engines.templates import QueryValues, TemplateError, template_fill, template_parse
from judgements.models import Document, Hit, Query, ResultList, SearchEndpoint, SearchTemplate
from metrics import selectors, sources

MAX_RAW = 20_000


@dataclass(frozen=True)
class LiveHit:
    rank: int
    external_id: str
    title: str
    score: float | None
    grade: float | None
    other_rank: int | None  # Its rank in the other list, if there.
    raw: str = ""

    @property
    def judged(self) -> bool:
        return self.grade is not None


@dataclass
class LiveView:
    endpoint: SearchEndpoint
    query: Query
    template: SearchTemplate
    result_list: ResultList | None
    live: list[LiveHit] = field(default_factory=list)
    stored: list[LiveHit] = field(default_factory=list)
    error: str = ""
    status: int | None = None
    sent: clients.Sent | None = None

    @property
    def unjudged(self) -> int:
        return sum(not hit.judged for hit in self.live)


def live_query(
    *,
    endpoint: SearchEndpoint,
    query: Query,
    template: SearchTemplate | None = None,
    result_list: ResultList | None = None,
) -> LiveView:
    """Ask the endpoint for ``query`` now (the current template unless given)."""
    template = template or endpoint.template
    view = LiveView(endpoint, query, template, result_list)
    stored = _stored(result_list, query)
    try:
        parsed = template_parse(template.body, kind=endpoint.kind)
        body = template_fill(
            parsed,
            QueryValues(query.text, query.description, query.external_id),
            depth=endpoint.depth,
        )
        engine = clients.engine_open(endpoint, secret_of(endpoint))
        try:
            view.sent = engine.describe(body)
            [answer] = clients.search_all(engine, [body], concurrency=1)
        finally:
            engine.close()
    except (clients.EngineUnavailable, TemplateError) as error:
        view.error, view.status = str(error), getattr(error, "status", None)
        answer = None
    except Exception as error:  # A secret that cannot be read, and the like.
        view.error = str(error) or type(error).__name__
        answer = None
    if answer is not None and answer.failed:
        view.error, view.status = answer.error, answer.status
    hits = answer.hits if answer is not None and not answer.failed else []
    grades = _grades(endpoint, query, [h.external_id for h in hits] + [k for k, _, _ in stored])
    stored_ranks = {key: rank for rank, (key, _, _) in enumerate(stored, start=1)}
    live_ranks = {hit.external_id: rank for rank, hit in enumerate(hits, start=1)}
    view.live = [
        LiveHit(
            rank,
            hit.external_id,
            hit.document.title,
            hit.score,
            grades.get(hit.external_id),
            stored_ranks.get(hit.external_id),
            json.dumps(hit.raw, indent=2, ensure_ascii=False)[:MAX_RAW],
        )
        for rank, hit in enumerate(hits, start=1)
    ]
    view.stored = [
        LiveHit(rank, key, title, score, grades.get(key), live_ranks.get(key))
        for rank, (key, title, score) in enumerate(stored, start=1)
    ]
    return view


def _stored(result_list: ResultList | None, query: Query) -> list[tuple[str, str, float | None]]:
    if result_list is None:
        return []
    hits = Hit.objects.filter(result_list=result_list, query=query).order_by("rank")
    return list(hits.values_list("document__external_id", "document__title", "score"))


def _grades(endpoint: SearchEndpoint, query: Query, keys: list[str]) -> dict[str, float]:
    """The consensus grade of each named document for the query (judged ones only)."""
    project = endpoint.project
    fresh = sources.grades_freshness(project.pk, as_of=None)
    pairs = selectors.pair_grades(
        project.pk, fresh=fresh, policy=project.consensus, query_ids=[query.pk]
    )
    by_id = dict(zip(pairs.document_ids.tolist(), pairs.grades.tolist(), strict=True))
    ids = Document.objects.filter(project=project, external_id__in=set(keys))
    return {key: by_id[pk] for key, pk in ids.values_list("external_id", "id") if pk in by_id}
