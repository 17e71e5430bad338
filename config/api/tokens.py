"""API tokens: the page where a user creates and revokes theirs, and the service behind it.

Tokens are django-rest-knox's: the database keeps a SHA-512 digest of each key (and its
first 15 characters, to find the row), never the key, so a copy of the database signs
no one in. A user has at most one: "create" replaces any old token with a new one,
"revoke" deletes it. The key is shown once, right after it is created, on a page that
no cache may keep.
"""

from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods
from knox import auth
from knox.models import AuthToken


class TokenAuthentication(auth.TokenAuthentication):
    """Knox's token authentication, without its sweep of expired tokens on every call.

    Knox reads all the user's tokens on each request to delete expired ones. Tokens
    made here never expire (``expiry=None``; see ``token_create``), so the sweep found
    nothing and cost a query per API call; a token that does carry an expiry (made
    elsewhere) is still swept and refused once expired, by knox's own code.
    """

    def _cleanup_token(self, auth_token) -> bool:
        if auth_token.expiry is None:
            return False
        return super()._cleanup_token(auth_token)


@transaction.atomic
def token_create(*, user) -> str:
    """A new API token for ``user``, replacing any they had; returns its key."""
    AuthToken.objects.filter(user=user).delete()
    _, key = AuthToken.objects.create(user=user, expiry=None)
    return key


# no-store: the response that shows a new key must not be kept by the browser's cache
# (the back button, a shared computer) or by a proxy.
@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def token_page(request):
    new_key = None
    if request.method == "POST":
        if request.POST.get("action") == "create":
            new_key = token_create(user=request.user)
        else:
            AuthToken.objects.filter(user=request.user).delete()
    token = AuthToken.objects.filter(user=request.user).first()
    return render(request, "api/token.html", {"token": token, "new_key": new_key})
