"""A machine judge at work: runs over the queue's pairs, as background tasks.

A run takes the project's pool pairs the judge has no current grade on, in the queue's
order (``QueuePair``: best rank first), up to its budget in pairs, as ``MachineRunItem``
rows. Each task working on the run (``machine_run_work``; more tasks, on more
``db_worker`` processes, share a run) keeps ``judge.concurrency`` threads asking the
model. A thread claims one item under the run row's lock, so that the items in flight
over every task never exceed the judge's concurrency and no two threads hold the same
pair; it records the answer only while its claim still stands (a claim abandoned by a
dead worker is taken over once its lease ends, and the late answer is then dropped).
Each task renews the run's lease and its own claims' from a heartbeat thread; a run
whose every task died is resumed by a worker (``runs_recover``), and a task told to stop
finishes its pairs in flight and queues the run again (judgements.leases).
Every answer is an event of source "machine": a grade, or a can't tell whose note says
why no grade came back.
"""

import datetime as dt
import logging
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone

from judgements import leases
from judgements.machine import client as model_client
from judgements.machine.demo import demo_reply
from judgements.machine.prompting import Pair, prompt_version, render
from judgements.models import (
    Judgement,
    MachineJudge,
    MachineRun,
    MachineRunItem,
)

logger = logging.getLogger(__name__)

# How long a thread waits before asking again when the judge's concurrency is used up
# by other tasks' threads.
BUSY_WAIT_SECONDS = 0.05

# A claim and a record are two commits per pair. Without waiting for their WAL flush, a
# crash can lose the last few (PostgreSQL stays consistent: each is lost whole); a lost
# claim or a lost answer leaves its pair claimed, and it is asked again once the claim's
# lease ends. Waiting for the flush cost more than the model's own answer from a local
# server (tests/bench/bench_machine_judges.py).
ASYNC_COMMIT_SQL = "SET synchronous_commit TO off"

# The pool pairs a new run takes, in the queue's order: those the judge has no current
# grade on (a can't tell, such as a failure, is asked again).
RUN_ITEMS_SQL = """
INSERT INTO judgements_machinerunitem (run_id, position, query_id, document_id, status)
SELECT %(run)s, row_number() OVER (ORDER BY pair.best_rank, pair.query_id, pair.document_id),
       pair.query_id, pair.document_id, 'pending'
FROM judgements_queuepair pair
WHERE pair.project_id = %(project)s
  AND NOT EXISTS (
      SELECT FROM (
          SELECT event.kind FROM judgements_judgement event
          WHERE event.query_id = pair.query_id AND event.document_id = pair.document_id
            AND event.rater_id = %(rater)s
          ORDER BY event.created_at DESC, event.id DESC
          LIMIT 1) AS newest
      WHERE newest.kind = 'grade')
ORDER BY pair.best_rank, pair.query_id, pair.document_id
LIMIT %(limit)s
"""


@transaction.atomic
def machine_run_start(
    *,
    judge: MachineJudge,
    user,
    max_pairs: int | None = None,
    max_cost: Decimal | None = None,
    tasks: int = 1,
) -> MachineRun:
    """Start a run of ``judge`` over the pool pairs it has not graded, and queue
    ``tasks`` background tasks to work on it once this transaction commits.

    Raises ``ValidationError`` (nothing written) while the judge has an open run.
    """
    if judge.runs.filter(status__in=[MachineRun.Status.RUNNING, MachineRun.Status.PAUSED]):
        raise ValidationError("This judge has a run that is not finished: resume or stop it.")
    run = MachineRun.objects.create(
        judge=judge, max_pairs=max_pairs, max_cost=max_cost, started_by=user
    )
    params = {
        "run": run.pk,
        "project": judge.project_id,
        "rater": judge.rater_id,
        "limit": max_pairs,
    }
    with connection.cursor() as cursor:
        cursor.execute(RUN_ITEMS_SQL, params)
        run.total = cursor.rowcount
    if run.total == 0:
        run.status, run.finished_at = MachineRun.Status.DONE, timezone.now()
        run.reason = "Every pool pair already has a grade from this judge."
    run.save()
    if run.total:
        _enqueue(run, tasks)
    return run


def _enqueue(run: MachineRun, tasks: int) -> None:
    from judgements.tasks import machine_run_task

    for _ in range(tasks):
        transaction.on_commit(lambda: machine_run_task.enqueue(run.pk))


@transaction.atomic
def machine_run_pause(*, run: MachineRun) -> bool:
    """Stop claiming pairs; answers already asked for are still recorded."""
    return bool(
        MachineRun.objects.filter(pk=run.pk, status=MachineRun.Status.RUNNING).update(
            status=MachineRun.Status.PAUSED
        )
    )


@transaction.atomic
def machine_run_resume(*, run: MachineRun, tasks: int = 1) -> bool:
    """Go on with a paused run, with ``tasks`` new background tasks."""
    resumed = MachineRun.objects.filter(pk=run.pk, status=MachineRun.Status.PAUSED).update(
        status=MachineRun.Status.RUNNING, reason=""
    )
    if resumed:
        _enqueue(run, tasks)
    return bool(resumed)


@dataclass(frozen=True)
class Claim:
    item_id: int
    token: uuid.UUID
    pair: Pair


def machine_run_work(run_id: int) -> str:
    """The task's work: keep the judge's concurrency of threads asking until the run is
    done, paused or out of budget. Returns the run's status as it left it."""
    run = MachineRun.objects.select_related("judge__project").get(pk=run_id)
    judge = run.judge
    try:
        client = None if judge.demo else model_client.client_for(judge)
    except model_client.MissingKey as missing:
        MachineRun.objects.filter(pk=run.pk, status=MachineRun.Status.RUNNING).update(
            status=MachineRun.Status.PAUSED, reason=str(missing)
        )
        return MachineRun.Status.PAUSED
    context = _Context(judge, client, run.pk)
    MachineRun.objects.filter(pk=run.pk, status=MachineRun.Status.RUNNING).update(
        lease_until=leases.lease_end()
    )
    with (
        leases.graceful_stop() as context.stopping,
        leases.Heartbeat(context.renew, name=f"run {run.pk}"),
    ):
        if judge.demo:
            # The demo rule asks no server: one loop in this thread, on its connection (and
            # inside the caller's transaction, as load_demo's tests hold one).
            _loop(context)
        else:
            with ThreadPoolExecutor(max_workers=judge.concurrency) as pool:
                for future in [pool.submit(_thread, context) for _ in range(judge.concurrency)]:
                    future.result()
    if context.stopping.is_set():
        _hand_back(run.pk)
    return MachineRun.objects.values_list("status", flat=True).get(pk=run.pk)


@transaction.atomic
def _hand_back(run_id: int) -> None:
    """Queue a running run again for the next worker: this one is stopping (a deploy),
    and its threads have recorded the pairs they were asking about."""
    run = MachineRun.objects.select_for_update().filter(pk=run_id).first()
    if run is None or run.status != MachineRun.Status.RUNNING:
        return
    run.lease_until = None  # Waiting for a task; the run's other tasks renew it.
    run.reason = (
        f"Handed back by a stopping worker at {run.answered} of {run.total} pairs "
        "and queued again for the next one."
    )
    run.save(update_fields=["lease_until", "reason"])
    _enqueue(run, 1)
    logger.warning("Run %s was handed back by its stopping worker and queued again", run.pk)


def runs_recover() -> int:
    """Resume each running run whose tasks all died (its lease ran out): its claims are
    handed back (their answers never came) and a task is queued for it; the pairs
    answered stay answered. Returns how many (see judgements.leases)."""
    recovered = 0
    with transaction.atomic():
        for run in leases.abandoned(MachineRun.objects):
            claimed = run.items.filter(status=MachineRunItem.Status.CLAIMED).update(
                status=MachineRunItem.Status.PENDING, claim=None, claimed_at=None
            )
            since = leases.last_heartbeat(run.lease_until)
            run.reason = (
                f"Its worker stopped at {run.answered} of {run.total} pairs: no heartbeat "
                f"since {leases.stopped_at(since)}. Its {claimed} claimed pairs were handed "
                "back and the run was queued again."
            )
            run.lease_until = None
            run.save(update_fields=["reason", "lease_until"])
            _enqueue(run, 1)
            logger.warning("Run %s lost its worker; %d claims handed back", run.pk, claimed)
            recovered += 1
    return recovered


class _Context:
    def __init__(self, judge: MachineJudge, client, run_id: int):
        self.judge, self.client, self.run_id = judge, client, run_id
        project = judge.project
        self.scale, self.guidelines = project.scale, project.guidelines
        self.grades = project.grade_values
        self.version = prompt_version(judge.prompt_template)
        # The heartbeat renews the claims this task holds; one it has not renewed for a
        # lease was abandoned.
        self.lease = dt.timedelta(seconds=leases.lease_seconds())
        self.held: dict[int, uuid.UUID] = {}
        self.held_lock = threading.Lock()
        self.stopping = threading.Event()

    def hold(self, claim: "Claim") -> None:
        with self.held_lock:
            self.held[claim.item_id] = claim.token

    def let_go(self, claim: "Claim") -> None:
        with self.held_lock:
            self.held.pop(claim.item_id, None)

    def renew(self, cursor) -> None:
        """The heartbeat: the run's lease, and this task's claims in flight."""
        with self.held_lock:
            items, tokens = list(self.held), [str(token) for token in self.held.values()]
        # A claim holds the run's row for a moment; a transaction around the whole run
        # (the demo's, in load_demo) could hold it for good: give up after a second
        # rather than wait on it, and beat again later.
        cursor.execute("SET lock_timeout = '1s'")
        cursor.execute(RENEW_SQL, {"run": self.run_id, "lease_until": leases.lease_end()})
        if items:
            cursor.execute(
                RENEW_CLAIMS_SQL, {"items": items, "tokens": tokens, "now": timezone.now()}
            )


RENEW_SQL = """
UPDATE judgements_machinerun SET lease_until = GREATEST(lease_until, %(lease_until)s)
WHERE id = %(run)s AND status = 'running'
"""
RENEW_CLAIMS_SQL = """
UPDATE judgements_machinerunitem item SET claimed_at = %(now)s
FROM unnest(%(items)s::bigint[], %(tokens)s::uuid[]) AS held (id, claim)
WHERE item.id = held.id AND item.claim = held.claim AND item.status = 'claimed'
"""


def _thread(context: _Context) -> None:
    """One thread's loop, on a connection of its own that it closes at the end."""
    try:
        with connection.cursor() as cursor:
            cursor.execute(ASYNC_COMMIT_SQL)
        _loop(context)
    finally:
        connection.close()


def _loop(context: _Context) -> None:
    """Claim, ask, record, until no claim is left to make or the worker is stopping."""
    while not context.stopping.is_set():
        claim = _claim(context)
        if claim == "busy":
            time.sleep(BUSY_WAIT_SECONDS)
            continue
        if claim is None:
            return
        context.hold(claim)
        try:
            reply = _ask(context, claim.pair)
            _record(context, claim, reply)
        finally:
            context.let_go(claim)


def _ask(context: _Context, pair: Pair) -> model_client.Reply:
    if context.judge.demo:
        return demo_reply(pair, context.grades)
    prompt = render(
        context.judge.prompt_template, pair, scale=context.scale, guidelines=context.guidelines
    )
    return model_client.ask(context.client, context.judge, prompt, context.grades)


# The run's row, locked while a claim is made, so that the claims of every task's
# threads take turns: the count of claims in flight that follows (a new statement, so a
# new snapshot) sees every claim committed before.
RUN_LOCK_SQL = """
SELECT run.status = 'running', run.max_cost IS NOT NULL AND run.cost >= run.max_cost
FROM judgements_machinerun run WHERE run.id = %(run)s
FOR UPDATE
"""
# The next pair, claimed, with what the prompt needs of it, while fewer claims than the
# judge's concurrency are in flight: one statement, one round trip.
CLAIM_SQL = """
WITH busy AS (
    SELECT count(*) AS claims FROM judgements_machinerunitem
    WHERE run_id = %(run)s AND status = 'claimed' AND claimed_at > %(stale)s
),
next AS (
    SELECT item.id FROM judgements_machinerunitem item
    WHERE item.run_id = %(run)s
      AND (item.status = 'pending' OR (item.status = 'claimed' AND item.claimed_at <= %(stale)s))
      AND (SELECT claims FROM busy) < %(concurrency)s
    ORDER BY item.position
    LIMIT 1
    FOR UPDATE OF item SKIP LOCKED
),
claimed AS (
    UPDATE judgements_machinerunitem item
    SET status = 'claimed', claim = %(token)s, claimed_at = %(now)s
    FROM next WHERE item.id = next.id
    RETURNING item.id, item.query_id, item.document_id
)
SELECT claimed.id, query.text, query.description, document.title, document.url,
       document.snippet, document.fields, (SELECT claims FROM busy)
FROM (SELECT 1) AS one
LEFT JOIN claimed ON true
LEFT JOIN judgements_query query ON query.id = claimed.query_id
LEFT JOIN judgements_document document ON document.id = claimed.document_id
"""


@transaction.atomic
def _claim(context: _Context) -> Claim | str | None:
    """The next pair to ask about, claimed; "busy" while the judge's concurrency is used
    up; None once the run is paused, out of budget or has no pair left to hand out."""
    params = {
        "run": context.run_id,
        "stale": timezone.now() - context.lease,
        "concurrency": context.judge.concurrency,
        "token": uuid.uuid4(),
        "now": timezone.now(),
    }
    with connection.cursor() as cursor:
        cursor.execute(RUN_LOCK_SQL, params)
        running, spent = cursor.fetchone()
        if not running:
            return None
        if spent:
            _stop_for_budget(MachineRun.objects.get(pk=context.run_id))
            return None
        cursor.execute(CLAIM_SQL, params)
        item_id, *fields, claims = cursor.fetchone()
    if item_id is not None:
        return Claim(item_id, params["token"], Pair(*fields))
    if claims >= context.judge.concurrency:
        return "busy"
    _finish_if_done(MachineRun.objects.get(pk=context.run_id))
    return None


def _stop_for_budget(run: MachineRun) -> None:
    run.status, run.finished_at = MachineRun.Status.BUDGET, timezone.now()
    run.reason = f"The budget of {run.max_cost} was reached ({run.cost} spent)."
    run.save(update_fields=["status", "finished_at", "reason"])
    run.items.filter(status=MachineRunItem.Status.PENDING).update(
        status=MachineRunItem.Status.SKIPPED
    )


def _finish_if_done(run: MachineRun) -> None:
    """Close a running run once no item is waiting or in flight."""
    if run.status != MachineRun.Status.RUNNING:
        return
    if not run.items.filter(
        status__in=[MachineRunItem.Status.PENDING, MachineRunItem.Status.CLAIMED]
    ).exists():
        run.status, run.finished_at = MachineRun.Status.DONE, timezone.now()
        run.save(update_fields=["status", "finished_at"])


# The answer, if its claim still stands: the item done, the event, what stands behind it
# and the run's counters, in one statement (atomic by itself, one round trip).
RECORD_SQL = """
WITH item AS (
    UPDATE judgements_machinerunitem
    SET status = 'done'
    WHERE id = %(item)s AND claim = %(token)s AND status = 'claimed'
    RETURNING query_id, document_id
),
event AS (
    INSERT INTO judgements_judgement
        (query_id, document_id, rater_id, kind, grade, note, created_at, source)
    SELECT item.query_id, item.document_id, %(rater)s, %(kind)s, %(grade)s, %(note)s,
           %(now)s, 'machine'
    FROM item
    RETURNING id
),
answer AS (
    INSERT INTO judgements_machineanswer
        (judgement_id, judge_id, run_id, model, prompt_version, rationale, error, attempts,
         tokens_in, tokens_out, latency_ms, cost)
    SELECT event.id, %(judge)s, %(run)s, %(model)s, %(version)s, %(rationale)s, %(error)s,
           %(attempts)s, %(tokens_in)s, %(tokens_out)s, %(latency_ms)s, %(cost)s
    FROM event
),
counted AS (
    UPDATE judgements_machinerun
    SET graded = graded + %(graded)s, failed = failed + 1 - %(graded)s,
        tokens_in = tokens_in + %(tokens_in)s, tokens_out = tokens_out + %(tokens_out)s,
        cost = cost + %(cost)s
    WHERE id = %(run)s AND EXISTS (SELECT FROM item)
)
SELECT count(*) FROM item
"""


def _record(context: _Context, claim: Claim, reply: model_client.Reply) -> bool:
    """Record the answer as an event, if the claim still stands; False if it was lost
    (another worker took the pair over after the claim's lease ended)."""
    judge = context.judge
    graded = reply.grade is not None
    params = {
        "item": claim.item_id,
        "token": claim.token,
        "rater": judge.rater_id,
        "kind": Judgement.Kind.GRADE if graded else Judgement.Kind.CANT_TELL,
        "grade": reply.grade,
        "note": reply.error[:500],
        "now": timezone.now(),
        "judge": judge.pk,
        "run": context.run_id,
        "model": judge.model,
        "version": context.version,
        "rationale": reply.rationale,
        "error": reply.error,
        "attempts": reply.attempts,
        "tokens_in": reply.tokens_in,
        "tokens_out": reply.tokens_out,
        "latency_ms": reply.latency_ms,
        "cost": judge.cost(reply.tokens_in, reply.tokens_out),
        "graded": int(graded),
    }
    # One statement: atomic by itself, and in autocommit one round trip, no BEGIN.
    with connection.cursor() as cursor:
        cursor.execute(RECORD_SQL, params)
        recorded = cursor.fetchone()[0] == 1
    if not recorded:
        logger.warning("Run %s: a late answer on item %s was dropped", context.run_id, claim)
    return recorded
