"""Consensus only in numpy (issue 16, point 4) and one rule for a rater's current answer
(point 5).

judgements_pairgrade keeps each pair's current grades (sorted) and their raters instead
of a consensus per policy; judgements_consensus goes, and the packed per-policy rows are
marked stale by the triggers and filled by judgements.packed in numpy. The functions
and triggers are the frozen copy of judgements/sql/ (pair_grades, grade_summaries,
queue: judgements_current_answers is the one current-answer rule, which the pair grades
and the queue's recount call). Going back runs 0018's frozen copy and recounts.
"""

from pathlib import Path

import django.contrib.postgres.fields
from django.db import migrations, models

import metrics.core.consensus

FROZEN = Path(__file__).parent / "sql" / "0019_consensus_in_numpy.sql"
BEFORE = Path(__file__).parent / "sql" / "0018_derived_state_sql.sql"

# Whose signatures change, dropped before they are made again.
DROP_OLD = """
DROP FUNCTION judgements_pair_grades_counted(bigint[], bigint[]);
DROP FUNCTION judgements_consensus(text, smallint[], bigint, smallint);
"""
DROP_NEW = """
DROP FUNCTION judgements_pair_grades_counted(bigint[], bigint[]);
DROP FUNCTION judgements_current_answers(bigint[], bigint[]);
"""
EVERY_PAIR = """
    (SELECT coalesce(array_agg(query_id ORDER BY query_id, document_id), '{}')
     FROM judgements_pairgrade),
    (SELECT coalesce(array_agg(document_id ORDER BY query_id, document_id), '{}')
     FROM judgements_pairgrade)"""
# Each pair's grades and raters, counted once; the summaries' triggers mark every query.
FILL_ARRAYS = f"""
UPDATE judgements_pairgrade pair
SET grades = counted.grades, raters = counted.raters
FROM judgements_pair_grades_counted({EVERY_PAIR}) counted
WHERE pair.query_id = counted.query_id AND pair.document_id = counted.document_id;
UPDATE judgements_querygrades SET stale = true;
INSERT INTO judgements_packedpolicy (name) VALUES ('mean'), ('median'), ('majority'), ('quepid');
"""
# Back to the per-policy columns, and the packed rows 0018's SQL computes.
FILL_COLUMNS = f"""
UPDATE judgements_pairgrade pair
SET mean = counted.mean, median = counted.median, majority = counted.majority,
    quepid = counted.quepid
FROM judgements_pair_grades_counted({EVERY_PAIR}) counted
WHERE pair.query_id = counted.query_id AND pair.document_id = counted.document_id;
SELECT judgements_grade_summaries_refresh(array_agg(query_id), true, NULL)
FROM judgements_querygrades HAVING count(*) > 0;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0018_derived_state_sql"),
    ]

    operations = [
        migrations.RunSQL(DROP_OLD, BEFORE.read_text() + FILL_COLUMNS),
        migrations.CreateModel(
            name="PackedPolicy",
            fields=[
                ("name", models.CharField(max_length=16, primary_key=True, serialize=False)),
            ],
        ),
        migrations.RemoveField(
            model_name="pairgrade",
            name="majority",
        ),
        migrations.RemoveField(
            model_name="pairgrade",
            name="mean",
        ),
        migrations.RemoveField(
            model_name="pairgrade",
            name="median",
        ),
        migrations.RemoveField(
            model_name="pairgrade",
            name="quepid",
        ),
        migrations.AddField(
            model_name="pairgrade",
            name="grades",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.SmallIntegerField(),
                default=list,
                help_text="The current grades, lowest first.",
            ),
        ),
        migrations.AddField(
            model_name="pairgrade",
            name="raters",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.IntegerField(),
                default=list,
                help_text="The rater of each grade of ``grades``.",
            ),
        ),
        migrations.AddField(
            model_name="querygrades",
            name="stale",
            field=models.BooleanField(
                db_default=False,
                default=False,
                help_text="Set by the triggers when the query's grades or hits change: its RankedGrades wait for judgements.packed to fill them.",
            ),
        ),
        migrations.AlterField(
            model_name="project",
            name="consensus",
            field=models.CharField(
                choices=metrics.core.consensus.policy_choices, default="mean", max_length=16
            ),
        ),
        migrations.AlterField(
            model_name="rankedgrades",
            name="policy",
            field=models.CharField(choices=metrics.core.consensus.policy_choices, max_length=16),
        ),
        migrations.AddIndex(
            model_name="querygrades",
            index=models.Index(
                condition=models.Q(("stale", True)),
                fields=["query"],
                name="query_grades_stale_idx",
            ),
        ),
        migrations.RunSQL(FROZEN.read_text() + FILL_ARRAYS, DROP_NEW),
    ]
