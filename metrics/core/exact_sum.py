"""Exact sums of doubles, kept as integers, so that a mean can be updated one value at a
time and still equal ``math.fsum(values) / n`` to the last bit.

Every finite double is an integer multiple of 2**-1074 (the smallest subnormal), so a
sum of doubles is exactly an integer ``total`` times 2**-1074: adding or taking away one
value is integer arithmetic, with no rounding at all. ``math.fsum`` returns the exact
sum correctly rounded to a double (round half to even), and so does Python's true
division of two integers, ``total / 2**1074``: the two agree on every input, zeros of
either sign included (``fsum`` of zeros is +0.0, as is ``0 / 2**1074``).
"""

import numpy as np
from numpy.typing import ArrayLike

# Doubles are integer multiples of 2**-EXPONENT.
EXPONENT = 1074
SCALE = 1 << EXPONENT
# A double's 53-bit significand is summed as two halves in int64, so that up to
# 2**36 values of one exponent add up without overflow.
_HALF = 26


def scaled(value: float) -> int:
    """``value`` as an integer multiple of 2**-1074 (exactly).

    Examples
    --------
    >>> scaled(0.5) == 1 << 1073, scaled(-2.0) == -(1 << 1075), scaled(5e-324)
    (True, True, 1)
    """
    numerator, denominator = float(value).as_integer_ratio()
    return numerator * (SCALE // denominator)


def exact_sum(values: ArrayLike) -> int:
    """The exact sum of finite doubles, as an integer multiple of 2**-1074.

    Vectorised: the values are grouped by binary exponent and each group's significands
    summed in int64 (as two halves); only one Python integer per exponent is made.

    Examples
    --------
    >>> import math
    >>> values = [0.1, 0.2, 0.3, 1e-300, -0.6]
    >>> fsum_of(exact_sum(values)) == math.fsum(values)
    True
    """
    data = np.asarray(values, dtype=np.float64).ravel()
    if not len(data):
        return 0
    if not np.all(np.isfinite(data)):
        raise ValueError("exact_sum takes finite values only")
    fractions, exponents = np.frexp(data)
    # value = significand * 2**(exponent - 53), significand an integer below 2**53.
    significands = np.ldexp(fractions, 53).astype(np.int64)
    high, low = significands >> _HALF, significands & ((1 << _HALF) - 1)
    order = np.argsort(exponents, kind="stable")
    exponents, high, low = exponents[order], high[order], low[order]
    starts = np.flatnonzero(np.r_[True, exponents[1:] != exponents[:-1]])
    high_sums = np.add.reduceat(high, starts).tolist()
    low_sums = np.add.reduceat(low, starts).tolist()
    total = 0
    for exponent, high_sum, low_sum in zip(
        exponents[starts].tolist(), high_sums, low_sums, strict=True
    ):
        group = (high_sum << _HALF) + low_sum
        shift = int(exponent) - 53 + EXPONENT
        # A negative shift only happens for subnormals, whose significands end in at
        # least as many zero bits: the division is exact.
        total += group << shift if shift >= 0 else group >> -shift
    return total


def fsum_of(total: int) -> float:
    """The double nearest the exact sum ``total`` x 2**-1074: what ``math.fsum`` gives."""
    return total / SCALE


def mean_of(total: int, count: int) -> float:
    """``math.fsum(values) / count`` from the values' exact sum (0.0 when ``count`` is 0,
    as ``metrics.core.aggregate.query_mean`` gives over no query)."""
    return fsum_of(total) / count if count else 0.0
