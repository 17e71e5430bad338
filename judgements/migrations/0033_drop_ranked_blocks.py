"""judgements_rankedblock goes (issue 37): a whole list reads its RankedGrades rows, and
no reader writes blocks. Going back recreates the table empty; 0025's reverse and
forward fill it."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0032_machinejudge_kind"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="rankedblock", name="ranked_block_unique"),
        migrations.DeleteModel(name="RankedBlock"),
    ]
