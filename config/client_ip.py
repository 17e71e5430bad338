"""The client's address, the one way rate limits and login lockouts both read it.

DRF's rule with ``NUM_PROXIES`` (settings.TRUSTED_PROXIES): with no trusted proxy,
the connection's own address; with n, the n-th address from the end of
X-Forwarded-For, the one the outermost trusted proxy saw, so that addresses a client
writes into the header itself count for nothing.
"""

from rest_framework.throttling import BaseThrottle


def client_ip(request) -> str:
    return BaseThrottle().get_ident(request)
