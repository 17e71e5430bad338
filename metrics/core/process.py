"""Settings for the short-lived process of ``python -m metrics.core`` (standard library only).

They change how fast the command runs, never what it prints: the number of
BLAS threads, and so every value, stays as it is.
"""

import ctypes
import gc
import os

# glibc's mallopt() parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8


def prepare_command_process() -> None:
    """Set what numpy and its BLAS read when they load; call it before importing numpy.

    - BLAS worker threads go to sleep at once instead of spinning for about
      0.1 s at load, and after each call, on the cores the command's reader
      uses (``OPENBLAS_THREAD_TIMEOUT``; 4 is its least).
    - numpy stops asking the kernel for huge pages for its large arrays
      (``NUMPY_MADVISE_HUGEPAGE``): the command makes many short-lived ones
      of tens of megabytes, and where the kernel compacts memory to find huge
      pages (``defrag = madvise``) that costs more system time than the huge
      pages save.
    - The garbage collector, which has nothing to reclaim in a command that
      makes few Python objects, stops running through the objects of every
      module imported.
    - Freed memory stays with the process for the next array instead of
      going back to the system and being zeroed again when asked for anew;
      the command's arrays of tens of megabytes otherwise cost it a page
      fault every 4 kB each time. The reader's threads allocate from the
      same pool as the main thread, so that the ranking reuses the memory
      they freed.
    """
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
    gc.disable()
    _keep_freed_memory()


def _keep_freed_memory() -> None:
    """Ask glibc's allocator to serve large arrays from one heap and never shrink it."""
    try:
        # The process's own symbols, which include the C library's.
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):  # Not glibc: nothing to tune.
        return
    mallopt(_M_MMAP_MAX, 0)
    mallopt(_M_TRIM_THRESHOLD, 2**31 - 1)
    mallopt(_M_ARENA_MAX, 1)
