"""The page where a user creates and revokes their API token.

DRF's authtoken keeps one token per user: "create" replaces any old token with a
new one, "revoke" deletes it. The key is shown once, right after it is created.
"""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_http_methods
from rest_framework.authtoken.models import Token


def token_create(*, user) -> str:
    """A new API token for ``user``, replacing any they had; returns its key."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user).key


@login_required
@require_http_methods(["GET", "POST"])
def token_page(request):
    new_key = None
    if request.method == "POST":
        Token.objects.filter(user=request.user).delete()
        if request.POST.get("action") == "create":
            new_key = Token.objects.create(user=request.user).key
    token = Token.objects.filter(user=request.user).first()
    return render(request, "api/token.html", {"token": token, "new_key": new_key})
