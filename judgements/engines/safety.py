"""Which addresses an endpoint may reach: the app's one outbound policy
(``config.outbound``: no loopback, private, link-local or metadata address unless the
operator's ``OUTBOUND_ALLOW`` names it), narrowed by ``SEARCH_ENDPOINT_ALLOW``.

``SEARCH_ENDPOINT_ALLOW`` (comma-separated; empty: no narrowing) lists the hosts
endpoints may name: a host name (``search.example.org``), every name under a domain
(``*.example.org``), or an address or network (``10.2.0.0/16``), which the host's
resolved addresses must fall in. It can only take away: an address the outbound
policy refuses stays refused whatever it lists.
"""

import ipaddress
from urllib.parse import urlsplit

from django.conf import settings

from config import outbound
from config.outbound import HostNotFound, OutboundRefused, ResponseTooLarge

__all__ = [
    "HostNotFound",
    "OutboundRefused",
    "ResponseTooLarge",
    "checked_address",
    "endpoint_url_problem",
    "http_client",
]


def _entries() -> list[str]:
    return [entry.strip().lower() for entry in settings.SEARCH_ENDPOINT_ALLOW if entry.strip()]


def _network(entry: str):
    try:
        return ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return None


def _name_listed(host: str, entries: list[str]) -> bool:
    host = host.lower().rstrip(".")
    return any(
        host == entry or (entry.startswith("*.") and host.endswith(entry[1:]))
        for entry in entries
        if _network(entry) is None
    )


def _address_listed(address: str, entries: list[str]) -> bool:
    ip = ipaddress.ip_address(address)
    return any(ip in network for entry in entries if (network := _network(entry)) is not None)


def endpoint_url_problem(url: str) -> str | None:
    """Why an analyst's base URL cannot be used (checked when the endpoint is saved,
    without resolving it), or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "The base URL must start with http:// or https:// and name a host."
    if parts.username or parts.password:
        return "Put credentials in the authentication fields, not in the URL."
    entries = _entries()
    if entries and not _name_listed(parts.hostname, entries):
        network = _network(parts.hostname)
        if network is None or not _address_listed(parts.hostname, entries):
            return f"{parts.hostname} is not among the hosts SEARCH_ENDPOINT_ALLOW allows."
    return None


def narrowed_resolver(host: str, port: int) -> list[str]:
    """The outbound policy's resolver, refusing first a host ``SEARCH_ENDPOINT_ALLOW``
    does not list (by name, or by every address it resolves to)."""
    found = outbound.system_resolver(host, port)
    entries = _entries()
    listed = not entries or _name_listed(host, entries)
    inside = found and all(_address_listed(a.split("%")[0], entries) for a in found)
    if not listed and not inside:
        raise OutboundRefused(
            f"{host} is not among the hosts SEARCH_ENDPOINT_ALLOW allows", host=host
        )
    return found


def checked_address(host: str, port: int) -> str:
    """The address to connect to for ``host``: resolved, narrowed by
    ``SEARCH_ENDPOINT_ALLOW`` and checked by the outbound policy. Raises
    OutboundRefused (or HostNotFound)."""
    return str(outbound.allowed_addresses(host, port, resolver=narrowed_resolver)[0])


def http_client(*, timeout: float, headers: dict, max_body_bytes: int):
    """The outbound policy's client (httpx2: checked at connect time, body capped, no
    redirects followed), its resolver narrowed by ``SEARCH_ENDPOINT_ALLOW``."""
    return outbound.client(
        timeout=timeout,
        headers=headers,
        follow_redirects=False,
        resolver=narrowed_resolver,
        max_body_bytes=max_body_bytes,
    )
