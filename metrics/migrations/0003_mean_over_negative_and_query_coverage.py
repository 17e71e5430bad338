from django.db import migrations, models

# Names stored before ``negative`` and ``mean_over`` have seven words. Their values were
# computed with negative grades at 0 and their means over every query the list returned
# (unjudged ones counting 0), so they are renamed to say so: the name of
# MetricSpec.parse(old name). A project's default is now a mean over judged queries,
# whose series ``rebuild_metrics`` (or ``load_demo`` for the demo) writes afresh.
LEGACY = "array_length(string_to_array(metric, ' '), 1) = 7"
RENAME = f"""
UPDATE metrics_metricpoint SET metric = metric || ' zero all' WHERE {LEGACY};
UPDATE metrics_latestmetricpoint SET metric = metric || ' zero all' WHERE {LEGACY};
"""
# Back to seven words; series of the new parameters have no old name and are dropped.
NEW = "array_length(string_to_array(metric, ' '), 1) = 9"
UNRENAME = f"""
DELETE FROM metrics_metricpoint WHERE {NEW} AND right(metric, 9) <> ' zero all';
DELETE FROM metrics_latestmetricpoint WHERE {NEW} AND right(metric, 9) <> ' zero all';
UPDATE metrics_metricpoint SET metric = left(metric, -9) WHERE {NEW};
UPDATE metrics_latestmetricpoint SET metric = left(metric, -9) WHERE {NEW};
"""


class Migration(migrations.Migration):
    dependencies = [
        ("metrics", "0002_latest_points_and_stored_intervals"),
    ]

    operations = [
        migrations.AddField(
            model_name="metricpoint",
            name="queries_judged",
            field=models.PositiveIntegerField(
                blank=True, help_text="Queries the list returned with a current grade.", null=True
            ),
        ),
        migrations.AddField(
            model_name="metricpoint",
            name="queries_returned",
            field=models.PositiveIntegerField(
                blank=True, help_text="Queries the list returned.", null=True
            ),
        ),
        migrations.RunSQL(RENAME, UNRENAME),
    ]
