"""Entry point of ``python -m metrics.core``; see :mod:`metrics.core.cli`."""

import numpy as np

from metrics.core.cli import main


def _prefer_small_pages() -> None:
    """Stop numpy asking the kernel for huge pages for its large arrays.

    The command allocates many short-lived arrays of tens of megabytes; on
    kernels that compact memory to find huge pages (``defrag = madvise``) that
    costs more system time than the huge pages save. This is what the
    ``NUMPY_MADVISE_HUGEPAGE=0`` environment variable does, set here because
    numpy is already imported. The switch is private to numpy, hence the
    guard: without it the command simply runs as before.
    """
    switch = getattr(getattr(np, "_core", None), "multiarray", None)
    setter = getattr(switch, "_set_madvise_hugepage", None)
    if setter is not None:
        setter(False)


_prefer_small_pages()
raise SystemExit(main())
