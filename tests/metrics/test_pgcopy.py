"""Binary COPY read field by field: NULLs, empty and long values, any number of rows."""

import pytest

from config import pgcopy

pytestmark = pytest.mark.django_db


def test_fields_come_back_as_their_bytes_and_null_as_none():
    rows = pgcopy.copy_fields(
        "SELECT * FROM (VALUES (NULL::bytea, ''::bytea, int4send(7)),"
        " (decode(repeat('ab', 70000), 'hex'), NULL::bytea, int4send(-1))) AS row",
        {},
    )

    assert [[None if field is None else bytes(field) for field in row] for row in rows] == [
        [None, b"", b"\x00\x00\x00\x07"],
        [b"\xab" * 70000, None, b"\xff\xff\xff\xff"],
    ]


def test_no_rows_is_an_empty_list():
    assert pgcopy.copy_fields("SELECT 1 WHERE false", {}) == []
