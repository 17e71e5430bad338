"""Asking an OpenAI-compatible chat-completions endpoint for one grade, with retries.

The ``openai`` package's own client speaks to any such endpoint (a hosted API, vLLM,
Ollama, llama.cpp's server) given its base URL, here over the outbound policy's HTTP
client (``config.outbound``): every connection, redirects included, goes only where the
policy allows, and a reply body past ``MACHINE_JUDGE_MAX_REPLY_BYTES`` is refused while
it streams in. Its built-in retries are turned off: the judge retries itself (honouring
a 429's or 503's ``Retry-After`` up to ``MACHINE_JUDGE_MAX_RETRY_AFTER_SECONDS``), so
that every attempt and the reason of the last failure are recorded with the answer.

The reply is read by this module, not by ``openai``'s models: anything that is not a
chat completion (an HTML login page, a grade of 5,000 digits, a number for a token
count that is not one) is that pair's "can't tell" with the reason, never a crash. A
reason says what failed (refused, timed out, the HTTP status, the shape) and never
repeats what the server sent, except the model's own answer when it holds no grade.
"""

import email.utils
import json
import os
import time
from dataclasses import dataclass

import openai
from django.conf import settings

from config import outbound
from config.encryption import SecretsUnavailable, UnreadableSecret, unseal
from judgements.machine.prompting import UnreadableAnswer, read_answer
from judgements.models.machine import key_variable_problem

# Failures worth another try: the server's fault or a busy server, not the request's.
RETRIED = (openai.APITimeoutError, openai.APIConnectionError, openai.InternalServerError)
RETRIED_STATUS = {408, 409, 429}
MAX_BACKOFF_SECONDS = 30.0
# Token counts above this are not counts (and would not fit the answer's columns).
MAX_TOKENS = 2**31 - 1
SYSTEM_MESSAGE = "You grade search results for relevance. Answer with JSON only."


class MissingKey(RuntimeError):
    """The judge's key cannot be had: its variable is unset or not allowed, its stored
    key cannot be unsealed, or the judge's key must be set again (``key_problem``)."""


class NotACompletion(ValueError):
    """The server answered 200 with something that is not a chat completion."""


@dataclass(frozen=True)
class Reply:
    grade: int | None  # None when the judge could not tell (``error`` says why).
    rationale: str
    error: str
    attempts: int
    tokens_in: int
    tokens_out: int
    latency_ms: int


def key_of(judge) -> str:
    """The key ``judge`` sends as its bearer token ("none" when it has none)."""
    if judge.key_problem:
        raise MissingKey(judge.key_problem)
    if judge.api_key_encrypted:
        try:
            return unseal(judge.api_key_encrypted)
        except (UnreadableSecret, SecretsUnavailable) as error:
            raise MissingKey(f"The judge's stored key cannot be used: {error}") from None
    if not judge.api_key_env:
        return "none"
    # Checked again where the key is read: a row written past the form is no way round.
    if problem := key_variable_problem(judge.api_key_env):
        raise MissingKey(problem)
    key = os.environ.get(judge.api_key_env, "")
    if not key:
        raise MissingKey(
            f"The environment variable {judge.api_key_env} (the judge's API key) is "
            "not set where the task runs."
        )
    return key


def client_for(judge, *, resolver: outbound.Resolver | None = None) -> openai.OpenAI:
    """A client for ``judge``'s endpoint under the outbound policy, with its key.
    ``resolver`` replaces the system's DNS (tests of names that resolve inwards)."""
    http_client = outbound.client(
        timeout=judge.timeout_seconds,
        max_body_bytes=settings.MACHINE_JUDGE_MAX_REPLY_BYTES,
        resolver=resolver,
    )
    return openai.OpenAI(
        base_url=judge.base_url,
        api_key=key_of(judge),
        timeout=judge.timeout_seconds,
        max_retries=0,
        http_client=http_client,
    )


def ask(client: openai.OpenAI, judge, prompt: str, grades: list[int]) -> Reply:
    """One grade for ``prompt``: up to ``judge.max_retries`` more tries after a timeout,
    a lost connection, a 5xx, 408, 409 or 429, waiting twice as long each time (or as
    long as ``Retry-After`` asks, up to the maximum). A refusal of the outbound policy
    (the address, a reply too large) is not tried again."""
    started, tokens_in, tokens_out = time.monotonic(), 0, 0
    attempts, error, wait = 0, "", 0.0
    while attempts <= judge.max_retries:
        if attempts:
            time.sleep(wait)
        attempts += 1
        wait = backoff(attempts)
        try:
            content, used_in, used_out = completion_parts(_complete(client, judge, prompt))
        except NotACompletion as failure:
            error = str(failure)
            break
        except (outbound.OutboundRefused, outbound.HostNotFound) as refused:
            # Raised by the policy's transport, through openai unwrapped: not retried.
            error = _described(refused)
            break
        except openai.APIStatusError as failure:
            error = _described(failure)
            if not isinstance(failure, RETRIED) and failure.status_code not in RETRIED_STATUS:
                break
            wait = max(wait, retry_after(failure.response.headers))
            continue
        except RETRIED as failure:
            error = _described(failure)
            if _refused(failure):
                break
            continue
        except openai.OpenAIError as failure:  # Any other: this pair's can't tell.
            error = _described(failure)
            break
        tokens_in, tokens_out = tokens_in + used_in, tokens_out + used_out
        try:
            grade, rationale = read_answer(content, grades)
        except UnreadableAnswer as failure:
            error = str(failure)
            break
        return Reply(grade, rationale, "", attempts, tokens_in, tokens_out, _ms(started))
    return Reply(None, "", error, attempts, tokens_in, tokens_out, _ms(started))


def backoff(attempt: int) -> float:
    """Seconds to wait before try ``attempt + 1``: the base, doubled each time, capped."""
    base = getattr(settings, "MACHINE_JUDGE_BACKOFF_SECONDS", 1.0)
    return min(MAX_BACKOFF_SECONDS, base * 2 ** (attempt - 1))


def retry_after(headers) -> float:
    """The seconds a ``Retry-After`` header (seconds or an HTTP date) asks to wait, at
    most ``MACHINE_JUDGE_MAX_RETRY_AFTER_SECONDS``; 0 without one (or a bad one)."""
    value = (headers.get("retry-after") or "").strip()
    seconds = 0.0
    if value.isdigit() and len(value) < 10:
        seconds = float(value)
    elif value:
        try:
            when = email.utils.parsedate_to_datetime(value)
            seconds = when.timestamp() - time.time()
        except (TypeError, ValueError, IndexError, OverflowError):
            seconds = 0.0
    return max(0.0, min(seconds, settings.MACHINE_JUDGE_MAX_RETRY_AFTER_SECONDS))


def _complete(client, judge, prompt: str):
    """The reply's body, as JSON; raises ``NotACompletion`` for one that is not JSON
    and the ``openai`` errors for a status or a connection that failed."""
    raw = client.chat.completions.with_raw_response.create(
        model=judge.model,
        temperature=judge.temperature,
        messages=[
            {"role": "system", "content": SYSTEM_MESSAGE},
            {"role": "user", "content": prompt},
        ],
    )
    response = raw.http_response
    try:
        return json.loads(response.content)
    except (ValueError, RecursionError):
        kind = response.headers.get("content-type", "").split(";")[0].strip()[:40]
        raise NotACompletion(
            f"the model server answered HTTP 200 with {kind or 'a body'} that is not JSON "
            "(a login page or a proxy's?), not a chat completion"
        ) from None


def completion_parts(body) -> tuple[str, int, int]:
    """The answer's text and its input and output tokens, from a chat completion's JSON;
    ``NotACompletion`` saying what is missing when ``body`` is not one."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise NotACompletion("the model server's answer has no choices: not a chat completion")
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str | None):
        raise NotACompletion("the model server's answer has no text in its message")
    usage = body.get("usage") or {}
    counts = [usage.get(name, 0) if isinstance(usage, dict) else None for name in _USAGE]
    if not all(_count(value) for value in counts):
        raise NotACompletion("the model server's answer has token counts that are not counts")
    return content or "", counts[0] or 0, counts[1] or 0


_USAGE = ("prompt_tokens", "completion_tokens")


def _count(value) -> bool:
    if value is None:
        return True
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS


def _refused(failure: BaseException | None) -> bool:
    """Whether the outbound policy refused (somewhere in ``failure``'s causes)."""
    for _ in range(10):
        if failure is None or isinstance(failure, outbound.OutboundRefused):
            return failure is not None
        failure = failure.__cause__ or failure.__context__
    return False


def _described(failure: Exception) -> str:
    """What failed, for the answer's note and the run's page: the policy's words, never
    the remote body (``config.outbound.describe_failure``)."""
    return outbound.describe_failure(failure)[:500]


def _ms(started: float) -> int:
    return round(1000 * (time.monotonic() - started))
