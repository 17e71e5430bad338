from django.db import migrations

ROLES = ["rater", "analyst", "admin"]

# Judgements are an event log: refusing UPDATE in the database keeps every past
# state recoverable whatever code (or person at a psql prompt) touches the table.
APPEND_ONLY_SQL = """
CREATE FUNCTION judgements_refuse_update() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'judgements are append-only: add a new event instead of updating %',
        OLD.id USING ERRCODE = 'restrict_violation';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER judgement_append_only
    BEFORE UPDATE ON judgements_judgement
    FOR EACH ROW EXECUTE FUNCTION judgements_refuse_update();
"""

DROP_APPEND_ONLY_SQL = """
DROP TRIGGER judgement_append_only ON judgements_judgement;
DROP FUNCTION judgements_refuse_update();
"""


def create_roles(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in ROLES:
        Group.objects.get_or_create(name=name)


def remove_roles(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("judgements", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(create_roles, remove_roles),
        migrations.RunSQL(APPEND_ONLY_SQL, DROP_APPEND_ONLY_SQL),
    ]
