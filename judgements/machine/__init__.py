"""Machine judges (issue 17): LLM raters that grade pairs through the rating queue, and
the report card that says whether their grades may count.

A machine judge is a user account (the judge's rater, with no password and no role)
with a ``MachineJudge`` configuration. Its answers are judgement events of source
``machine``, kept out of every number human grades make (``HUMAN_EVENT_SQL``) unless the
project's gate admits certified judges; the extra facts of each answer (model, prompt
version, rationale, tokens, latency, cost) are in ``MachineAnswer``.
"""
