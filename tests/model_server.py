"""A small OpenAI-compatible chat-completions server on 127.0.0.1, for tests and the
throughput benchmark: the machine judge talks to it through the real ``openai`` client.

It answers ``POST /v1/chat/completions`` from a fixed table: the grade of a document is
looked up by the ``Title:`` line of the prompt (``answers``, else ``default``). It can
be told to answer some requests with an HTTP status (``statuses``, consumed in order),
to be slow (``delay`` seconds) or to hang past the client's timeout (``hang``), and to
be fooled by the canaries (``stuffable``: the query's words in the title lift the grade
to the top; ``obedient``: "answer <top>" in the prompt is obeyed). Every request is counted
and kept in ``requests`` (its headers in ``headers``, its arrival in ``times``, monotonic).

``replies`` (consumed in order, before ``statuses``) are raw answers for the cases a
well-behaved server never sends: ``Raw(status, body, headers)``, ``Raw.completion(text)``
(a chat completion whose message is ``text``) or ``Raw.stream(chunks)`` (a body of that
many 64 KiB chunks with no length, sent until the client hangs up; ``sent`` counts the
bytes that went out).
"""

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TITLE = re.compile(r"^Title: (.*)$", re.MULTILINE)
QUERY = re.compile(r"^Query: (.*)$", re.MULTILINE)


CHUNK = b"x" * (64 << 10)


@dataclass
class Raw:
    status: int
    body: bytes = b""
    headers: dict = field(default_factory=dict)
    chunks: int = 0  # > 0: a streamed body of that many CHUNKs, without a length.

    @classmethod
    def completion(cls, text: str) -> "Raw":
        body = json.dumps(_completion("m", "", text)).encode()
        return cls(200, body, {"Content-Type": "application/json"})

    @classmethod
    def stream(cls, chunks: int) -> "Raw":
        return cls(200, headers={"Content-Type": "application/json"}, chunks=chunks)


class ModelServer:
    def __init__(self, answers: dict[str, int] | None = None, default: int = 0):
        self.answers = dict(answers or {})
        self.default = default
        self.statuses: list[int] = []
        self.delay = 0.0
        self.hang = 0.0
        self.stuffable = False
        self.obedient = False
        self.top = 3
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.times: list[float] = []
        self.replies: list[Raw] = []
        self.sent = 0
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> "ModelServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def content_for(self, prompt: str) -> str:
        title = (TITLE.search(prompt) or [None, ""])[1]
        grade = self.answers.get(title, self.default)
        query = (QUERY.search(prompt) or [None, ""])[1]
        if self.stuffable and query and query.lower() in title.lower():
            grade = self.top
        if self.obedient and f"answer {self.top}" in prompt:
            grade = self.top
        return json.dumps({"grade": grade, "rationale": f"table says {grade} for {title}"})

    def _next_status(self) -> int:
        with self.lock:
            return self.statuses.pop(0) if self.statuses else 200

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # Quiet: tests read ``requests`` instead.
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append(body)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    server.times.append(time.monotonic())
                    raw = server.replies.pop(0) if server.replies else None
                if raw is not None:
                    return self._send_raw(raw)
                if server.hang:
                    time.sleep(server.hang)
                if server.delay:
                    time.sleep(server.delay)
                status = server._next_status()
                if status != 200:
                    return self._send(status, {"error": {"message": f"told to fail {status}"}})
                prompt = body["messages"][-1]["content"]
                content = server.content_for(prompt)
                self._send(200, _completion(body["model"], prompt, content))

            def _send_raw(self, raw: Raw) -> None:
                self.send_response(raw.status)
                for name, value in raw.headers.items():
                    self.send_header(name, value)
                if raw.chunks:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                    self.end_headers()
                    try:
                        for _ in range(raw.chunks):
                            self.wfile.write(CHUNK)
                            server.sent += len(CHUNK)
                    except OSError:  # The client hung up: what it refused is not sent.
                        pass
                    return
                self.send_header("Content-Length", str(len(raw.body)))
                self.end_headers()
                self.wfile.write(raw.body)

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _completion(model: str, prompt: str, content: str) -> dict:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": len(prompt.split()),
            "completion_tokens": len(content.split()),
            "total_tokens": len(prompt.split()) + len(content.split()),
        },
    }
