"""PostgreSQL's binary COPY with numpy: a million rows read or written in one call.

Turning a million rows into Python tuples costs many times what PostgreSQL spends
finding them; COPY in the binary format hands over fixed-width big-endian fields
that ``numpy.frombuffer`` reads as they are, and takes columns that numpy writes
without formatting a single value as text (``binary_copy_data``).
"""

import io
import struct

import numpy as np
from django.db import connection

# COPY's binary format: a signature, flags, a header extension, then per row a 16-bit
# field count and per field a 32-bit length (-1 for NULL) and the big-endian value.
COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"

# What binary_copy_data writes: fixed-width types as big-endian numbers, text-like types
# as UTF-8 after a prefix (jsonb's format version), timestamps as microseconds since
# PostgreSQL's epoch.
FIXED_WIDTH = {
    "bigint": ">i8",
    "integer": ">i4",
    "smallint": ">i2",
    "double precision": ">f8",
    "real": ">f4",
    "boolean": "?",
}
TEXT_PREFIX = {"text": b"", "character varying": b"", "jsonb": b"\x01"}
TIMESTAMP = "timestamp with time zone"
POSTGRES_EPOCH = np.datetime64("2000-01-01T00:00:00", "us")
# Each row's field count and each field's length (-1 for NULL), big-endian.
FIELD_COUNT, FIELD_LENGTH = struct.Struct(">h"), struct.Struct(">i")


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
    short, long = FIELD_COUNT.unpack_from, FIELD_LENGTH.unpack_from
    rows = []
    while (count := short(data, position)[0]) != -1:
        position += 2
        fields = []
        for _ in range(count):
            [length] = long(data, position)
            position += 4
            if length < 0:
                fields.append(None)
            else:
                fields.append(data[position : position + length])
                position += length
        rows.append(fields)
    return rows


def ordered_chunks(rows: list[list[memoryview | None]], key: int) -> list:
    """The rows that hold a chunk (column ``key``, a bigint or int, not NULL), in the
    order of ``key``."""
    chunks = [row for row in rows if row[key] is not None]
    chunks.sort(key=lambda row: int.from_bytes(row[key], "big", signed=True))
    return chunks


def joined_chunks(rows: list[list[memoryview | None]], key: int, width: int) -> list[bytes]:
    """The columns after column ``key`` (of ``width``) of rows that each hold a chunk of
    packed columns, each column joined in the order of ``key`` (a bigint: the chunk's
    first query id). A row whose key is NULL holds no chunk and is left out."""
    chunks = ordered_chunks(rows, key)
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
    # A view of bytes, not of the BytesIO (getbuffer): the garbage collector may clear a
    # BytesIO before the views of it that an exception's traceback keeps, which crashed
    # the interpreter; bytes have nothing to clear.
    data = memoryview(buffer.getvalue())
    if bytes(data[: len(COPY_SIGNATURE)]) != COPY_SIGNATURE:
        raise ValueError("COPY did not return PostgreSQL's binary format")
    extension = int.from_bytes(data[15:19], "big")
    return data, 19 + extension


def binary_copy_data(columns: list[tuple[np.ndarray, str]]) -> bytes:
    """COPY's binary format (``COPY ... FROM STDIN (FORMAT binary)``) of equally long
    ``columns``, each (values, PostgreSQL type as ``format_type`` names it).

    Types are those of FIXED_WIDTH and TEXT_PREFIX, and ``timestamp with time zone``
    given as numpy datetime64 in UTC; no value may be NULL. Each field is laid out with
    array arithmetic, never a Python loop over rows.
    """
    fields = [_binary_field(np.asarray(values), kind) for values, kind in columns]
    rows = len(fields[0][0]) if fields else 0
    count = np.frombuffer(np.array(len(columns), ">i2").tobytes(), np.uint8)
    header = COPY_SIGNATURE + bytes(8)  # No flags, no header extension.
    if rows and all(np.all(sizes == sizes[0]) for sizes, _ in fields):
        return header + _fixed_rows(fields, rows, count) + b"\xff\xff"
    row_sizes = 2 + sum((sizes for sizes, _ in fields), start=np.zeros(rows, np.int64))
    data = np.empty(int(row_sizes.sum()), np.uint8)
    offsets = np.cumsum(row_sizes) - row_sizes
    data[offsets[:, None] + np.arange(2)] = count
    offsets += 2
    for sizes, payload in fields:
        # The payload holds each row's field in turn; byte p of row i's field goes to
        # offsets[i] + (p - where row i's field starts in the payload).
        before = np.cumsum(sizes) - sizes
        data[np.arange(payload.size) + np.repeat(offsets - before, sizes)] = payload
        offsets += sizes
    return header + data.tobytes() + b"\xff\xff"


def _fixed_rows(fields: list[tuple[np.ndarray, np.ndarray]], rows: int, count) -> bytes:
    """Rows whose fields are each as long in every row (numbers, times, text of one
    length): one (rows, width) array, each field a band of its columns, with no index
    arithmetic."""
    widths = [int(sizes[0]) for sizes, _ in fields]
    data = np.empty((rows, 2 + sum(widths)), np.uint8)
    data[:, :2] = count
    start = 2
    for width, (_, payload) in zip(widths, fields, strict=True):
        data[:, start : start + width] = payload.reshape(rows, width)
        start += width
    return data.tobytes()


def _binary_field(values: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Each row's field size (its 4-byte length included) and all fields' bytes in turn."""
    rows = len(values)
    if kind in FIXED_WIDTH:
        width = np.dtype(FIXED_WIDTH[kind]).itemsize
        return _fixed(values.astype(FIXED_WIDTH[kind]), rows, width)
    if kind == TIMESTAMP:
        if values.dtype.kind != "M":
            raise TypeError("timestamps are written from numpy datetime64 values (UTC)")
        micros = (values.astype("datetime64[us]") - POSTGRES_EPOCH).astype(">i8")
        return _fixed(micros, rows, 8)
    if kind not in TEXT_PREFIX:
        raise TypeError(f"binary COPY of {kind} columns is not written here")
    prefix = TEXT_PREFIX[kind]
    encoded = np.char.encode(values.astype(str), "utf-8")
    width = max(encoded.dtype.itemsize, 1)
    lengths = np.char.str_len(encoded).astype(np.int64) + len(prefix)
    block = np.zeros((rows, 4 + len(prefix) + width), np.uint8)
    block[:, :4] = lengths.astype(">i4").view(np.uint8).reshape(rows, 4)
    block[:, 4 : 4 + len(prefix)] = np.frombuffer(prefix, np.uint8)
    block[:, 4 + len(prefix) :] = encoded.astype(f"S{width}").view(np.uint8).reshape(rows, width)
    sizes = 4 + lengths
    return sizes, block[np.arange(block.shape[1]) < sizes[:, None]]


def _fixed(values: np.ndarray, rows: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    block = np.empty((rows, 4 + width), np.uint8)
    block[:, :4] = np.frombuffer(np.array(width, ">i4").tobytes(), np.uint8)
    block[:, 4:] = values.view(np.uint8).reshape(rows, width)
    return np.full(rows, 4 + width, np.int64), block.ravel()


def unpacked(column: bytes | None, kind: str) -> np.ndarray:
    """A packed column as a native numpy array (empty for SQL NULL: no rows)."""
    return np.frombuffer(column or b"", dtype=kind).astype(kind[1:])
