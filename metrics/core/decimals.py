"""Plain decimal numbers read straight from a byte buffer, exactly as ``float()`` reads them.

A TREC run holds a million scores such as ``12.345678``; turning each into a
Python string and parsing it costs more than everything else the command
does. :func:`parse_decimals` reads the tokens where they lie in the file's
bytes, eight digits at a time in 64-bit integers, in a few numpy passes.

It takes only the plain form ``[-]digits[.digits]`` with at most 8 digits on
each side of the point, and the value is exact: the digits are read as one
integer ``m`` below 2**53 and divided by ``10**f`` (``f`` fraction digits),
both exactly representable, so IEEE division rounds once to the double
nearest to ``m / 10**f``, the same double a correctly rounded ``strtod``
(glibc's, which trec_eval calls, and Python's ``float()``) gives; this is
Clinger's fast path. Every other token (exponents, a ``+`` sign, ``inf``,
longer digit strings, text that is not a number) is flagged for the caller
to parse the slow way.

Most files write every score with the same number of decimals
(``%.6f``), and most scores have at most eight digits in all: those are read
first from the last eight bytes of each token alone, its point taken out by
one shift, in half the passes of the general reading, which then reads the
others.

References
----------
.. [1] W. D. Clinger, "How to read floating point numbers accurately",
   PLDI 1990 (exact conversion when the mantissa and power of ten are exact).
.. [2] D. Lemire, "Number parsing at a gigabyte per second", Software:
   Practice and Experience 51(8), 2021 (eight digits in one 64-bit word).
"""

import numpy as np
from numpy.typing import NDArray

_WORD = 8
_ASCII_ZEROS = np.uint64(0x3030303030303030)
_EXACT_MANTISSA = np.uint64(1 << 53)
_EIGHT_DIGITS = np.uint64(10**_WORD)
_BELOW_TEN = np.uint64(0x7676767676767676)  # Reaches a byte's high bit from 10 up.
_HIGH_BITS = np.uint64(0x8080808080808080)
_PAIR_MASK = np.uint64(0x000000FF000000FF)
# _KEEP_HIGH_BYTES[n] keeps the last n bytes (the high ones) of a little-endian word.
_KEEP_HIGH_BYTES = np.array(
    [~((1 << (8 * (_WORD - n))) - 1) & ((1 << 64) - 1) for n in range(_WORD + 1)],
    dtype=np.uint64,
)
# _KEEP_LOW_BYTES[n] keeps the first n bytes (the low ones) of a little-endian word.
_KEEP_LOW_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(_WORD + 1)], dtype=np.uint64)


def parse_decimals(
    buffer: NDArray[np.uint8], starts: NDArray[np.int64], ends: NDArray[np.int64]
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Parse the tokens ``buffer[starts[i]:ends[i]]`` that are plain decimals.

    Parameters
    ----------
    buffer : ndarray of uint8
        The text; it must hold at least 8 bytes after the start of every token.
    starts, ends : ndarray of int64
        Each token's first byte and the byte just after it (non-empty tokens).

    Returns
    -------
    values : ndarray of float64
        ``float(token)`` where ``parsed`` is True, anything elsewhere.
    parsed : ndarray of bool
        Which tokens had the plain form this function reads.

    Examples
    --------
    >>> text = np.frombuffer(b"12.5 -0.75 1e3 .5 7. - " + bytes(8), dtype=np.uint8)
    >>> starts, ends = np.array([0, 5, 11, 15, 18, 21]), np.array([4, 10, 14, 17, 20, 22])
    >>> values, parsed = parse_decimals(text, starts, ends)
    >>> values[parsed].tolist(), parsed.tolist()
    ([12.5, -0.75, 0.5, 7.0], [True, True, False, True, True, False])
    """
    values, parsed = _short_decimals(buffer, starts, ends)
    if np.all(parsed):
        return values, parsed
    rest = np.flatnonzero(~parsed)
    values[rest], parsed[rest] = _decimals(buffer, starts[rest], ends[rest])
    return values, parsed


def _decimals(
    buffer: NDArray[np.uint8], starts: NDArray[np.int64], ends: NDArray[np.int64]
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """:func:`parse_decimals` for any plain decimal with at most 8 digits on each side."""
    negative = buffer[starts] == ord("-")
    first = starts + negative
    length = ends - first
    head = words_at(buffer, first)
    point = _point_index(head, length)
    integer_digits = np.minimum(point, _WORD)
    fraction_digits = np.maximum(length - point - 1, 0)
    # The integer digits move to the top of the word, the fraction's start at
    # its bottom: as eight digits they read int and frac * 10**(8 - digits).
    integer_word = head << (np.uint64(8) * (_WORD - integer_digits).astype(np.uint64))
    integer, parsed = _eight_digits(integer_word, _KEEP_HIGH_BYTES[integer_digits])
    fraction_word = words_at(buffer, first + np.minimum(point + 1, length))
    fraction, fraction_ok = _eight_digits(
        fraction_word, _KEEP_LOW_BYTES[np.minimum(fraction_digits, _WORD)]
    )
    parsed &= fraction_ok
    parsed &= (point <= _WORD) & (fraction_digits <= _WORD) & (length - (point < length) > 0)
    mantissa = integer * _EIGHT_DIGITS + fraction
    parsed &= mantissa < _EXACT_MANTISSA
    values = mantissa.astype(np.float64)
    values /= float(_EIGHT_DIGITS)
    np.negative(values, out=values, where=negative)
    return values, parsed


def _short_decimals(
    buffer: NDArray[np.uint8], starts: NDArray[np.int64], ends: NDArray[np.int64]
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """:func:`parse_decimals` for the tokens with as many decimals as the first token and
    at most 8 digits in all, read from their last 8 bytes; other tokens (and any ending in
    the buffer's first 16 bytes) are not parsed.

    Examples
    --------
    >>> text = np.frombuffer(b"tag tag tag tag 12.5 -0.75 -9.5 7 " + bytes(8), dtype=np.uint8)
    >>> starts, ends = np.array([16, 21, 27, 32]), np.array([20, 26, 31, 33])
    >>> values, parsed = _short_decimals(text, starts, ends)
    >>> values[parsed].tolist(), parsed.tolist()
    ([12.5, -9.5], [True, False, True, False])
    """
    n_tokens = len(starts)
    shortest_end = int(ends.min()) if n_tokens else 0
    if shortest_end <= _WORD:
        return np.zeros(n_tokens), np.zeros(n_tokens, dtype=bool)
    first = buffer[starts[0] : ends[0]].tobytes()
    point = first.find(b".")
    decimals = 0 if point < 0 else len(first) - point - 1
    if decimals >= _WORD:
        return np.zeros(n_tokens), np.zeros(n_tokens, dtype=bool)
    # The token's last 16 bytes in one read. Its last 8, its first byte lowest:
    # the decimals on top, then the point, then the integer digits and
    # whatever comes before them.
    reads, early = ends - 2 * _WORD, None
    if shortest_end < 2 * _WORD:  # Tokens ending in the first 16 bytes are not read here.
        early = reads < 0
        reads[early] = 0
    last_two = words_at(buffer, reads, 2)
    word = last_two[:, 1].copy()
    negative = buffer[starts] == ord("-")
    n_digits = ends - starts - negative - (1 if decimals else 0)
    if decimals:
        point_byte = (word >> np.uint64(8 * (_WORD - 1 - decimals))) & np.uint64(0xFF)
        has_point = point_byte == ord(".")
        # The 8 bytes before the last one hold the integer digits just below
        # where the decimals start in ``word``: the digits without the point.
        keep = _KEEP_HIGH_BYTES[decimals]
        word &= keep
        before = last_two[:, 1] << np.uint64(8)  # The 8 bytes before the last one.
        before |= last_two[:, 0] >> np.uint64(56)
        before &= ~keep
        word |= before
    mantissa, parsed = _eight_digits(word, _KEEP_HIGH_BYTES[np.minimum(n_digits, _WORD)])
    parsed &= (n_digits > decimals) & (n_digits <= _WORD)
    if decimals:
        parsed &= has_point
    if early is not None:
        parsed &= ~early
    values = mantissa.astype(np.float64)
    values /= float(10**decimals)
    np.negative(values, out=values, where=negative)
    return values, parsed


def words_at(
    buffer: NDArray[np.uint8], at: NDArray[np.int64], n_words: int = 1
) -> NDArray[np.uint64]:
    """The ``8 * n_words`` bytes from each position, as little-endian words (unaligned reads).

    Returns shape ``(len(at),)`` for one word, else ``(len(at), n_words)``.
    The buffer is viewed as overlapping raw records, one per byte offset,
    so that one fancy index copies the bytes of every position; records of
    raw bytes copy faster than unaligned integers.
    """
    size = _WORD * n_words
    records = np.ndarray((len(buffer) - size + 1,), dtype=f"V{size}", buffer=buffer, strides=(1,))
    words = records[at].view("<u8")
    return words if n_words == 1 else words.reshape(len(at), n_words)


def _point_index(words: NDArray[np.uint64], length: NDArray[np.int64]) -> NDArray[np.int64]:
    """Position of the ``.`` in each token, from its first 8 bytes; ``length`` if none.

    Bytes equal to ``.`` become zero bytes after an exclusive or, and the
    classic zero-byte test marks the first of them exactly. A token whose
    point is not among its first 8 bytes comes out as having none, and then
    more than 8 integer digits, which :func:`parse_decimals` does not read.
    """
    x = words ^ np.uint64(0x2E2E2E2E2E2E2E2E)
    marks = (x - np.uint64(0x0101010101010101)) & ~x & np.uint64(0x8080808080808080)
    # Bits below the lowest mark: 8 per byte before the first point (64 when none).
    below = np.bitwise_count((marks & (~marks + np.uint64(1))) - np.uint64(1))
    point = (below >> 3).astype(np.int64)
    return np.where((point < _WORD) & (point < length), point, length)


def _eight_digits(
    word: NDArray[np.uint64], keep: NDArray[np.uint64]
) -> tuple[NDArray[np.uint64], NDArray[np.bool_]]:
    """Read each word as 8 digits, its bytes outside ``keep`` taken as ``0``; and which were.

    Lemire's conversion ([2] in the module notes), for the first digit in the
    lowest byte. Each byte is first xor-ed with ``'0'``, which turns the
    digits into their values and no other byte into a value below 10, and
    the bytes outside ``keep`` are cleared (the value of ``'0'``); a byte is
    a digit when adding ``0x76`` to it does not reach its high bit. (Only a
    byte of 0x8A or more carries into the next, and it is not a digit
    anyway.) ``word`` is overwritten.
    """
    word ^= _ASCII_ZEROS
    word &= keep
    ok = ((word + _BELOW_TEN) | word) & _HIGH_BITS == 0
    pairs = word * np.uint64(10)
    pairs += word >> np.uint64(8)
    low = pairs & _PAIR_MASK
    low *= np.uint64(100 + (1_000_000 << 32))
    pairs >>= np.uint64(16)
    pairs &= _PAIR_MASK
    pairs *= np.uint64(1 + (10_000 << 32))
    pairs += low
    pairs >>= np.uint64(32)
    return pairs, ok
