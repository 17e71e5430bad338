"""Every connection an endpoint makes passes the app's one outbound policy.

The official clients connect through urllib3; their connection classes here resolve
the host, check every address with the policy (``config.outbound``), narrowed by
``SEARCH_ENDPOINT_ALLOW`` (``judgements.engines.safety``), and connect to the address
that was checked, so that a second DNS answer cannot slip another one in. TLS still
verifies the certificate against the host name the analyst typed. No client follows
a redirect: a request never goes to an address the analyst did not type.
"""

import threading

import httpx2
from elastic_transport import Urllib3HttpNode
from opensearchpy import Urllib3HttpConnection
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import NewConnectionError

from config import outbound
from judgements.engines import safety
from judgements.engines.safety import HostNotFound, OutboundRefused, ResponseTooLarge

# The largest answer read from Solr or a JSON search API (Elasticsearch and OpenSearch
# answer at most the depth asked for).
MAX_BODY_BYTES = 32 << 20

_local = threading.local()

__all__ = ["HostNotFound", "OutboundRefused", "ResponseTooLarge"]


class _Checked:
    """Mixin of a urllib3 connection: connect to the checked address of the host."""

    def _new_conn(self):
        try:
            self._dns_host = safety.checked_address(self.host, self.port)
        except (OutboundRefused, HostNotFound) as refused:
            raise NewConnectionError(self, str(refused)) from refused
        return super()._new_conn()


class CheckedHTTPConnection(_Checked, HTTPConnection):
    pass


class CheckedHTTPSConnection(_Checked, HTTPSConnection):
    pass


def _checked_pool(pool) -> None:
    pool.ConnectionCls = (
        CheckedHTTPSConnection if pool.scheme == "https" else CheckedHTTPConnection
    )


class CheckedElasticNode(Urllib3HttpNode):
    """elasticsearch-py's default node, its connections checked."""

    def __init__(self, config):
        super().__init__(config)
        _checked_pool(self.pool)


class CheckedOpenSearchConnection(Urllib3HttpConnection):
    """opensearch-py's default connection, its connections checked; it also keeps the
    ``Retry-After`` of the last error answer, which opensearch-py's errors drop."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _checked_pool(self.pool)
        factory = self._urllib3_pool_factory

        def checked_factory():
            pool = factory()
            _checked_pool(pool)
            return pool

        self._urllib3_pool_factory = checked_factory

    def get_response_headers(self, response):
        headers = super().get_response_headers(response)
        _local.retry_after = headers.get("retry-after")
        return headers


def last_retry_after() -> str | None:
    return getattr(_local, "retry_after", None)


def http_client(*, timeout: float, headers: dict) -> httpx2.Client:
    """The outbound policy's client for Solr and JSON search APIs."""
    return safety.http_client(timeout=timeout, headers=headers, max_body_bytes=MAX_BODY_BYTES)


class Redirected(Exception):
    pass


def send(client: httpx2.Client, request: httpx2.Request) -> httpx2.Response:
    """Send without following redirects (a 3xx is an error, not a new address)."""
    response = client.send(request, follow_redirects=False)
    if response.is_redirect:
        raise Redirected(
            f"The engine redirected (HTTP {response.status_code}); redirects are not "
            "followed: give the address it redirects to."
        )
    return response


def failure_message(error: Exception, endpoint) -> str:
    """What went wrong reaching the endpoint, in words safe to show: the policy's
    refusal as it says it, else the kind of failure (``config.outbound``), never what
    the remote sent."""
    for link in _chain(error):
        if isinstance(link, OutboundRefused | HostNotFound | Redirected):
            return _sentence(str(link))
    return _sentence(f"{endpoint.base_url}: {outbound.describe_failure(error)}")


def _sentence(text: str) -> str:
    if not text.startswith("http"):
        text = text[:1].upper() + text[1:]
    return text if text.endswith(".") else text + "."


def _chain(error: BaseException):
    """The error, its causes and (elastic_transport's) wrapped ``errors``."""
    seen, stack = set(), [error]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        stack += [current.__cause__, current.__context__]
        stack += [e for e in getattr(current, "errors", ()) if isinstance(e, BaseException)]
