from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("judgements", "0037_metric_unjudged_judged_only")]

    operations = [
        migrations.AddField(
            model_name="project",
            name="cant_tell_text",
            field=models.CharField(
                default="The listing does not say enough.",
                help_text="Shown to raters under the “Can't tell” button: when to choose it.",
                max_length=300,
                verbose_name="“Can't tell” explanation",
            ),
        ),
    ]
