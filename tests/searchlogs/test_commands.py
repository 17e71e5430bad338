from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from searchlogs.models import SearchEvent
from tests.searchlogs.conftest import WORKED_LOG, jsonl


def run(*args):
    out, err = StringIO(), StringIO()
    call_command("import_search_log", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_imports_a_file_with_a_progress_bar(queries, tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(jsonl(*WORKED_LOG))

    out, err = run("outdoor", str(path))

    assert "Read 9 events (5 impressions, 2 clicks, 2 dwells): 9 stored, 0 already stored." in out
    assert "2 results pages matched no query" in out and "sleeping bag" in out
    assert "100%" in err
    assert SearchEvent.objects.count() == 9
    assert "0 stored, 9 already stored" in run("outdoor", str(path))[0]


def test_a_bad_file_prints_each_error_and_imports_nothing(queries, tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(jsonl(WORKED_LOG[0]) + b"{oops\n")
    err = StringIO()

    with pytest.raises(CommandError, match="Nothing was imported: 1 errors"):
        call_command("import_search_log", "outdoor", str(path), stdout=StringIO(), stderr=err)

    assert "line 2: This is not valid JSON" in err.getvalue()
    assert SearchEvent.objects.count() == 0


def test_an_unknown_project_is_named(db, tmp_path):
    with pytest.raises(CommandError, match='No project has the slug "nope"'):
        run("nope", str(tmp_path))
