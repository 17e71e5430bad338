"""A small HTTP(S) server on 127.0.0.1 that answers every request with ``respond``, for
tests of the outbound policy (config/outbound.py) and of the clients built on it.

``respond(handler)`` writes the answer through the ``BaseHTTPRequestHandler``; every
request's path and headers are kept in ``requests``, so a test can assert that a
refused request never arrived.
"""

import contextlib
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class WebServer:
    def __init__(self, respond: Callable, *, tls: ssl.SSLContext | None = None):
        self.respond = respond
        self.requests: list[dict] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    def url(self, path: str = "/", host: str = "127.0.0.1", scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port}{path}"

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def handle_one_request(self):
                # A TLS handshake the client gave up on ends the connection quietly.
                with contextlib.suppress(ssl.SSLError, ConnectionError):
                    super().handle_one_request()

            def _any(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                server.requests.append({"path": self.path, "headers": headers, "body": body})
                server.respond(self)

            do_GET = do_POST = _any

        return Handler


@contextlib.contextmanager
def serving(respond: Callable, *, tls: ssl.SSLContext | None = None):
    server = WebServer(respond, tls=tls)
    server.thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()


def answer(handler, status: int = 200, body: bytes = b"{}", **headers) -> None:
    """Send ``status`` with ``body`` (JSON unless ``content_type`` says otherwise)."""
    handler.send_response(status)
    handler.send_header("Content-Type", headers.pop("content_type", "application/json"))
    handler.send_header("Content-Length", str(len(body)))
    for name, value in headers.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.end_headers()
    handler.wfile.write(body)
