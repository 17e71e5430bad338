"""Result lists straight from the team's search engine (issue 40).

- ``templates``: request templates with ``{{query}}``, checked and filled in;
- ``safety``, ``network``: every connection under the outbound policy;
- ``clients``: the official clients (Elasticsearch, OpenSearch) and httpx (Solr, JSON);
- ``reading``: hits and the engines' error messages out of their answers;
- ``capture``: capturing a result list as a background task, stored by the import services;
- ``tries``: a try of a template, its NDCG against a baseline, kept or not;
- ``live``: one query live beside its stored ranking;
- ``schedules``: captures at the times of a cron expression, through the task worker;
- ``forms``, ``views``, ``api``: the pages and the API.
"""
