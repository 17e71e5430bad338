"""Whether the trigger-kept tables hold the state as of a moment: no human event of the
project is dated later (machine judges' events change none of them). Read from each
query's newest human event (judgements_queryactivity, kept by the log's triggers:
judgements/sql/query_activity.sql), one probe of its (project, newest) index. Asked of
the log itself, it walked the created_at index past the later events of every project
until one of this project's: 23 to 200 ms in a database of 4.4M events. The freshness
rule of the pages (``metrics.sources``) and the packed reads' guard
(``judgements.packed``) ask it; ``{moment}`` is the moment's SQL, ``%(project)s`` the
project."""

NOTHING_AFTER_SQL = """NOT EXISTS (
    SELECT FROM judgements_queryactivity activity
    WHERE activity.project_id = %(project)s AND activity.newest > {moment})"""
