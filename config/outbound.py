"""The one policy for requests the server makes on a user's behalf (machine judges,
search endpoints): where they may go, how much they may bring back, and what a user is
told when they fail.

An address a user typed must not reach the server's own neighbourhood: loopback, link-
local (the cloud metadata address 169.254.169.254 among them), private, shared,
reserved, multicast and unspecified addresses are refused unless the operator allows
them in ``settings.OUTBOUND_ALLOW`` (the ``OUTBOUND_ALLOW`` variable: a comma-separated
list of host names, IP addresses or CIDR networks, each optionally with ``:port``, e.g.
``127.0.0.1:11434,ollama,10.2.0.0/16``). Only global unicast addresses are allowed
otherwise. The check is made after DNS resolution, on the addresses the connection will
use, so a name that resolves to a private address is refused like the address itself.

Public functions:

- ``allowed_addresses(host, port)``: resolve ``host`` and return the addresses a
  connection may use, or raise ``OutboundRefused`` (or ``HostNotFound``). Independent of
  any HTTP library: an adapter for another client (urllib3) connects to what it returns.
- ``check_url(url)``: the same for a URL (http or https only), for forms to call.
- ``client(...)``: an ``httpx2.Client`` (the ``openai`` package's HTTP library; pass it as
  ``openai.OpenAI(http_client=...)``) whose every connection is checked at connect time
  on the address it actually connects to: the transport resolves the name once, checks
  the addresses and connects to a checked one, so neither DNS rebinding (a name that
  resolves elsewhere the second time) nor a redirect gets round the policy. TLS still
  verifies the certificate against the host name. A reply body is read as a stream and
  refused past ``max_body_bytes`` (or past ``max_seconds`` in all), and environment
  proxies are ignored (a proxy would connect where the policy cannot see).
- ``describe_failure(error)``: a short sentence for users (refused, not found, timed
  out, could not connect, HTTP status), which never repeats what the remote server sent.
"""

import functools
import ipaddress
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import urlsplit

import httpcore2
import httpx2
from django.conf import settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
# (host, port) -> the addresses the name resolves to; socket.getaddrinfo by default.
Resolver = Callable[[str, int], list[str]]

# The largest reply body a client reads unless told otherwise (10 MiB).
DEFAULT_MAX_BODY_BYTES = 10 << 20
NAT64 = ipaddress.ip_network("64:ff9b::/96")
SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}


class OutboundRefused(Exception):
    """The policy refuses this destination (or reply). The message is safe to show a
    user: it names the host, the address and why, never anything the remote sent."""

    def __init__(self, message: str, *, host: str = "", address: str = ""):
        super().__init__(message)
        self.host, self.address = host, address


class ResponseTooLarge(OutboundRefused):
    """The reply's body was larger than the client's cap; it was not read past it."""


class HostNotFound(Exception):
    """The host name does not resolve."""

    def __init__(self, host: str):
        super().__init__(f"the host {host} could not be found (DNS)")
        self.host = host


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


@dataclass(frozen=True)
class Allowed:
    """One ``OUTBOUND_ALLOW`` entry: a host name or a network, and a port or any."""

    host: str = ""
    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
    port: int | None = None

    def admits(self, host: str, address: Address, port: int) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.network is not None:
            return address in self.network
        return self.host == host


def parse_allow(entries: list[str]) -> list[Allowed]:
    """``OUTBOUND_ALLOW`` read: ``name``, ``name:port``, ``1.2.3.4``, ``10.0.0.0/8:443``,
    ``::1``, ``[::1]:8080``, ``[fd00::/8]:443``. Raises ValueError naming a bad entry.

    >>> parse_allow(["127.0.0.1:11434", "Ollama"])[1].host
    'ollama'
    """
    return [_parse_entry(entry.strip()) for entry in entries if entry.strip()]


def _parse_entry(entry: str) -> Allowed:
    target, port = entry, None
    if entry.startswith("["):
        target, _, rest = entry[1:].partition("]")
        port = rest.removeprefix(":") or None
    elif entry.count(":") == 1:
        target, port = entry.split(":")
    try:
        number = int(port) if port is not None else None
        if number is not None and not 0 < number < 65536:
            raise ValueError
    except ValueError:
        raise ValueError(f"OUTBOUND_ALLOW: {entry!r} has a port that is not 1-65535") from None
    try:
        return Allowed(network=ipaddress.ip_network(target, strict=False), port=number)
    except ValueError:
        pass
    name = target.lower().rstrip(".")
    labels = [part.replace("-", "").replace("_", "") for part in name.split(".")]
    if not name or not all(label.isalnum() for label in labels):
        raise ValueError(f"OUTBOUND_ALLOW: {entry!r} is not a host name, address or network")
    return Allowed(host=name, port=number)


def _allowances() -> list[Allowed]:
    value = getattr(settings, "OUTBOUND_ALLOW", [])
    return _parsed(tuple(value.split(",") if isinstance(value, str) else value))


@functools.lru_cache(maxsize=8)
def _parsed(entries: tuple[str, ...]) -> list[Allowed]:
    return parse_allow(list(entries))


def refusal_reason(address: Address) -> str | None:
    """Why the policy refuses ``address`` (before any allowance), or None if it is a
    global unicast address. IPv4 inside IPv6 (mapped, NAT64, 6to4) is judged as IPv4.

    >>> refusal_reason(ipaddress.ip_address("169.254.169.254"))
    'the cloud metadata address'
    >>> refusal_reason(ipaddress.ip_address("::ffff:10.0.0.1"))
    'a private address'
    >>> refusal_reason(ipaddress.ip_address("8.8.8.8")) is None
    True
    """
    address = _embedded_ipv4(address)
    if address in METADATA:
        return "the cloud metadata address"
    for test, reason in (
        ("is_unspecified", "an unspecified address"),
        ("is_loopback", "a loopback address (this machine)"),
        ("is_link_local", "a link-local address"),
        ("is_multicast", "a multicast address"),
        ("is_reserved", "a reserved address"),
        ("is_private", "a private address"),
    ):
        if getattr(address, test):
            return reason
    return None if address.is_global else "not a public address"


def _embedded_ipv4(address: Address) -> Address:
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address in NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if address.sixtofour is not None:
            return address.sixtofour
    return address


def allowed_addresses(host: str, port: int, *, resolver: Resolver | None = None) -> list[Address]:
    """The addresses a connection to ``host``:``port`` may use: ``host`` resolved (an IP
    literal is itself), every address checked against the policy.

    Raises ``HostNotFound`` when the name does not resolve, and ``OutboundRefused`` when
    any address it resolves to is refused: a name that points both outside and inside
    is refused whole rather than trusted for its public half.
    """
    name = host.lower().rstrip(".").strip("[]")
    try:
        found = (resolver or system_resolver)(name, port)
    except (OSError, UnicodeError):
        raise HostNotFound(name) from None
    addresses = [ipaddress.ip_address(text.split("%")[0]) for text in found]
    if not addresses:
        raise HostNotFound(name)
    allowances = _allowances()
    for address in addresses:
        reason = refusal_reason(address)
        if reason and not any(allowed.admits(name, address, port) for allowed in allowances):
            raise OutboundRefused(
                f"{_shown(name, address, port)} is {reason}: the server does not connect "
                "there unless the operator allows it (OUTBOUND_ALLOW)",
                host=name,
                address=str(address),
            )
    return addresses


def _shown(name: str, address: Address, port: int) -> str:
    """``localhost (127.0.0.1):80``, ``[::1]:80``: the name and the address it gave."""
    literal = f"[{address}]" if address.version == 6 else str(address)
    if name == str(address):
        return f"{literal}:{port}"
    return f"{name} ({address}):{port}"


def check_url(url: str, *, resolver: Resolver | None = None) -> list[Address]:
    """``allowed_addresses`` for ``url``'s host and port; only http and https URLs."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OutboundRefused(f"{url[:100]} is not an http:// or https:// address")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise OutboundRefused(f"{url[:100]} has a port that is not 1-65535") from None
    return allowed_addresses(parts.hostname, port, resolver=resolver)


class _CheckedBackend(httpcore2.SyncBackend):
    """Resolves, checks and connects to a checked address: the only way out."""

    def __init__(self, resolver: Resolver | None):
        self.resolver = resolver

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        try:
            addresses = allowed_addresses(host, port, resolver=self.resolver)
        except HostNotFound as missing:
            raise httpcore2.ConnectError(str(missing)) from missing
        failure = None
        for address in addresses:
            try:
                return super().connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except httpcore2.ConnectError as error:
                failure = error
        raise failure


class _CappedStream(httpx2.SyncByteStream):
    def __init__(self, stream, *, cap: int, deadline: float, host: str):
        self.stream, self.cap, self.deadline, self.host = stream, cap, deadline, host

    def __iter__(self) -> Iterator[bytes]:
        read = 0
        for chunk in self.stream:
            read += len(chunk)
            if read > self.cap:
                raise ResponseTooLarge(
                    f"the answer from {self.host} was larger than {self.cap:,} bytes"
                )
            if time.monotonic() > self.deadline:
                raise httpx2.ReadTimeout(f"the answer from {self.host} took too long")
            yield chunk

    def close(self) -> None:
        self.stream.close()


class _Transport(httpx2.HTTPTransport):
    """httpx2's transport with the checked network backend and a capped reply body."""

    def __init__(self, *, resolver, max_body_bytes: int, max_seconds: float, verify):
        super().__init__(verify=verify, trust_env=False)
        # The parent's pool, built again with the checking backend (httpx2 takes no
        # backend of its own); tests/config/test_outbound.py fails if this goes unused.
        self._pool = httpcore2.ConnectionPool(
            ssl_context=httpx2.create_ssl_context(verify=verify, trust_env=False),
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=_CheckedBackend(resolver),
        )
        self.max_body_bytes, self.max_seconds = max_body_bytes, max_seconds

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        deadline = time.monotonic() + self.max_seconds
        response = super().handle_request(request)
        host = request.url.host
        encoding = response.headers.get("content-encoding", "identity").lower()
        length = response.headers.get("content-length", "")
        too_large = length.isdigit() and int(length) > self.max_body_bytes
        if encoding != "identity" or too_large:
            response.close()
            if too_large:
                raise ResponseTooLarge(
                    f"the answer from {host} was larger than {self.max_body_bytes:,} bytes"
                )
            # Asked for none: a compressed body could unpack past any cap.
            raise OutboundRefused(f"{host} sent a compressed answer ({encoding[:20]})")
        response.stream = _CappedStream(
            response.stream, cap=self.max_body_bytes, deadline=deadline, host=host
        )
        return response


def client(
    *,
    timeout: float,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_seconds: float | None = None,
    follow_redirects: bool = True,
    resolver: Resolver | None = None,
    headers: dict | None = None,
    verify: ssl.SSLContext | bool = True,
) -> httpx2.Client:
    """An ``httpx2.Client`` under the policy: every connection (redirects included, at
    most 5) is checked where it connects, a reply body past ``max_body_bytes`` or still
    coming ``max_seconds`` after the request (default: 2 x ``timeout``) is refused, and
    compressed bodies are not asked for. ``timeout`` bounds each connect and read."""
    transport = _Transport(
        resolver=resolver,
        max_body_bytes=max_body_bytes,
        max_seconds=max_seconds if max_seconds is not None else 2 * timeout,
        verify=verify,
    )
    return httpx2.Client(
        transport=transport,
        timeout=timeout,
        follow_redirects=follow_redirects,
        max_redirects=5,
        trust_env=False,
        headers={"Accept-Encoding": "identity", **(headers or {})},
    )


def describe_failure(error: BaseException) -> str:
    """What went wrong, in a few words for the user: refused (and why), not found,
    timed out, could not connect, TLS failed, or the HTTP status. The remote server's
    own words (its body, its reason phrase) are never repeated; the causes of wrapped
    errors (``openai``'s, ``requests``') are looked through."""
    for link in _chain(error):
        if isinstance(link, (OutboundRefused, HostNotFound)):
            return f"refused: {link}" if isinstance(link, OutboundRefused) else str(link)
    for link in _chain(error):
        status = getattr(link, "status_code", None) or getattr(
            getattr(link, "response", None), "status_code", None
        )
        if isinstance(status, int):
            return f"the server answered HTTP {describe_status(status)}"
        if isinstance(link, (httpx2.TimeoutException, TimeoutError, socket.timeout)):
            return "timed out: the server did not answer in time"
        if isinstance(link, ssl.SSLError) or "CERTIFICATE" in str(link).upper():
            return "the TLS connection failed (certificate or protocol)"
        if isinstance(link, (httpx2.ConnectError, ConnectionError)):
            return "could not connect to the server (refused or unreachable)"
    if any(isinstance(link, httpx2.TransportError) for link in _chain(error)):
        return "the connection to the server failed before a full answer came back"
    return "the request failed before an answer came back"


def describe_status(status: int) -> str:
    """``503 (Service Unavailable)``: the code and the standard phrase, never the remote
    server's own."""
    try:
        return f"{status} ({HTTPStatus(status).phrase})"
    except ValueError:
        return str(status)


def _chain(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    while error is not None and error not in seen and len(seen) < 10:
        seen.append(error)
        error = error.__cause__ or error.__context__
    return seen
