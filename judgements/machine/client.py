"""Asking an OpenAI-compatible chat-completions endpoint for one grade, with retries.

The ``openai`` package's own client speaks to any such endpoint (a hosted API, vLLM,
Ollama, llama.cpp's server) given its base URL. Its built-in retries are turned off:
the judge retries itself, so that every attempt and the reason of the last failure are
recorded with the answer.
"""

import os
import time
from dataclasses import dataclass

import openai
from django.conf import settings

from judgements.machine.prompting import UnreadableAnswer, read_answer

# Failures worth another try: the server's fault or a busy server, not the request's.
RETRIED = (openai.APITimeoutError, openai.APIConnectionError, openai.InternalServerError)
RETRIED_STATUS = {408, 409, 429}
MAX_BACKOFF_SECONDS = 30.0
SYSTEM_MESSAGE = "You grade search results for relevance. Answer with JSON only."


class MissingKey(RuntimeError):
    """The judge names an API key variable the worker's environment lacks."""


@dataclass(frozen=True)
class Reply:
    grade: int | None  # None when the judge could not tell (``error`` says why).
    rationale: str
    error: str
    attempts: int
    tokens_in: int
    tokens_out: int
    latency_ms: int


def client_for(judge) -> openai.OpenAI:
    """A client for ``judge``'s endpoint; its key read from the variable it names."""
    key = "none"
    if judge.api_key_env:
        key = os.environ.get(judge.api_key_env, "")
        if not key:
            raise MissingKey(
                f"The environment variable {judge.api_key_env} (the judge's API key) is "
                "not set where the task runs."
            )
    return openai.OpenAI(
        base_url=judge.base_url, api_key=key, timeout=judge.timeout_seconds, max_retries=0
    )


def ask(client: openai.OpenAI, judge, prompt: str, grades: list[int]) -> Reply:
    """One grade for ``prompt``: up to ``judge.max_retries`` more tries after a timeout,
    a lost connection, a 5xx, 408, 409 or 429, waiting twice as long each time."""
    started, tokens_in, tokens_out = time.monotonic(), 0, 0
    attempts, error = 0, ""
    while attempts <= judge.max_retries:
        if attempts:
            time.sleep(backoff(attempts))
        attempts += 1
        try:
            response = _complete(client, judge, prompt)
        except openai.APIStatusError as failure:
            error = _described(failure)
            if not isinstance(failure, RETRIED) and failure.status_code not in RETRIED_STATUS:
                break
            continue
        except RETRIED as failure:
            error = _described(failure)
            continue
        usage = response.usage
        tokens_in += usage.prompt_tokens if usage else 0
        tokens_out += usage.completion_tokens if usage else 0
        content = response.choices[0].message.content if response.choices else ""
        try:
            grade, rationale = read_answer(content or "", grades)
        except UnreadableAnswer as failure:
            error = str(failure)
            break
        return Reply(grade, rationale, "", attempts, tokens_in, tokens_out, _ms(started))
    return Reply(None, "", error, attempts, tokens_in, tokens_out, _ms(started))


def backoff(attempt: int) -> float:
    """Seconds to wait before try ``attempt + 1``: the base, doubled each time, capped."""
    base = getattr(settings, "MACHINE_JUDGE_BACKOFF_SECONDS", 1.0)
    return min(MAX_BACKOFF_SECONDS, base * 2 ** (attempt - 1))


def _complete(client, judge, prompt: str):
    return client.chat.completions.create(
        model=judge.model,
        temperature=judge.temperature,
        messages=[
            {"role": "system", "content": SYSTEM_MESSAGE},
            {"role": "user", "content": prompt},
        ],
    )


def _described(failure: Exception) -> str:
    if isinstance(failure, openai.APITimeoutError):
        return "the model server did not answer in time"
    if isinstance(failure, openai.APIStatusError):
        return f"the model server answered HTTP {failure.status_code}: {failure.message}"[:500]
    return f"could not reach the model server: {failure}"[:500]


def _ms(started: float) -> int:
    return round(1000 * (time.monotonic() - started))
