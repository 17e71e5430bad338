"""Machine judges' keys (issue 36): a key entered in the app, stored sealed, or a
variable whose name has the operator's prefix (MACHINE_JUDGE_KEY_PREFIX), nothing else.

A judge already naming another variable (which could be SECRET_KEY or DATABASE_URL)
loses it: the name is cleared, ``key_problem`` says which variable it named and why it
no longer may (the judge's page shows it, and a run of it pauses with that reason until
an analyst sets the key again), and its open runs are paused with the same reason.
Reversing keeps the cleared names cleared.
"""

from django.conf import settings
from django.db import migrations, models

import judgements.models.machine


def _clear_unprefixed(apps, schema_editor):
    judges = apps.get_model("judgements", "MachineJudge")
    runs = apps.get_model("judgements", "MachineRun")
    prefix = settings.MACHINE_JUDGE_KEY_PREFIX
    for judge in judges.objects.exclude(api_key_env="").exclude(api_key_env__startswith=prefix):
        problem = (
            f"The judge named the variable {judge.api_key_env[:60]} for its key; a judge's key "
            f"variable must now start with {prefix}. Set its key again on this page."
        )
        judges.objects.filter(pk=judge.pk).update(api_key_env="", key_problem=problem)
        runs.objects.filter(judge_id=judge.pk, status="running").update(
            status="paused", reason=problem
        )


class Migration(migrations.Migration):
    dependencies = [("judgements", "0034_query_log")]

    operations = [
        migrations.AddField(
            model_name="machinejudge",
            name="api_key_encrypted",
            field=models.TextField(blank=True, editable=False),
        ),
        migrations.AddField(
            model_name="machinejudge",
            name="key_problem",
            field=models.CharField(
                blank=True,
                editable=False,
                help_text="Why the judge cannot be asked until its key is set again.",
                max_length=300,
            ),
        ),
        migrations.AlterField(
            model_name="machinejudge",
            name="api_key_env",
            field=models.CharField(
                blank=True,
                help_text="Name of the environment variable holding the key (it must start "
                "with the prefix the operator set, MACHINE_JUDGE_KEY_PREFIX); empty for none.",
                max_length=100,
                validators=[
                    judgements.models.machine.ENV_NAME,
                    judgements.models.machine.validate_key_variable,
                ],
                verbose_name="API key variable",
            ),
        ),
        migrations.RunPython(_clear_unprefixed, migrations.RunPython.noop),
    ]
