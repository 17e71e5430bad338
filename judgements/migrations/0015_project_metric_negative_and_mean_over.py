from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0014_hashed_api_tokens"),
    ]

    # Existing projects take the new defaults: negative grades count 0 as before, and
    # means are over judged queries (trec_eval's default) rather than over every query.
    operations = [
        migrations.AddField(
            model_name="project",
            name="metric_negative",
            field=models.CharField(
                choices=[
                    ("zero", "count as 0 (trec_eval)"),
                    ("penalise", "penalise (min-max between the worst and the best ordering)"),
                ],
                default="zero",
                max_length=16,
                verbose_name="negative grades",
            ),
        ),
        migrations.AddField(
            model_name="project",
            name="metric_mean_over",
            field=models.CharField(
                choices=[
                    ("judged", "queries with a judgement (trec_eval)"),
                    ("all", "all queries, unjudged ones as 0 (trec_eval -c)"),
                ],
                default="judged",
                max_length=16,
                verbose_name="mean over",
            ),
        ),
    ]
