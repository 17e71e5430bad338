"""API tokens move from DRF's authtoken (keys in clear) to django-rest-knox (digests).

Each existing key keeps working: its SHA-512 digest (knox's, over the key's UTF-8
bytes) and its first 15 characters go to knox's table with the same user and creation
time, and then DRF's table, with the keys in clear, is dropped. Reversing restores no
key (the keys are gone): the old table is not recreated.
"""

from django.db import migrations

MOVE_TOKENS = """
DO $$
BEGIN
    IF to_regclass('authtoken_token') IS NOT NULL THEN
        INSERT INTO knox_authtoken (digest, token_key, user_id, created, expiry)
        SELECT encode(sha512(convert_to(key, 'UTF8')), 'hex'), left(key, 15), user_id,
               created, NULL
        FROM authtoken_token;
        DROP TABLE authtoken_token;
    END IF;
END
$$;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0013_cache_table"),
        ("knox", "0009_extend_authtoken_field"),
    ]

    operations = [migrations.RunSQL(MOVE_TOKENS, migrations.RunSQL.noop)]
