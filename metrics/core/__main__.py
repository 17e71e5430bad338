"""Entry point of ``python -m metrics.core``; see :mod:`metrics.core.cli`.

The package's ``__init__`` sets the environment numpy reads when it loads
(see there): it runs before this module, and before numpy is imported.
"""

from metrics.core.cli import main

raise SystemExit(main())
