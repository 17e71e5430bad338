"""The set-based rebuild of bulk loads, and the binary COPY they write with."""

import datetime as dt
import io
import math
import struct

import numpy as np
import pytest
from django.db import connection

from config import pgcopy
from judgements.derived import rebuild
from judgements.models import Judgement, QueuePair, QueueRequest, ResultList
from tests.factories import (
    DocumentFactory,
    HitFactory,
    ProjectFactory,
    QueryFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

EVERY_TYPE = {
    "big": "bigint",
    "whole": "integer",
    "small": "smallint",
    "wide": "double precision",
    "narrow": "real",
    "flag": "boolean",
    "body": "text",
    "label": "character varying(40)",
    "doc": "jsonb",
    "moment": "timestamp with time zone",
}


def copied_back(columns: dict[str, tuple[np.ndarray, str]]) -> list[tuple]:
    names = list(columns)
    data = pgcopy.binary_copy_data(list(columns.values()))
    with connection.cursor() as cursor:
        definitions = ", ".join(f"{name} {EVERY_TYPE[name]}" for name in names)
        cursor.execute(f"CREATE TEMPORARY TABLE copied ({definitions})")
        cursor.cursor.copy_expert(
            f"COPY copied ({', '.join(names)}) FROM STDIN (FORMAT binary)", io.BytesIO(data)
        )
        cursor.execute(f"SELECT {', '.join(names)} FROM copied")
        rows = cursor.fetchall()
        cursor.execute("DROP TABLE copied")
    return rows


def test_every_written_type_reads_back_as_it_was_given():
    moments = np.array(["1999-12-31T23:59:59.000001", "2026-11-25T14:00:00"], "datetime64[us]")
    columns = {
        "big": (np.array([-(2**62), 9_007_199_254_740_993]), "bigint"),
        "whole": (np.array([-7, 2**31 - 1]), "integer"),
        "small": (np.array([3, -32768]), "smallint"),
        "wide": (np.array([0.1, -1e300]), "double precision"),
        "narrow": (np.array([1.5, -0.25]), "real"),
        "flag": (np.array([True, False]), "boolean"),
        "body": (np.array(["", "Zürich ✓ tent"]), "text"),
        "label": (np.array(["a much longer label than the other", "x"]), "character varying"),
        "doc": (np.array(['{"k":[1,"é"]}', "{}"]), "jsonb"),
        "moment": (moments, "timestamp with time zone"),
    }

    rows = copied_back(columns)

    # jsonb comes back as PostgreSQL prints it, which shows that it was parsed.
    utc = dt.UTC
    assert rows == [
        (-(2**62), -7, 3, 0.1, 1.5, True, "", "a much longer label than the other",
         '{"k": [1, "é"]}', dt.datetime(1999, 12, 31, 23, 59, 59, 1, tzinfo=utc)),
        (9_007_199_254_740_993, 2**31 - 1, -32768, -1e300, -0.25, False, "Zürich ✓ tent", "x",
         "{}", dt.datetime(2026, 11, 25, 14, tzinfo=utc)),
    ]  # fmt: skip


def test_a_nan_and_a_million_rows_go_over_unchanged():
    rows = 1_000_000
    values = np.arange(rows, dtype=np.float64) / 7
    values[123] = math.nan

    back = copied_back({"big": (np.arange(rows), "bigint"), "wide": (values, "double precision")})

    assert len(back) == rows
    assert back[999_999] == (999_999, 999_999 / 7)
    assert math.isnan(back[123][1])


def test_rows_of_one_size_are_laid_out_byte_for_byte_as_copy_reads_them():
    # Every field has one size in every row here, which binary_copy_data lays out as one
    # array (test_every_written_type_reads_back_as_it_was_given has text of two lengths);
    # struct spells the same bytes field by field.
    data = pgcopy.binary_copy_data(
        [
            (np.array([1, -2]), "bigint"),
            (np.array(["ab", "cd"]), "text"),
            (np.array([5, 5]), "smallint"),
            (np.array([True, False]), "boolean"),
        ]
    )

    rows = b"".join(
        struct.pack(">h", 4)
        + struct.pack(">iq", 8, big)
        + struct.pack(">i", 2) + text
        + struct.pack(">ih", 2, 5)
        + struct.pack(">i?", 1, flag)
        for big, text, flag in ((1, b"ab", True), (-2, b"cd", False))
    )  # fmt: skip
    assert data == pgcopy.COPY_SIGNATURE + bytes(8) + rows + b"\xff\xff"


def test_types_it_does_not_write_are_refused_rather_than_guessed():
    with pytest.raises(TypeError, match="numeric"):
        pgcopy.binary_copy_data([(np.array([1]), "numeric")])
    with pytest.raises(TypeError, match="datetime64"):
        pgcopy.binary_copy_data([(np.array(["2026-01-01"]), "timestamp with time zone")])


def logged_project(seed: int):
    """A project of two result lists over six queries, pool depth 5 of 8 hits, one
    analyst's request for a deep pair, and a log with revisions, can't-tells,
    retractions, ties in time and a machine judge's answers (no rater's answer)."""
    project = ProjectFactory(slug=f"logged-{seed}", judges_per_pair=2, pool_depth=5)
    documents = [DocumentFactory(project=project, external_id=f"D{n}") for n in range(12)]
    for number in range(6):
        query = QueryFactory(project=project, text=f"query {number}")
        for name, order in (("bm25", documents[:8]), ("neural", documents[4:12])):
            result_list, _ = ResultList.objects.get_or_create(
                project=project, name=name, defaults={"captured_at": "2026-11-01T00:00:00Z"}
            )
            for rank, document in enumerate(order, start=1):
                HitFactory(result_list=result_list, query=query, document=document, rank=rank)
    analyst = UserFactory(username=f"analyst-{seed}", roles=["analyst"])
    QueueRequest.objects.create(
        project=project, query=query, document=documents[0], wanted=4, requested_by=analyst
    )
    raters = [UserFactory(username=f"r{seed}-{n}", roles=["rater"]) for n in range(5)]
    pairs = list(QueuePair.objects.filter(project=project).select_related("query", "document"))
    # Some events are on a document no list returned: judged, but never in the pool.
    outside = DocumentFactory(project=project, external_id="unlisted")
    rng = np.random.default_rng(seed)
    start = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    events = []
    for _ in range(400):
        pair = pairs[rng.integers(len(pairs))]
        document = outside if rng.random() < 0.05 else pair.document
        kind = rng.choice(["grade", "grade", "grade", "cant_tell", "retract"])
        events.append(
            Judgement(
                query=pair.query,
                document=document,
                rater=raters[rng.integers(len(raters))],
                kind=kind,
                grade=int(rng.integers(4)) if kind == "grade" else None,
                # Few distinct moments: ties are decided by id.
                created_at=start + dt.timedelta(hours=int(rng.integers(6))),
                source=Judgement.Source.MACHINE if rng.random() < 0.1 else Judgement.Source.API,
            )
        )
    Judgement.objects.bulk_create(events)
    return project


def test_the_set_based_current_answers_are_the_current_answer_functions():
    project = logged_project(seed=1)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT array_agg(query_id), array_agg(document_id) FROM ("
            " SELECT DISTINCT query_id, document_id FROM judgements_judgement event"
            " JOIN judgements_query query ON query.id = event.query_id"
            " WHERE query.project_id = %s) AS pairs",
            [project.pk],
        )
        queries, documents = cursor.fetchone()
        cursor.execute(
            "SELECT query_id, document_id, rater_id, kind, grade, created_at"
            " FROM judgements_current_answers(%s, %s) ORDER BY 1, 2, 3",
            [queries, documents],
        )
        expected = cursor.fetchall()
        cursor.execute(rebuild.ANSWERS_SQL, {"project": project.pk})
        cursor.execute(
            "SELECT query_id, document_id, rater_id, kind, grade, created_at"
            " FROM rebuild_answers ORDER BY 1, 2, 3"
        )
        answers = cursor.fetchall()
        cursor.execute("DROP TABLE rebuild_answers")

    assert len(expected) > 100
    assert answers == expected


DERIVED = {
    "judgements_pairgrade": "query_id, document_id, graded, lowest, highest, grades, raters",
    "judgements_queuepair": "query_id, document_id, best_rank, grades, needed, answered, wanted",
    "judgements_querygrades": "query_id, project_id, graded, judged",
    "judgements_rankedhits": "result_list_id, query_id, hits, documents",
}


def derived_rows(project) -> dict[str, list[tuple]]:
    rows = {}
    with connection.cursor() as cursor:
        for table, columns in DERIVED.items():
            cursor.execute(
                f"SELECT {columns} FROM {table} WHERE query_id IN"
                " (SELECT id FROM judgements_query WHERE project_id = %s) ORDER BY 1, 2, 3",
                [project.pk],
            )
            rows[table] = [tuple(map(_comparable, row)) for row in cursor.fetchall()]
    return rows


def _comparable(value):
    return bytes(value) if isinstance(value, memoryview) else value


@pytest.mark.parametrize("seed", [1, 2])
def test_a_rebuild_from_nothing_writes_what_the_triggers_kept(seed):
    project = logged_project(seed)
    # An untouched project beside it keeps its rows.
    bystander = logged_project(seed + 10)
    kept = derived_rows(project)
    untouched = derived_rows(bystander)
    assert len(kept["judgements_pairgrade"]) > 40 and len(kept["judgements_queuepair"]) > 40
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL judgements.defer_derived = on")
        for table in DERIVED:
            cursor.execute(
                f"DELETE FROM {table} WHERE query_id IN"
                " (SELECT id FROM judgements_query WHERE project_id = %s)",
                [project.pk],
            )
        cursor.execute("SET LOCAL judgements.defer_derived = off")

    rebuild.rebuild(project.pk)

    assert derived_rows(project) == kept
    assert derived_rows(bystander) == untouched


def test_a_rebuild_over_wrong_rows_corrects_them_and_drops_rows_that_should_not_be():
    project = logged_project(seed=3)
    kept = derived_rows(project)
    stranger = QueryFactory(project=project, text="no hits, no events")
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL judgements.defer_derived = on")
        cursor.execute(
            "UPDATE judgements_pairgrade SET grades = '{3,3}', graded = 2 WHERE project_id = %s",
            [project.pk],
        )
        cursor.execute(
            "UPDATE judgements_queuepair SET needed = 9, answered = '{}', best_rank = 99"
            " WHERE project_id = %s",
            [project.pk],
        )
        document = DocumentFactory(project=project, external_id="ghost")
        cursor.execute(
            "INSERT INTO judgements_pairgrade"
            " (project_id, query_id, document_id, graded, grades, raters)"
            " VALUES (%s, %s, %s, 0, '{}', '{}')",
            [project.pk, stranger.pk, document.pk],
        )
        cursor.execute(
            "INSERT INTO judgements_queuepair (project_id, query_id, document_id, best_rank,"
            " grades, needed, answered, wanted) VALUES (%s, %s, %s, 1, 0, 2, '{}', 0)",
            [project.pk, stranger.pk, document.pk],
        )
        cursor.execute("SET LOCAL judgements.defer_derived = off")

    rebuild.rebuild(project.pk)

    rows = derived_rows(project)
    # The stranger query gets its (empty) summary row, as the triggers would add it.
    rows["judgements_querygrades"] = [
        row for row in rows["judgements_querygrades"] if row[0] != stranger.pk
    ]
    assert rows == kept


def test_an_empty_project_rebuilds_to_nothing():
    project = ProjectFactory(slug="nothing-yet")

    seconds = rebuild.rebuild(project.pk)

    assert set(seconds) == {"current answers", "pair grades", "summaries", "query log", "pool"}
    assert all(rows == [] for rows in derived_rows(project).values())
