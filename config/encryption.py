"""Secrets entered in the app (a machine judge's API key, a search endpoint's password),
sealed at rest with Fernet (AES-128-CBC with an HMAC-SHA256, from ``cryptography``).

The keys come from the ``ENCRYPTION_KEYS`` variable: one or more Fernet keys separated by
commas (make one with ``python -c "from cryptography.fernet import Fernet;
print(Fernet.generate_key().decode())"``). The first seals; every one unseals
(``MultiFernet``), so a key is rotated by putting a new one first and keeping the old
one after it until the secrets sealed with it have been entered again.

Without the variable:

- in production (DEBUG off) the app starts, but nothing can be sealed: ``seal`` raises
  ``SecretsUnavailable`` and the forms that take a secret say why and offer the other
  way (a key variable). Refusing to start instead would take down every deployment
  that does not use the feature; storing with a key anyone can read would be worse.
- in development and tests (DEBUG on) a key derived from ``SECRET_KEY`` is used, as
  insecure as that development key is, so that the feature works out of the box.

A malformed ``ENCRYPTION_KEYS`` stops the app at start (``keys_from``, in settings).
Sealed text is never shown again, logged or exported: nothing but ``unseal``, called
where the secret is sent, reads it, and no error message here includes it.
"""

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


class SecretsUnavailable(Exception):
    """No encryption key is configured, so secrets cannot be stored (or read)."""


class UnreadableSecret(Exception):
    """A sealed secret that none of the configured keys opens (or that was altered)."""


def keys_from(value: str, *, debug: bool, secret_key: str) -> list[bytes]:
    """The Fernet keys of ``ENCRYPTION_KEYS`` (``value``); in development without it, one
    derived from ``secret_key``; in production without it, none. Raises ValueError for a
    key that is not a Fernet key (32 bytes, URL-safe base64).

    >>> len(keys_from("", debug=True, secret_key="dev"))
    1
    >>> keys_from("", debug=False, secret_key="dev")
    []
    """
    keys = [key.strip().encode() for key in value.split(",") if key.strip()]
    for number, key in enumerate(keys, start=1):
        try:
            Fernet(key)
        except ValueError:
            raise ValueError(
                f"ENCRYPTION_KEYS: key {number} is not a Fernet key (32 bytes in URL-safe "
                "base64; make one with cryptography's Fernet.generate_key())"
            ) from None
    if not keys and debug:
        digest = hashlib.sha256(b"relevance-judge development secrets:" + secret_key.encode())
        keys = [base64.urlsafe_b64encode(digest.digest())]
    return keys


def can_seal() -> bool:
    """Whether a key is configured, so that a secret can be stored."""
    return bool(settings.ENCRYPTION_KEYS)


def _fernet() -> MultiFernet:
    if not settings.ENCRYPTION_KEYS:
        raise SecretsUnavailable(
            "The operator has not set ENCRYPTION_KEYS, so the server cannot store secrets."
        )
    return MultiFernet([Fernet(key) for key in settings.ENCRYPTION_KEYS])


def seal(text: str) -> str:
    """``text`` encrypted (and authenticated) with the first key, as ASCII text."""
    return _fernet().encrypt(text.encode()).decode("ascii")


def unseal(token: str) -> str:
    """The text ``seal`` sealed. Raises ``UnreadableSecret`` when no configured key opens
    it (a removed key, an altered value) and ``SecretsUnavailable`` without keys."""
    try:
        return _fernet().decrypt(token.encode("ascii")).decode()
    except (InvalidToken, UnicodeError):
        raise UnreadableSecret(
            "The stored secret cannot be read with the configured ENCRYPTION_KEYS "
            "(was its key removed?): enter it again."
        ) from None
