"""The commands: the only modules of ``api`` that build events and append them.

Each command takes the request's unit of work (``ledger.uow.UnitOfWork``), reads what it
judges through it, appends through it, and leaves the commit to the request (the edges:
CLI, JSON API, Kubernetes API, attach) unless it is a whole request itself. A dry run is a unit
of work that is rolled back, so every command runs unchanged in one.

- ``objects``: apply and delete (admission, If-Match, idempotent retries);
- ``bindings``: a pod bound by someone other than podledger's scheduler (the Kubernetes
  Binding subresource; a binding attach observed in a cluster), through one ``PodBound``
  builder; and the bindings attach sent;
- ``conditions``: conditions written through the status subresource, and those attach sent;
- ``evictions``: the Eviction subresource with its PodDisruptionBudget check, and the
  evictions attach sent;
- ``mirror``: changes seen in a live cluster, as input events.
"""
