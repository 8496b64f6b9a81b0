"""The service layer: one module per use case, called by both the CLI (``api.cli``) and the
HTTP routes (``api.http``), which only parse, call and render.

- ``commands``: the writes (apply, delete, bindings, conditions, evictions, what attach
  mirrors), each appending into the request's unit of work (admission, If-Match, idempotent
  retries);
- ``objects``: get one object, the kind a user named, manifests validated for a request;
- ``listing``: pages of objects with status and label filters and a cursor;
- ``explain``: why a group or pod is where it is; ``history``: an object's timeline;
- ``state``: every object as of a position; ``log``: pages of the log;
- ``replay``: re-run every recorded scheduling run and compare (``replay --verify``);
- ``whatif``: the recorded inputs under another configuration, outcomes compared;
- ``simulate``: a scenario on a private ledger; ``schedule``: cycles until idle;
- ``demo``: the demo's report; ``dashboard`` / ``reports``: what the dashboard pages show;
- ``errors``: the errors services raise, which each edge maps to its own answer.

Services read through ``ledger.queries`` on pooled connections of a ``ledger.database.Database``;
every write goes through a command (``commands``), which appends through the request's unit of
work (``ledger.uow``).
"""
