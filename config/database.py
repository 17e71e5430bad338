"""Where the database lives: ``DATABASE_URL`` if set, else an embedded PostgreSQL.

The embedded server comes from the ``pgserver`` package (PostgreSQL 16 wheels for
CPython 3.9-3.12). Where that package is missing, a PostgreSQL found on PATH
(``initdb`` and ``pg_ctl``) is started the same way. The server is left running when
the process ends so that the next command, test run or worker reuses it in a second;
``make db-stop`` stops it.
"""

import os
import shutil
import subprocess
import warnings
from contextlib import suppress
from functools import partial
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

DEFAULT_DB_NAME = "relevance_judge"
INSTALL_HINT = (
    "No PostgreSQL available: use Python 3.12 (so that the pgserver package installs), "
    "install PostgreSQL so that initdb and pg_ctl are on PATH, or set DATABASE_URL."
)


class DatabaseUnavailable(RuntimeError):
    pass


def database_config(data_dir: Path, environ=os.environ) -> dict:
    """Return Django's ``DATABASES["default"]`` for this environment."""
    url = environ.get("DATABASE_URL", "").strip()
    if url:
        return config_from_url(url, environ)
    return config_from_url(embedded_server_uri(data_dir), environ)


def config_from_url(url: str, environ=os.environ) -> dict:
    """Turn ``postgres://user:password@host:port/name?host=/socket`` into Django's dict."""
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        raise DatabaseUnavailable(
            f"DATABASE_URL must start with postgres:// or postgresql://, not {parts.scheme}://"
        )
    query = parse_qs(parts.query)
    host = query.pop("host", [parts.hostname or ""])[0]
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parts.path.lstrip("/")) or DEFAULT_DB_NAME,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": host,
        "PORT": str(parts.port or ""),
        # Each web process keeps its connection between requests (a new PostgreSQL
        # backend costs a fork, and compiling the triggers' PL/pgSQL again, on every
        # request otherwise); Django checks it before reuse and opens a new one when
        # the server went away, so an outage still heals by itself.
        "CONN_MAX_AGE": int(environ.get("DATABASE_CONN_MAX_AGE", "60")),
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {key: values[0] for key, values in query.items()},
    }


def embedded_server_uri(data_dir: Path) -> str:
    """Start (or reuse) the project's own PostgreSQL and return a URI for its database."""
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    # platformdirs (used by pgserver) warns when XDG_RUNTIME_DIR is unset, at import
    # and again at exit; its fallback folder is fine.
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
    try:
        import pgserver
    except ImportError:
        uri = _path_server_uri(data_dir)
        restart = None
    else:
        # cleanup_mode=None keeps the server up after this process exits, so that
        # manage.py commands and test workers share one running server.
        server = pgserver.get_server(data_dir, cleanup_mode=None)
        uri = server.get_uri()
        restart = partial(_restart_pgserver, pgserver, server)
    _prepare_server(uri, DEFAULT_DB_NAME, restart)
    return _with_database(uri, DEFAULT_DB_NAME)


def _with_database(uri: str, name: str) -> str:
    """Swap the database name in a URI whose query may hold a socket path."""
    base, _, query = uri.partition("?")
    return base.rsplit("/", 1)[0] + "/" + name + ("?" + query if query else "")


def _path_server_uri(data_dir: Path) -> str:
    """Run a PostgreSQL from PATH on a Unix socket inside ``data_dir``."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if not (initdb and pg_ctl):
        raise DatabaseUnavailable(INSTALL_HINT)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        raise DatabaseUnavailable(
            "PostgreSQL refuses to run as root: install the pgserver package "
            "(Python 3.12) or set DATABASE_URL."
        )
    socket_dir = data_dir / "socket"
    if not (data_dir / "PG_VERSION").exists():
        subprocess.run(
            [initdb, "-D", str(data_dir), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
            check=True,
            capture_output=True,
        )
    socket_dir.mkdir(exist_ok=True)
    status = subprocess.run([pg_ctl, "-D", str(data_dir), "status"], capture_output=True)
    if status.returncode != 0:
        options = f"-h '' -k {socket_dir}"
        log = str(data_dir / "server.log")
        subprocess.run(
            [pg_ctl, "-D", str(data_dir), "-o", options, "-l", log, "-w", "start"], check=True
        )
    return f"postgresql://postgres:@/postgres?host={socket_dir}"


# The embedded server is a development and test database on one disk: larger WAL
# segments between checkpoints make bulk loads (generate_load, imports) several
# times faster, and asynchronous commit makes the test suite faster. Neither risks
# corruption; a crash may lose the last few hundred milliseconds of commits.
EMBEDDED_SERVER_SETTINGS = {
    "shared_buffers": "512MB",
    "max_wal_size": "8GB",
    "checkpoint_timeout": "30min",
    "synchronous_commit": "off",
}


def _prepare_server(uri: str, name: str, restart) -> None:
    """Tune the embedded server once and create the app's database if missing."""
    if _with_cursor(uri, _tune) and restart is not None:
        restart()
    _with_cursor(uri, partial(_create_database, name=name))


def _with_cursor(uri: str, action):
    import psycopg2

    connection = psycopg2.connect(uri)
    connection.autocommit = True
    try:
        with connection.cursor() as cursor:
            return action(cursor)
    finally:
        connection.close()


def _create_database(cursor, name: str) -> None:
    import psycopg2

    cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
    if cursor.fetchone() is None:
        # Another process may create it between the check and the CREATE.
        with suppress(psycopg2.errors.DuplicateDatabase):
            cursor.execute(f'CREATE DATABASE "{name}"')


def _tune(cursor) -> bool:
    """Apply EMBEDDED_SERVER_SETTINGS; return whether a restart is needed for them."""
    cursor.execute("SHOW synchronous_commit")
    if cursor.fetchone()[0] == EMBEDDED_SERVER_SETTINGS["synchronous_commit"]:
        return False  # Tuned by an earlier run.
    for setting, value in EMBEDDED_SERVER_SETTINGS.items():
        cursor.execute(f"ALTER SYSTEM SET {setting} = %s", [value])
    cursor.execute("SELECT pg_reload_conf()")
    return True


def _restart_pgserver(pgserver, server) -> None:
    # shared_buffers takes effect only at start; this happens once, on first use.
    user = server.system_user
    log = str(server.log)
    pgserver.pg_ctl(["-w", "-l", log, "restart"], pgdata=server.pgdata, user=user)
