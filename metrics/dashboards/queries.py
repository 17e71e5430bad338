"""The per-query table of a result list and one query's detail with its working."""

import datetime as dt
from dataclasses import dataclass

import numpy as np
from django.core.paginator import Page, Paginator
from django.db import connection

from judgements.models import Hit, Judgement, Project, Query, ResultList
from metrics import selectors
from metrics.core import NdcgResult, RankRow, ideal_grades, ndcg
from metrics.core.bounds import NdcgRange, ndcg_range
from metrics.dashboards.evaluations import Evaluation, epoch_ms, list_evaluations
from metrics.dashboards.labels import measure_label, measures_line, parameter_line
from metrics.dashboards.measures import RELEVANT_FROM, list_measures, query_measures
from metrics.dashboards.series import stored_series
from metrics.evaluate import read_depth
from metrics.registry import MetricSpec, project_spec
from metrics.revisions import Revision, query_revisions
from metrics.sources import HUMAN, Grades, Source, freshness, grades_freshness, one_snapshot

PAGE_SIZE = 100


def previous_list(result_list: ResultList) -> ResultList | None:
    """The project's result list captured last before this one."""
    return (
        ResultList.objects.filter(
            project_id=result_list.project_id, captured_at__lt=result_list.captured_at
        )
        .order_by("-captured_at", "-name")
        .first()
    )


@dataclass(frozen=True)
class QueryRow:
    query_id: int
    text: str
    ndcg: float
    dcg: float
    idcg: float
    judged: int
    retrieved: int
    previous: float | None
    all_irrelevant: bool
    # Whether the query has a current grade (else a mean over judged queries leaves it out).
    has_judgements: bool
    # The team's own id of the query ("" without one).
    external_id: str = ""
    # The measures shown beside NDCG: (name, value or None), in the table's order.
    measures: tuple = ()

    @property
    def change(self) -> float | None:
        return None if self.previous is None else self.ndcg - self.previous


@dataclass(frozen=True)
class QueryTable:
    evaluation: Evaluation
    previous: Evaluation | None
    page: Page
    rows: list[QueryRow]
    matching: int
    # The measures shown beside NDCG, (name, label) in order, and what they mean.
    measures: tuple = ()
    measures_line: str = ""

    @property
    def as_of(self) -> dt.datetime:
        return self.evaluation.as_of

    @property
    def source(self) -> Source:
        return self.evaluation.source


@one_snapshot
def query_table(
    project: Project,
    result_list: ResultList,
    spec: MetricSpec,
    *,
    as_of: dt.datetime | None,
    sort: str,
    text: str,
    page: int | None,
    grades: Grades = HUMAN,
    measures: tuple[str, ...] = (),
    page_size: int | None = PAGE_SIZE,
) -> QueryTable:
    """One page of the result list's queries (all of them with ``page_size`` None),
    filtered by text or query id and sorted by ``sort`` (the consensus of ``grades``),
    with the values of ``measures`` (names of ``labels.MEASURES``) beside NDCG."""
    fresh = freshness(project, spec, as_of=as_of, grades=grades)
    before = previous_list(result_list)
    lists = [result_list] if before is None else [result_list, before]
    evaluations = list_evaluations(project, spec, fresh=fresh, result_lists=lists)
    current = evaluations[0]
    previous_values = (
        evaluations[1].values_for(current.query_ids)
        if before
        else np.full(len(current.query_ids), np.nan)
    )
    names = {query: (text, qid) for query, text, qid in project.queries.values_list(
        "id", "text", "external_id")}  # fmt: skip
    query_texts = [names[int(query_id)][0] for query_id in current.query_ids]
    qids = [names[int(query_id)][1] for query_id in current.query_ids]
    [values] = list_measures(project, spec, [current], fresh=fresh, names=measures)
    keep = _matching(query_texts, qids, text)
    order = keep[_order(current, previous_values, query_texts, keep, sort, values)]
    paged = Paginator(order, page_size or max(1, len(order))).get_page(page)
    rows = [
        _row(current, previous_values, query_texts, int(i), qids[int(i)], values)
        for i in paged.object_list
    ]
    shown = tuple((name, measure_label(spec, name)) for name in measures)
    line = measures_line(spec, measures, relevant_from=RELEVANT_FROM, max_grade=project.max_grade)
    previous = evaluations[1] if before else None
    return QueryTable(current, previous, paged, rows, len(keep), shown, line)


def _matching(texts: list[str], qids: list[str], text: str) -> np.ndarray:
    """The positions of the queries whose text contains ``text``, or whose own id is it
    (a team looks a query up by the id its scripts print: "query 28")."""
    needle = text.strip().casefold()
    if not needle:
        return np.arange(len(texts), dtype=np.int64)
    return np.array(
        [
            i
            for i, (each, qid) in enumerate(zip(texts, qids, strict=True))
            if needle in each.casefold() or needle == qid.casefold()
        ],
        dtype=np.int64,
    )


def _order(evaluation, previous_values, texts, keep, sort: str, measures) -> np.ndarray:
    """Positions into ``keep`` in the asked order; ties and gaps (no change) go by text."""
    key = sort.removeprefix("-")
    kept = [texts[i] for i in keep.tolist()]
    text_rank = np.empty(len(kept), dtype=np.int64)
    text_rank[sorted(range(len(kept)), key=kept.__getitem__)] = np.arange(len(kept))
    if key == "query":
        primary = text_rank.astype(np.float64)
    else:
        columns = {
            "ndcg": evaluation.ndcg,
            "dcg": evaluation.dcg,
            "idcg": evaluation.idcg,
            "judged": evaluation.judged,
            "change": evaluation.ndcg - previous_values,
            **measures,
        }
        # A measure not shown sorts as NDCG does.
        primary = columns.get(key, evaluation.ndcg)[keep].astype(np.float64)
    if sort.startswith("-"):
        primary = -primary
    # lexsort puts NaN (a query the previous list did not return) last either way.
    return np.lexsort((text_rank, primary))


def _row(evaluation, previous_values, texts, i: int, qid: str, measures) -> QueryRow:
    previous = previous_values[i]
    return QueryRow(
        query_id=int(evaluation.query_ids[i]),
        text=texts[i],
        ndcg=float(evaluation.ndcg[i]),
        dcg=float(evaluation.dcg[i]),
        idcg=float(evaluation.idcg[i]),
        judged=int(evaluation.judged[i]),
        retrieved=int(evaluation.retrieved[i]),
        previous=None if np.isnan(previous) else float(previous),
        all_irrelevant=bool(evaluation.all_irrelevant[i]),
        has_judgements=bool(evaluation.judgements[i] > 0),
        external_id=qid,
        measures=tuple((name, _number(values[i])) for name, values in measures.items()),
    )


def _number(value) -> float | None:
    return None if np.isnan(value) else float(value)


@dataclass(frozen=True)
class HitRow:
    rank: int
    document: object
    rater_grades: list[int | None]
    consensus: float | None
    evaluated: bool


@dataclass(frozen=True)
class WorkingRow:
    """A row of the working table with the document at that rank, if any."""

    row: RankRow
    document: object | None


@dataclass(frozen=True)
class OpenHits:
    """A query's unjudged hits in the top k, those of them in the raters' queue, the
    pool's other unjudged documents of the query (graded, they join a judged ideal),
    and the range of NDCG they leave open (``metrics.core.bounds.ndcg_range``)."""

    unjudged: int
    queued: int
    others: int
    bounds: NdcgRange


@dataclass(frozen=True)
class QueryDetail:
    query: Query
    result_list: ResultList
    as_of: dt.datetime
    raters: list[str]
    hits: list[HitRow]
    result: NdcgResult
    working: list[WorkingRow]
    judged_not_returned: int
    relevant_not_returned: int
    series_spec: MetricSpec
    # (as_of, NDCG, judged hits, hits, grades) of the query's stored points, oldest first.
    series: list[tuple[dt.datetime, float, int, int, int]]
    revisions: list[Revision]
    # The working is always computed from the pair grades (or the log), never read back.
    source: Source
    grades: Grades
    # The measures shown beside NDCG: (name, label, value or None), and what they mean.
    measures: tuple = ()
    measures_line: str = ""
    # What the unjudged hits leave open: those in the top k, how many of them are in
    # the raters' queue, and the range of NDCG over every grade they could get (None
    # when every hit is judged).
    open: "OpenHits | None" = None

    @property
    def series_params(self) -> list[str]:
        return [*parameter_line(self.series_spec), self.grades.label]

    @property
    def series_replayed(self) -> bool:
        """Whether the series was replayed from the log (no stored series holds its grades)."""
        return not self.grades.human_only

    @property
    def chart(self) -> dict:
        """The chart's data, for ``json_script``: x values in epoch milliseconds, each
        point [x, NDCG, judged@k] (NDCG None while the query had no grade, its 0 then
        being no measurement; judged@k None when nothing was returned), and the
        moments of the query's revisions."""
        return {
            "label": self.query.text,
            "points": [
                [
                    epoch_ms(moment),
                    value if grades else None,
                    judged / retrieved if retrieved else None,
                ]
                for moment, value, judged, retrieved, grades in self.series
            ],
            "revisions": [epoch_ms(revision.created_at) for revision in self.revisions],
        }


@one_snapshot
def query_detail(
    project: Project,
    result_list: ResultList,
    query: Query,
    spec: MetricSpec,
    *,
    as_of: dt.datetime | None,
    grades: Grades = HUMAN,
    measures: tuple[str, ...] = (),
) -> QueryDetail:
    """The ranked hits with the grade of every rater of ``grades``, NDCG's working rank
    by rank and the values of ``measures`` (names of ``labels.MEASURES``)."""
    # One query's working is computed whatever the metric: the stored series is not asked.
    fresh = grades_freshness(project.pk, as_of=as_of, grades=grades)
    moment = fresh.moment
    hits = list(
        Hit.objects.filter(result_list=result_list, query=query)
        .select_related("document")
        .order_by("rank")
    )
    pairs = selectors.pair_grades(
        project.pk, fresh=fresh, policy=spec.consensus, query_ids=[query.pk]
    )
    consensus = dict(zip(pairs.document_ids.tolist(), pairs.grades.tolist(), strict=True))
    ranked = [consensus.get(hit.document_id) for hit in hits]
    result = _ndcg(spec, ranked, pairs.grades)
    evaluated = _evaluated_hits(hits, ranked, spec)
    raters, rater_grades = _rater_grades(query, moment, fresh.grades)
    returned = {hit.document_id for hit in hits}
    missed = [grade for document, grade in consensus.items() if document not in returned]
    return QueryDetail(
        query=query,
        result_list=result_list,
        as_of=moment,
        raters=raters,
        hits=_hit_rows(hits, ranked, raters, rater_grades, {hit.pk for hit in evaluated}),
        result=result,
        working=_working(result, evaluated),
        judged_not_returned=len(missed),
        relevant_not_returned=sum(1 for grade in missed if grade > 0),
        series_spec=project_spec(project),
        grades=fresh.grades,
        series=query_series(
            result_list, query, project_spec(project), as_of=as_of, grades=fresh.grades
        ),
        revisions=query_revisions(query.pk, as_of=as_of),
        source=fresh.pairs,
        measures=_query_measures(project, spec, ranked, pairs.grades, measures),
        measures_line=measures_line(
            spec, measures, relevant_from=RELEVANT_FROM, max_grade=project.max_grade
        ),
        open=_open_hits(project, spec, query, hits, ranked, consensus),
    )


def _open_hits(project, spec, query, hits, ranked, consensus) -> OpenHits | None:
    """What the query's unjudged hits leave open, read as the comparison reads them (the
    hits down to ``read_depth``: the top k by default); None when all those are graded."""
    depth = read_depth(spec)
    ranked = ranked[:depth]
    missing = [hit.document_id for hit, grade in zip(hits, ranked, strict=False) if grade is None]
    if not missing:
        return None
    top = missing if spec.k is None else [
        hit.document_id for hit, grade in zip(hits[: spec.k], ranked, strict=False)
        if grade is None
    ]  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(OPEN_SQL, {"query": query.pk, "top": top,
                                  "known": [*consensus, *missing]})  # fmt: skip
        queued, others = cursor.fetchone()
    bounds = ndcg_range(
        ranked, list(consensus.values()), k=spec.k, grades=range(project.max_grade + 1),
        gain=spec.gain, discount=spec.discount, ideal=spec.ideal,
        ideal_depth=spec.ideal_depth, others=others,
    )  # fmt: skip
    return OpenHits(len(top), queued, others, bounds)


# Of the query's pool pairs: those among the list's unjudged top-k documents, and those
# neither judged nor returned by the list (another list's hits the raters will grade).
OPEN_SQL = """
SELECT count(*) FILTER (WHERE document_id = ANY(%(top)s::bigint[])),
       count(*) FILTER (WHERE NOT document_id = ANY(%(known)s::bigint[]))
FROM judgements_queuepair WHERE query_id = %(query)s
"""


def _query_measures(project, spec, ranked, judged, names) -> tuple:
    if not names:
        return ()
    found = query_measures(spec, ranked, judged, max_grade=project.max_grade)
    return tuple((name, measure_label(spec, name), _number(found[name])) for name in names)


def _ndcg(spec: MetricSpec, ranked: list, judged) -> NdcgResult:
    ideal = ideal_grades(
        spec.ideal, ranked_grades=ranked, judged_grades=judged, negative=spec.negative
    )
    return ndcg(
        ranked,
        ideal,
        k=spec.k,
        gain=spec.gain,
        discount=spec.discount,
        ideal_depth=spec.ideal_depth,
        unjudged=spec.unjudged,
        negative=spec.negative,
    )


def _hit_rows(hits, ranked, raters, grades, evaluated: set[int]) -> list[HitRow]:
    return [
        HitRow(
            rank=hit.rank,
            document=hit.document,
            rater_grades=[grades.get((hit.document_id, rater)) for rater in raters],
            consensus=grade,
            evaluated=hit.pk in evaluated,
        )
        for hit, grade in zip(hits, ranked, strict=True)
    ]


def _evaluated_hits(hits, ranked, spec) -> list:
    """The hits that enter DCG, in rank order: the top k, after removing unjudged ones if asked."""
    if spec.unjudged == "remove":
        hits = [hit for hit, grade in zip(hits, ranked, strict=True) if grade is not None]
    return hits[: spec.k]


def _working(result: NdcgResult, evaluated: list) -> list[WorkingRow]:
    return [
        WorkingRow(row, evaluated[i].document if i < len(evaluated) else None)
        for i, row in enumerate(result.rows)
    ]


def _rater_grades(query: Query, moment: dt.datetime, grades: Grades) -> tuple[list[str], dict]:
    current = (
        Judgement.objects.for_query(query)
        .as_of(moment)
        .current_grades(grades)
        .values_list("document_id", "rater__username", "grade")
    )
    grades = {(document, rater): grade for document, rater, grade in current}
    return sorted({rater for _, rater in grades}), grades


def query_series(
    result_list, query, spec: MetricSpec, *, as_of, grades: Grades = HUMAN
) -> list[tuple]:
    """The query's NDCG over time and its coverage: ``(as_of, value, judged, retrieved,
    judgements)``, oldest first; stored for the human raters' grades, else replayed."""
    columns = ("as_of", "value", "judged", "retrieved", "judgements")
    points = stored_series(result_list, spec, query=query, until=as_of, grades=grades)
    return [tuple(point[name] for name in columns) for point in points]
