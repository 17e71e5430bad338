"""Whose a Quepid book's judgements without an e-mail are.

Quepid's exporter leaves ``user_email`` out of a judgement with no user (anonymous)
and writes ``"user_email": null`` for an AI judge's (``grades_json.quepid_book``).
Anonymous judgements become events of the project's import account, as other tools'
grades without a rater do; an AI judge's become events of a machine judge of the
project (source "machine"), so that they follow the machine judges' rules: out of
every human number until the project's gate certifies the judge, on its report card
against the human consensus, overruled by an analyst like any machine grade.
"""

from collections import Counter
from collections.abc import Callable

from django.core.exceptions import ValidationError
from django.db import connection

from judgements.importers import ImportRejected, JudgementRow, LineError
from judgements.models import MachineJudge, Project

# An imported judge has no model to ask: its endpoint is a name that never resolves
# (RFC 2606 reserves .invalid), so that a run started by mistake sends nothing anywhere.
IMPORTED_JUDGE = {
    "base_url": "http://quepid-book.invalid/v1",
    "model": "unknown (judgements imported from a Quepid book)",
}


# An answer per machine event of the import, as a run records one (runs.RECORD_SQL),
# but with nothing spent: no tokens, no latency, no cost.
ANSWERS_SQL = """
INSERT INTO judgements_machineanswer
    (judgement_id, judge_id, run_id, model, prompt_version, rationale, error, attempts,
     tokens_in, tokens_out, latency_ms, cost)
SELECT event.id, %(judge)s, NULL, %(model)s, '', coalesce(said.rationale, ''), '', 1,
       0, 0, 0, 0
FROM judgements_judgement event
LEFT JOIN unnest(%(event_ids)s::text[], %(rationales)s::text[]) AS said (event_id, rationale)
  ON said.event_id = event.source_event_id
WHERE event.rater_id = %(rater)s AND event.import_id = %(import_id)s
  AND event.source = 'machine'
"""


class BookRaters:
    """Resolves the raters of a book's rows that name no account, and says so."""

    def __init__(self, project: Project, import_account: Callable):
        self.project, self.import_account = project, import_account
        self.import_rater = None
        self.judges: dict[str, MachineJudge] = {}
        self.created: set[str] = set()
        self.anonymous, self.machine = 0, Counter()
        # A machine judge's event keeps its explanation as the answer's rationale, as a
        # run's does; the event's note would be read as the reason it failed.
        self.rationales: dict[str, str] = {}

    def resolved(self, row: JudgementRow) -> JudgementRow:
        """``row`` with its rater set, when it names a machine judge or no one."""
        if row.machine_judge:
            judge = self._judge(row.machine_judge)
            self.machine[judge.name] += 1
            if row.note:
                self.rationales[row.event_id] = row.note
            return row._replace(rater_id=judge.rater_id, note="")
        if row.rater_id is None and not row.rater_key:
            self.anonymous += 1
            if self.import_rater is None:
                self.import_rater = self.import_account()
            return row._replace(rater_id=self.import_rater.pk)
        return row

    def _judge(self, name: str) -> MachineJudge:
        if name not in self.judges:
            judge = MachineJudge.objects.filter(project=self.project, name=name).first()
            if judge is None:
                judge = _imported_judge(self.project, name)
                self.created.add(name)
            self.judges[name] = judge
        return self.judges[name]

    def answers_record(self, import_id) -> None:
        """What stands behind each machine event the import added: the judge, its
        model and the explanation as the rationale (one statement per judge: a book
        holds thousands)."""
        if not self.judges:
            return
        event_ids, rationales = list(self.rationales), list(self.rationales.values())
        with connection.cursor() as cursor:
            for judge in self.judges.values():
                params = {
                    "judge": judge.pk,
                    "rater": judge.rater_id,
                    "model": judge.model,
                    "import_id": import_id,
                    "event_ids": event_ids,
                    "rationales": rationales,
                }
                cursor.execute(ANSWERS_SQL, params)

    def notes(self) -> list[str]:
        notes = []
        if self.anonymous:
            notes.append(
                f"{self.anonymous:,} judgements had no user_email (anonymous in Quepid): "
                f"they are the import account {self.import_rater.get_username()}'s."
            )
        for name, count in self.machine.items():
            made = "created for them" if name in self.created else "the project's"
            notes.append(
                f'{count:,} judgements were an AI judge\'s ("user_email": null, as Quepid '
                f'exports its AI judges, unnamed): they are machine judge "{name}"\'s '
                f"({made}), kept out of human numbers until the project's gate certifies it."
            )
        return notes


def _imported_judge(project: Project, name: str) -> MachineJudge:
    from judgements.machine.services import machine_judge_create

    try:
        return machine_judge_create(project=project, name=name, **IMPORTED_JUDGE)
    except ValidationError as error:
        message = f'Machine judge "{name}" cannot be created: {"; ".join(error.messages)}'
        raise ImportRejected([LineError(None, "user_email", message)], 1) from None
