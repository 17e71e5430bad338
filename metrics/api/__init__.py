"""Metrics in the REST API: what a search team's scripts and CI read. Analysts and admins
may use every endpoint; raters get 403 and anonymous callers 401.

| endpoint                                        | operation                                |
|-------------------------------------------------|------------------------------------------|
| GET result-lists/<id>/metrics/                  | mean, interval, coverage, P, AP, RR, ERR |
|                                                 | and every query's values (paged)         |
| GET result-lists/<id>/series/                   | the list's stored mean over time         |
| GET result-lists/<id>/queries/<query>/series/   | one query's stored values over time      |
| GET result-lists/<id>/queries/<query>/working/  | NDCG's working, rank by rank             |
| GET result-lists/<id>/unjudged/                 | hits within the cut-off without a grade  |
| GET projects/<slug>/compare/                    | B against A: deltas, test, interval,     |
|                                                 | and with max_drop a pass/fail verdict    |

The metric's parameters are the dashboards' (``metrics.forms.MetricForm``, made from
``MetricSpec``): the same names and validation, the project's default for any not
given, and every response echoes the whole spec it used.
"""
