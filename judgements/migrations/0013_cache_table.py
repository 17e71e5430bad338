"""The cache table that every web and worker process shares (settings.CACHES["shared"]).

Rate limits count requests in it, so that a limit holds across gunicorn workers and
machines. createcachetable is idempotent: it creates only a missing table.
"""

from django.core.management import call_command
from django.db import migrations


def create_cache_table(apps, schema_editor):
    call_command("createcachetable", database=schema_editor.connection.alias, verbosity=0)


class Migration(migrations.Migration):
    dependencies = [("judgements", "0012_imported_event_ids")]

    operations = [migrations.RunPython(create_cache_table, migrations.RunPython.noop)]
