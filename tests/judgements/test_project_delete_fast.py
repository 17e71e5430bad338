"""judgements.bulk.project_delete_fast is all or nothing, whoever calls it."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from judgements.bulk import project_delete_fast
from judgements.models import Judgement, PairGrade, Project, QueuePair

OPTIONS = {"queries": 10, "hits_per_query": 10, "judgements": 300, "raters": 3}


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_it_deletes_a_project_when_called_outside_a_transaction():
    # As a benchmark or a script calls it, in autocommit: it used to fail there, since the
    # triggers' deferral needs a transaction (make bench stopped in bench_upload).
    call_command("generate_load", stdout=StringIO(), **OPTIONS)
    assert not connection.in_atomic_block

    project_delete_fast("generated-load")

    assert not Project.objects.filter(slug="generated-load").exists()
    assert not (Judgement.objects.exists() or PairGrade.objects.exists())
    assert not QueuePair.objects.exists()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_failure_half_way_leaves_the_project_whole():
    call_command("generate_load", stdout=StringIO(), **OPTIONS)
    counts = (Judgement.objects.count(), PairGrade.objects.count(), QueuePair.objects.count())
    steps = []

    def fail_on_the_fifth(done, statement):
        steps.append(statement)
        if done == 4:
            raise RuntimeError("stopped half-way")

    with pytest.raises(RuntimeError, match="half-way"):
        project_delete_fast("generated-load", progress=fail_on_the_fifth)

    assert len(steps) == 5
    assert Project.objects.filter(slug="generated-load").exists()
    assert (Judgement.objects.count(), PairGrade.objects.count(), QueuePair.objects.count()) == (
        counts
    )
