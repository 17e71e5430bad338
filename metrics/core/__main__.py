"""Entry point of ``python -m metrics.core``; see :mod:`metrics.core.cli`.

The package's ``__init__`` sets the environment numpy reads when it loads
(see there): it runs before this module, and before numpy is imported.

Once the output is written, the process ends at once (``os._exit``):
tearing the interpreter down would free, one by one, every object of
numpy and of the modules imported, which takes longer than the NDCG of ten
thousand queries. Nothing is lost: the command has no files open for
writing but its standard streams, flushed first, and no exit handlers of
its own.
"""

import os
import sys

from metrics.core.cli import main

status = main()
try:
    sys.stdout.flush()
    sys.stderr.flush()
except OSError:  # A closed pipe, say: let Python report it as usual.
    raise SystemExit(status) from None
os._exit(status)
