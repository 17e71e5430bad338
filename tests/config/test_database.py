import builtins

import pytest
from django.db import connection

from config import database
from config.database import DatabaseUnavailable, config_from_url, database_config


def test_the_suite_runs_on_postgresql(db):
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version_num")
        assert int(cursor.fetchone()[0]) >= 150000


def test_database_url_is_used_when_set(tmp_path):
    url = "postgres://judge:s%40cret@db.internal:6543/relevance"
    config = database_config(tmp_path / "unused", environ={"DATABASE_URL": url})
    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert (config["NAME"], config["USER"], config["PASSWORD"]) == ("relevance", "judge", "s@cret")
    assert (config["HOST"], config["PORT"]) == ("db.internal", "6543")
    assert not (tmp_path / "unused").exists()


def test_socket_host_in_the_query_string_becomes_the_host():
    config = config_from_url("postgresql://postgres:@/judge?host=/run/pg&sslmode=disable")
    assert config["HOST"] == "/run/pg"
    assert config["NAME"] == "judge"
    assert config["OPTIONS"] == {"sslmode": "disable"}


def test_connections_are_kept_between_requests_and_checked_before_reuse():
    config = config_from_url("postgresql://postgres:@/judge", environ={})
    assert (config["CONN_MAX_AGE"], config["CONN_HEALTH_CHECKS"]) == (60, True)
    closed = config_from_url("postgresql://postgres:@/judge", {"DATABASE_CONN_MAX_AGE": "0"})
    assert closed["CONN_MAX_AGE"] == 0


def test_a_non_postgres_url_is_refused_with_the_scheme_named():
    with pytest.raises(DatabaseUnavailable, match=r"not sqlite://"):
        config_from_url("sqlite:///db.sqlite3")


def test_without_pgserver_or_postgres_on_path_it_says_what_to_install(tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_pgserver(name, *args, **kwargs):
        if name == "pgserver":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pgserver)
    monkeypatch.setattr(database.shutil, "which", lambda name: None)
    with pytest.raises(DatabaseUnavailable) as error:
        database.embedded_server_uri(tmp_path / "pgdata")
    message = str(error.value)
    assert message.endswith(".") and ". " not in message, "one sentence"
    assert "install PostgreSQL" in message and "DATABASE_URL" in message
