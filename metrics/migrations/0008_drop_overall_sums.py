"""The exact sums behind a list's overall point go (issue 37): a grade's refresh computes
the mean again from the list's latest points (metrics.overall), so metrics_overallsum,
metrics_unreturnedquery and the triggers that threw them away (0005) are dropped. Going
back recreates them empty, as 0005 left them: the next full computation writes them."""

from pathlib import Path

from django.db import migrations

FROZEN = Path(__file__).parent / "sql"
DROP_SQL = """
DROP TRIGGER metrics_overall_sums_query_delete ON judgements_query;
DROP FUNCTION metrics_overall_sums_forget_project();
DROP TRIGGER metrics_overall_sums_insert ON metrics_latestmetricpoint;
DROP TRIGGER metrics_overall_sums_update ON metrics_latestmetricpoint;
DROP TRIGGER metrics_overall_sums_delete ON metrics_latestmetricpoint;
DROP FUNCTION metrics_overall_sums_forget();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("metrics", "0007_stale_query_project"),
    ]

    operations = [
        migrations.RunSQL(DROP_SQL, (FROZEN / "0005_overall_sums.sql").read_text()),
        migrations.RemoveConstraint(model_name="overallsum", name="overall_sum_unique"),
        migrations.RemoveConstraint(model_name="unreturnedquery", name="unreturned_query_unique"),
        migrations.DeleteModel(name="OverallSum"),
        migrations.DeleteModel(name="UnreturnedQuery"),
    ]
