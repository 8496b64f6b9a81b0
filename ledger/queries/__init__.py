"""Read SQL in one place: the queries the services, the dashboard, explain, the HTTP routes,
the metrics and the scheduler worker share.

- ``objects``: the ``objects`` projection (one object, lists, pages with filters, the rows
  admission reads together with their stream versions, group members, quota usage inputs);
- ``log``: the ``events`` table (pages, ids, positions by time, decisions and history of an
  object, what scenarios and the demo report);
- ``state``: the projection as of a past position (a private, rolled-back fold);
- ``reports``: the dashboard's and the metrics' figures (reporting views when readable);
- ``schema``: what readiness checks (the migration revisions the database is at).

Every function takes a psycopg connection (some a ``Database``) and only reads.
"""
