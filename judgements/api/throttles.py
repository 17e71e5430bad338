"""Rate limits for anonymous clients and for scripts that sign in with a token.

Rates are read when a request comes, not at import, so that settings overrides
(tests) and environment changes apply. Browser sessions are not limited.
"""

from rest_framework.authentication import TokenAuthentication
from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle


class _LiveRate:
    def get_rate(self):
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)


class AnonymousThrottle(_LiveRate, AnonRateThrottle):
    scope = "anon"


class TokenThrottle(_LiveRate, UserRateThrottle):
    scope = "token"

    def allow_request(self, request, view):
        if not isinstance(request.successful_authenticator, TokenAuthentication):
            return True
        return super().allow_request(request, view)
