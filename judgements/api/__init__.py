"""The REST API (Django REST Framework): one view per operation, documented by OpenAPI.

| endpoint                                       | operation                     | roles          |
|------------------------------------------------|-------------------------------|----------------|
| GET  projects/                                 | projects one may see          | rater, analyst |
| GET  projects/<slug>/                          | one project and its scale     | rater, analyst |
| GET  projects/<slug>/queries/                  | queries                       | analyst        |
| POST projects/<slug>/queries/import/           | add queries (CSV, JSON)       | analyst        |
| GET  projects/<slug>/documents/                | documents                     | analyst        |
| POST projects/<slug>/documents/import/         | add/update documents (JSONL)  | analyst        |
| GET  projects/<slug>/result-lists/             | result lists                  | analyst        |
| POST projects/<slug>/result-lists/import/      | new result list (TREC, JSON)  | analyst        |
| GET  result-lists/<id>/                        | one result list               | analyst        |
| GET  result-lists/<id>/hits/                   | its ranked hits               | analyst        |
| GET  result-lists/<id>/export/                 | TREC run file, streamed       | analyst        |
| GET  judgements/                               | the log (a rater: own events) | rater, analyst |
| POST judgements/create/                        | record an answer (source=api) | rater, analyst |
| GET  projects/<slug>/next/                     | lease the next pair to grade  | rater, analyst |
| GET  projects/<slug>/grades/                   | current grade per rater, pair | analyst        |
| GET  projects/<slug>/consensus/                | consensus per pair            | analyst        |
| POST projects/<slug>/judgements/import/        | import judgements             | analyst        |
| GET  projects/<slug>/judgements/export/        | events, streamed              | analyst        |
| GET  projects/<slug>/grades/export/            | current grades, streamed      | analyst        |
| GET  projects/<slug>/consensus/export/         | consensus, streamed           | analyst        |

The metrics endpoints (a list's numbers, series, working, unjudged work, comparison and
gate) are listed in metrics.api. Anonymous requests get 401 and other roles 403
(judgements.api.access). Every 4xx
body is ``{"errors": [{"field", "line", "message"}]}`` (config.api.errors).
The schema is at /api/schema/, interactive docs at /api/docs/, tokens at /api/token/.
"""
