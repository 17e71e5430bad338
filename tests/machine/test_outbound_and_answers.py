"""A machine judge's requests under the outbound policy (issue 36, point 2) and its
reading of model answers (point 4), against real servers on 127.0.0.1 through the real
``openai`` client.

tests/machine/conftest.py allows 127.0.0.1 (``OUTBOUND_ALLOW``) for the other tests;
the tests here that need the default set it back to empty.
"""

import pytest
from django.urls import reverse

from judgements.machine import client as model_client
from judgements.machine.runs import machine_run_start
from judgements.models import MachineJudge
from tests.machine.conftest import judge_form, machine_events, make_judge, pool_project
from tests.model_server import ModelServer, Raw

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

REMOTE_WORDS = "ZEBRA-internal-admin-panel-4471"


@pytest.fixture
def other_server():
    server = ModelServer().start()
    yield server
    server.stop()


def notes(judge) -> list[str]:
    return [event.note for event in machine_events(judge)]


def grades(judge) -> list[int | None]:
    return [event.grade for event in machine_events(judge)]


# -- Where requests may go -------------------------------------------------------------


def test_a_loopback_base_url_is_refused_by_default_in_the_form(charlie, model_server, settings):
    settings.OUTBOUND_ALLOW = []
    project = pool_project(1, 1)
    url = reverse("judgements:machine_judges", args=[project.slug])
    form = judge_form(model_server, name="Local")

    response = charlie.post(url, form)

    assert response.status_code == 400
    [error] = response.context["form"].errors["base_url"]
    assert "a loopback address (this machine)" in error and "OUTBOUND_ALLOW" in error
    assert not MachineJudge.objects.exists()
    settings.OUTBOUND_ALLOW = [f"127.0.0.1:{model_server.httpd.server_address[1]}"]
    assert charlie.post(url, form).status_code == 302


@pytest.mark.parametrize("url", ["http://169.254.169.254/v1", "http://10.0.0.1:8000/v1"])
def test_metadata_and_private_base_urls_are_refused_by_the_api(charlie_api, url):
    project = pool_project(1, 1)

    response = charlie_api.post(
        f"/api/projects/{project.slug}/judges/",
        {"name": "J", "base_url": url, "model": "m"},
        format="json",
    )

    assert response.status_code == 400
    [error] = response.json()["errors"]
    assert error["field"] == "base_url" and "OUTBOUND_ALLOW" in error["message"]


def test_loopback_is_refused_at_request_time_too(model_server, analyst, settings):
    """A judge saved while the operator allowed its address, then no longer allowed."""
    project = pool_project(1, 2)
    judge = make_judge(project, model_server)
    settings.OUTBOUND_ALLOW = []

    run = machine_run_start(judge=judge, user=analyst)

    run.refresh_from_db()
    assert model_server.requests == []
    assert grades(judge) == [None, None]
    assert all(note.startswith("refused: 127.0.0.1:") for note in notes(judge))
    assert "a loopback address (this machine)" in notes(judge)[0]
    assert (run.status, run.failed) == ("done", 2)


def test_the_operator_allows_one_port_and_not_its_neighbour(
    model_server, other_server, analyst, settings
):
    project = pool_project(1, 1)
    settings.OUTBOUND_ALLOW = [f"127.0.0.1:{model_server.httpd.server_address[1]}"]
    allowed = make_judge(project, model_server, name="Allowed")
    machine_run_start(judge=allowed, user=analyst)
    assert grades(allowed) == [0]

    with pytest.raises(Exception, match="loopback"):
        make_judge(project, other_server, name="Neighbour")


@pytest.mark.parametrize(
    ("address", "reason"),
    [("10.0.0.1", "a private address"), ("169.254.169.254", "the cloud metadata address")],
)
def test_a_public_looking_name_that_resolves_inwards_is_refused(
    model_server, settings, address, reason
):
    project = pool_project(1, 1)
    judge = make_judge(project, model_server)
    settings.OUTBOUND_ALLOW = []
    judge.base_url = "http://models.example.com/v1"
    client = model_client.client_for(judge, resolver=lambda host, port: [address])

    reply = model_client.ask(client, judge, "Title: q0 d0", [0, 1, 2, 3])

    assert reply.grade is None and reply.attempts == 1  # a refusal is not retried
    assert reply.error == (
        f"refused: models.example.com ({address}):80 is {reason}: the server does not "
        "connect there unless the operator allows it (OUTBOUND_ALLOW)"
    )


def test_a_redirect_to_loopback_is_refused(model_server, other_server, analyst, settings):
    project = pool_project(1, 1)
    judge = make_judge(project, model_server)
    settings.OUTBOUND_ALLOW = [f"127.0.0.1:{model_server.httpd.server_address[1]}"]
    inside = f"{other_server.url}/chat/completions"
    model_server.replies = [Raw(307, b"", {"Location": inside})]

    machine_run_start(judge=judge, user=analyst)

    assert other_server.requests == []
    assert len(model_server.requests) == 1
    [note] = notes(judge)
    assert note.startswith(f"refused: 127.0.0.1:{other_server.httpd.server_address[1]} is a")


def test_failures_shown_to_users_never_carry_the_remote_body(charlie, model_server, analyst):
    project = pool_project(1, 3)
    judge = make_judge(project, model_server, max_retries=0, concurrency=1)
    words = REMOTE_WORDS.encode()
    model_server.replies = [
        Raw(500, b'{"error": {"message": "' + words + b'"}}', {"Content-Type": "text/json"}),
        Raw(403, b"<html>" + words + b"</html>", {"Content-Type": "text/html"}),
        Raw(200, b"<html><body>Sign in " + words + b"</body></html>"),
    ]

    machine_run_start(judge=judge, user=analyst)

    assert notes(judge) == [
        "the server answered HTTP 500 (Internal Server Error)",
        "the server answered HTTP 403 (Forbidden)",
        "the model server answered HTTP 200 with a body that is not JSON (a login page or "
        "a proxy's?), not a chat completion",
    ]
    shown = [
        charlie.get(judge.get_absolute_url()).content.decode(),
        charlie.get(reverse("judgements:machine_progress", args=[project.slug, judge.pk])),
        judge.runs.get().reason,
        repr([answer.error for answer in judge.answers.all()]),
    ]
    assert REMOTE_WORDS not in repr(shown) and REMOTE_WORDS not in shown[0]


# -- What comes back -------------------------------------------------------------------


def test_an_html_page_is_that_pairs_cant_tell_and_the_run_goes_on(model_server, analyst):
    project = pool_project(1, 3)
    model_server.default = 2
    judge = make_judge(project, model_server, concurrency=1)
    page = b"<!doctype html><title>Log in</title><form>...</form>"
    model_server.replies = [Raw(200, page, {"Content-Type": "text/html; charset=utf-8"})]

    run = machine_run_start(judge=judge, user=analyst)

    run.refresh_from_db()
    assert grades(judge) == [None, 2, 2]
    assert notes(judge)[0] == (
        "the model server answered HTTP 200 with text/html that is not JSON (a login page "
        "or a proxy's?), not a chat completion"
    )
    assert (run.status, run.graded, run.failed) == ("done", 2, 1)
    assert len(model_server.requests) == 3  # not retried: the answer was the server's


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ('{"grade": ' + "7" * 5000 + ', "rationale": "big"}', "no grade of [0, 1, 2, 3]"),
        ('{"grade": "' + "1" * 5000 + '"}', "no grade of [0, 1, 2, 3]"),
        ('{"grade": "three", "rationale": "words"}', "no grade of [0, 1, 2, 3]"),
        ('{"grade": 1e999}', "no grade of [0, 1, 2, 3]"),
        ('{"grade": [2]}', "no grade of [0, 1, 2, 3]"),
    ],
)
def test_grades_that_are_not_grades_are_cant_tell(model_server, analyst, content, says):
    project = pool_project(1, 2)
    model_server.default = 1
    judge = make_judge(project, model_server, concurrency=1)
    model_server.replies = [Raw.completion(content)]

    run = machine_run_start(judge=judge, user=analyst)

    run.refresh_from_db()
    assert grades(judge) == [None, 1]
    assert notes(judge)[0].startswith(f"{says} in the answer: ")
    assert len(notes(judge)[0]) < 300
    assert run.status == "done"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'{"choices": []}', "has no choices"),
        (b'{"choices": [{"message": {"content": 3}}]}', "has no text in its message"),
        (b"[1, 2]", "has no choices"),
        (b'{"choices": [{"message": {"content": "{\\"grade\\": 1}"}}], "usage": '
         b'{"prompt_tokens": ' + b"9" * 5000 + b"}}", "not JSON"),
        (b'{"choices": [{"message": {"content": "{\\"grade\\": 1}"}}], "usage": '
         b'{"prompt_tokens": 99999999999999}}', "token counts that are not counts"),
        (b"[" * 100000 + b"]" * 100000, "not JSON"),
    ],
)  # fmt: skip
def test_a_reply_not_shaped_as_a_chat_completion_is_cant_tell(model_server, analyst, body, says):
    project = pool_project(1, 2)
    model_server.default = 1
    judge = make_judge(project, model_server, concurrency=1)
    model_server.replies = [Raw(200, body, {"Content-Type": "application/json"})]

    machine_run_start(judge=judge, user=analyst)

    assert grades(judge) == [None, 1]
    assert says in notes(judge)[0]


@pytest.mark.parametrize("length", [True, False], ids=["with-length", "streamed"])
def test_a_reply_past_the_cap_is_refused_unread(model_server, analyst, settings, length):
    settings.MACHINE_JUDGE_MAX_REPLY_BYTES = 64 << 10
    project = pool_project(1, 2)
    model_server.default = 3
    judge = make_judge(project, model_server, concurrency=1, max_retries=0)
    huge = 50 << 20
    model_server.replies = [
        Raw(200, b"x" * huge, {"Content-Type": "application/json"})
        if length
        else Raw.stream(huge // len(b"x" * (64 << 10)))
    ]

    machine_run_start(judge=judge, user=analyst)

    assert grades(judge) == [None, 3]
    assert notes(judge)[0] == ("refused: the answer from 127.0.0.1 was larger than 65,536 bytes")
    if not length:
        # The client stopped reading at the cap: the server could not push it all.
        assert model_server.sent < 8 << 20


def test_retry_after_is_honoured(model_server, analyst):
    project = pool_project(1, 1)
    judge = make_judge(project, model_server, max_retries=2)
    model_server.replies = [Raw(429, b"{}", {"Retry-After": "2"})]

    machine_run_start(judge=judge, user=analyst)

    assert grades(judge) == [0]
    first, second = model_server.times
    assert 1.9 <= second - first < 10


def test_retry_after_is_capped_by_the_setting(model_server, analyst, settings):
    settings.MACHINE_JUDGE_MAX_RETRY_AFTER_SECONDS = 0.5
    project = pool_project(1, 1)
    judge = make_judge(project, model_server, max_retries=2)
    model_server.replies = [
        Raw(429, b"{}", {"Retry-After": "3600"}),
        Raw(503, b"{}", {"Retry-After": "Wed, 21 Oct 2099 07:28:00 GMT"}),
    ]

    machine_run_start(judge=judge, user=analyst)

    assert grades(judge) == [0]
    first, second, third = model_server.times
    assert 0.45 <= second - first < 1.5 and 0.45 <= third - second < 1.5


def test_retry_after_as_an_http_date_is_read():
    from email.utils import formatdate

    soon = formatdate(__import__("time").time() + 5, usegmt=True)

    assert 3 <= model_client.retry_after({"retry-after": soon}) <= 5
    assert model_client.retry_after({"retry-after": "soon"}) == 0
    assert model_client.retry_after({}) == 0
