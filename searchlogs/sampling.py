"""A project's queries drawn from its search log's traffic, with their traffic kept.

Traffic is a normalised query text's results pages in the log (searchlogs.matching).
Texts sorted by traffic (most first, then by text) are cut into three strata: the
**head**, the fewest texts that hold a third of all pages; the **torso**, those of the
next third; the **tail**, the rest. A stratified sample draws an equal share from each
(a stratum with fewer texts gives all it has, and the others make up the difference),
with numpy's generator seeded by ``seed``: the same log and seed give the same queries.
``top`` takes the N texts of most traffic instead. Each drawn text becomes a project
query (the one that text matches, or a new one in its most frequent logged form) and
its traffic is kept (``QueryTraffic``), for NDCG's mean ``weight=traffic``.
"""

from dataclasses import dataclass

import numpy as np
from django.db import connection, transaction
from django.utils import timezone

from judgements.models import Project, Query
from searchlogs.matching import query_keys
from searchlogs.models import QueryTraffic, SearchEvent

STRATA = ("head", "torso", "tail")

_TRAFFIC_SQL = f"""
SELECT query_key, count(*), mode() WITHIN GROUP (ORDER BY query_text)
FROM searchlogs_searchevent WHERE project_id = %s AND kind = {SearchEvent.Kind.IMPRESSION}
GROUP BY query_key
"""


@dataclass(frozen=True)
class Traffic:
    """Texts (normalised) by traffic, most first; ``shown``: each one's most frequent form."""

    keys: list[str]
    pages: np.ndarray
    shown: list[str]


@dataclass(frozen=True)
class Cut:
    stratum: str
    texts: int
    pages: int
    min_pages: int  # The least traffic of a text in the stratum.
    max_pages: int


@dataclass(frozen=True)
class Sample:
    method: str
    seed: int | None
    cuts: list[Cut]
    drawn: list[tuple[str, int, str]]  # (text, pages, stratum)


def log_traffic(project: Project) -> Traffic:
    with connection.cursor() as cursor:
        cursor.execute(_TRAFFIC_SQL, [project.pk])
        rows = sorted(cursor.fetchall(), key=lambda row: (-row[1], row[0]))
    return Traffic([row[0] for row in rows], np.array([row[1] for row in rows], np.int64),
                   [row[2] for row in rows])  # fmt: skip


def strata(pages: np.ndarray) -> np.ndarray:
    """Each text's stratum (0 head, 1 torso, 2 tail), for traffic sorted most first: by
    the share of all traffic the texts before it have, under a third (head), under two
    thirds (torso) or more (tail). Below, the third text starts at 80 % of the traffic.

    >>> strata(np.array([50, 30, 10, 5, 3, 2])).tolist()
    [0, 1, 2, 2, 2, 2]
    """
    if not len(pages):
        return np.zeros(0, np.int64)
    before = np.cumsum(pages) - pages  # Pages of the texts before each one.
    share = before / pages.sum()
    return np.minimum((share * 3).astype(np.int64), 2)


def cuts_of(traffic: Traffic) -> list[Cut]:
    stratum = strata(traffic.pages)
    cuts = []
    for number, name in enumerate(STRATA):
        pages = traffic.pages[stratum == number]
        cuts.append(Cut(name, len(pages), int(pages.sum()), int(pages.min(initial=0)),
                        int(pages.max(initial=0))))  # fmt: skip
    return cuts


def stratified(traffic: Traffic, size: int, seed: int) -> list[int]:
    """Indexes of ``size`` texts, an equal share per stratum, drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    stratum = strata(traffic.pages)
    members = [np.flatnonzero(stratum == number) for number in range(len(STRATA))]
    wanted = _shares(size, [len(group) for group in members])
    chosen = [rng.choice(group, count, replace=False) if count else group[:0]
              for group, count in zip(members, wanted, strict=True)]  # fmt: skip
    return sorted(int(i) for i in np.concatenate(chosen))


def _shares(size: int, available: list[int]) -> list[int]:
    """``size`` split as equally as the strata allow, the head first for a remainder."""
    shares, left = [0] * len(available), min(size, sum(available))
    while left:
        open_ = [i for i, count in enumerate(available) if shares[i] < count]
        each = max(left // len(open_), 1)
        for i in open_:
            give = min(each, available[i] - shares[i], left)
            shares[i] += give
            left -= give
            if not left:
                break
    return shares


@transaction.atomic
def queries_from_traffic(
    *, project: Project, size: int, method: str = "stratified", seed: int = 0
) -> Sample:
    """Draw ``size`` queries from the log (``method`` "stratified" or "top"), make them
    project queries and keep their traffic. Drawing again replaces the kept traffic."""
    if method not in ("stratified", "top"):
        raise ValueError(f'method must be "stratified" or "top", not {method!r}')
    if size < 1:
        raise ValueError("size must be at least 1.")
    traffic = log_traffic(project)
    if not traffic.keys:
        raise ValueError("The project's search log has no results page to draw from.")
    stratum = strata(traffic.pages)
    drawn = stratified(traffic, size, seed) if method == "stratified" else list(
        range(min(size, len(traffic.keys))))  # fmt: skip
    known = query_keys(project.queries.values_list("id", "text"))
    QueryTraffic.objects.filter(project=project).delete()
    now, rows, created = timezone.now(), [], {}
    for index in drawn:
        query_id = known.get(traffic.keys[index])
        if query_id is None:
            query_id = Query.objects.create(project=project, text=traffic.shown[index]).pk
            created[traffic.keys[index]] = query_id
        name = STRATA[stratum[index]] if method == "stratified" else QueryTraffic.Stratum.TOP
        rows.append(QueryTraffic(project=project, query_id=query_id, stratum=name,
                                 impressions=int(traffic.pages[index]), drawn_at=now,
                                 seed=seed if method == "stratified" else None))  # fmt: skip
    QueryTraffic.objects.bulk_create(rows)
    _match_pages(project, created)
    return Sample(method, seed if method == "stratified" else None, cuts_of(traffic),
                  [(traffic.shown[i], int(traffic.pages[i]), row.stratum)
                   for i, row in zip(drawn, rows, strict=True)])  # fmt: skip


def _match_pages(project: Project, created: dict[str, int]) -> None:
    """Point the log's pages of the texts just made queries (by normalised text) at them."""
    if not created:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE searchlogs_searchevent e SET query_id = new.id"
            " FROM unnest(%s::text[], %s::bigint[]) AS new(key, id)"
            " WHERE e.project_id = %s AND e.kind = %s AND e.query_id IS NULL"
            " AND e.query_key = new.key",
            [list(created), list(created.values()), project.pk, SearchEvent.Kind.IMPRESSION],
        )
