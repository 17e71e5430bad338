"""Secrets entered in the app, sealed with Fernet keys from ENCRYPTION_KEYS
(config/encryption.py): sealed text hides them, any listed key opens them, production
without a key stores nothing and a malformed key stops the app at start."""

import subprocess
import sys

import pytest
from cryptography.fernet import Fernet

from config import encryption
from config.encryption import SecretsUnavailable, UnreadableSecret
from tests.config.test_production import ROOT, production_environment

SECRET = "sk-test-0123456789abcdef"


def test_a_sealed_secret_hides_its_text_and_unseals_to_it():
    token = encryption.seal(SECRET)
    assert SECRET not in token and token != encryption.seal(SECRET)  # a fresh IV each time
    assert encryption.unseal(token) == SECRET


def test_an_altered_token_or_a_removed_key_is_unreadable_without_echoing_anything(settings):
    token = encryption.seal(SECRET)
    altered = token[:-6] + ("A" if token[-6] != "A" else "B") + token[-5:]
    with pytest.raises(UnreadableSecret) as error:
        encryption.unseal(altered)
    assert SECRET not in str(error.value) and altered not in str(error.value)
    settings.ENCRYPTION_KEYS = [Fernet.generate_key()]
    with pytest.raises(UnreadableSecret, match="enter it again"):
        encryption.unseal(token)


def test_keys_rotate_the_first_seals_and_every_one_unseals(settings):
    old, new = Fernet.generate_key(), Fernet.generate_key()
    settings.ENCRYPTION_KEYS = [old]
    sealed_before = encryption.seal(SECRET)
    settings.ENCRYPTION_KEYS = [new, old]
    sealed_after = encryption.seal(SECRET)
    assert encryption.unseal(sealed_before) == encryption.unseal(sealed_after) == SECRET
    assert Fernet(new).decrypt(sealed_after.encode()).decode() == SECRET


def test_without_a_key_nothing_is_sealed_or_unsealed(settings):
    token = encryption.seal(SECRET)
    settings.ENCRYPTION_KEYS = []
    assert not encryption.can_seal()
    with pytest.raises(SecretsUnavailable, match="ENCRYPTION_KEYS"):
        encryption.seal(SECRET)
    with pytest.raises(SecretsUnavailable):
        encryption.unseal(token)


def test_development_derives_a_key_and_production_has_none_unless_given():
    development = encryption.keys_from("", debug=True, secret_key="dev")
    assert development == encryption.keys_from("", debug=True, secret_key="dev")
    assert development != encryption.keys_from("", debug=True, secret_key="other")
    assert encryption.keys_from("", debug=False, secret_key="dev") == []
    given = Fernet.generate_key().decode()
    assert encryption.keys_from(f" {given} ,", debug=False, secret_key="x") == [given.encode()]


def _settings_in_production(**variables) -> subprocess.CompletedProcess:
    environment = production_environment(DATABASE_URL="postgres://u@h/n", **variables)
    probe = "from django.conf import settings; print(len(settings.ENCRYPTION_KEYS))"
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {probe}"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
    )


def test_production_starts_without_keys_and_refuses_a_malformed_one():
    assert _settings_in_production().stdout.strip() == "0"
    two = f"{Fernet.generate_key().decode()},{Fernet.generate_key().decode()}"
    assert _settings_in_production(ENCRYPTION_KEYS=two).stdout.strip() == "2"
    done = _settings_in_production(ENCRYPTION_KEYS=f"{two},not-a-key")
    assert done.returncode != 0
    assert "ENCRYPTION_KEYS: key 3 is not a Fernet key" in done.stderr
    assert "not-a-key" not in done.stderr
