"""Reading PostgreSQL's binary COPY output with numpy: a million rows in one call.

Turning a million rows into Python tuples costs many times what PostgreSQL spends
finding them; COPY in the binary format hands over fixed-width big-endian fields
that ``numpy.frombuffer`` reads as they are.
"""

import io

import numpy as np
from django.db import connection

# COPY's binary format: a signature, flags, a header extension, then per row a 16-bit
# field count and per field a 32-bit length (-1 for NULL) and the big-endian value.
COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"


def copy_rows(sql: str, params: dict | list, columns: list[tuple[str, str]]) -> np.ndarray:
    """Rows of ``sql`` as a numpy structured array with ``columns`` (name, big-endian dtype).

    The query must return exactly these fixed-width, non-NULL columns.
    """
    fields = [("fields", ">i2")]
    for name, kind in columns:
        fields += [(f"{name}_length", ">i4"), (name, kind)]
    row_type = np.dtype(fields)
    data, start = _copy_binary(sql, params)
    body = data[start : len(data) - 2]  # The last two bytes mark the end.
    rows = np.frombuffer(body, dtype=row_type)
    for name, kind in columns:
        if np.any(rows[f"{name}_length"] != np.dtype(kind).itemsize):
            raise ValueError(f"COPY returned NULL or a wider value in column {name}")
    return rows


def copy_row(sql: str, params: dict) -> list[memoryview | None]:
    """The fields of the one row ``sql`` returns (None for NULL): bytea arrives as its
    bytes, without the hex text encoding of a plain fetch."""
    rows = copy_fields(sql, params)
    if len(rows) != 1:
        raise ValueError(f"COPY returned {len(rows)} rows, not one")
    return rows[0]


def copy_fields(sql: str, params: dict) -> list[list[memoryview | None]]:
    """The fields of each row ``sql`` returns (None for NULL), as ``copy_row``'s; for the
    few rows of packed columns, read field by field."""
    data, position = _copy_binary(sql, params)

    def integer(at: int, size: int) -> int:
        return int.from_bytes(data[at : at + size], "big", signed=True)

    rows = []
    while (count := integer(position, 2)) != -1:
        position += 2
        fields = []
        for _ in range(count):
            length, position = integer(position, 4), position + 4
            fields.append(None if length < 0 else data[position : position + length])
            position += max(length, 0)
        rows.append(fields)
    return rows


def joined_chunks(rows: list[list[memoryview | None]], key: int, width: int) -> list[bytes]:
    """The columns after column ``key`` (of ``width``) of rows that each hold a chunk of
    packed columns, each column joined in the order of ``key`` (a bigint: the chunk's
    first query id). A row whose key is NULL holds no chunk and is left out."""
    chunks = [row for row in rows if row[key] is not None]
    chunks.sort(key=lambda row: int.from_bytes(row[key], "big", signed=True))
    return [
        b"".join(row[column] for row in chunks if row[column] is not None)
        for column in range(key + 1, width)
    ]


def _copy_binary(sql: str, params: dict | list) -> tuple[memoryview, int]:
    """``sql``'s rows in COPY's binary format, and where the first row starts."""
    buffer = io.BytesIO()
    with connection.cursor() as cursor:
        statement = cursor.cursor.mogrify(sql, params).decode()
        cursor.cursor.copy_expert(f"COPY ({statement}) TO STDOUT (FORMAT binary)", buffer)
    data = buffer.getbuffer()
    if bytes(data[: len(COPY_SIGNATURE)]) != COPY_SIGNATURE:
        raise ValueError("COPY did not return PostgreSQL's binary format")
    extension = int.from_bytes(data[15:19], "big")
    return data, 19 + extension
