"""``podledger attach``: mirror a live cluster into the ledger, shadow its scheduler, or schedule for it.

- ``kinds``: the watched resources, their API paths, and remote object -> podledger manifest;
- ``remote``: list and watch over the official ``kubernetes`` client (raw JSON, so fields the
  client's models do not know, like ``spec.schedulingGroup``, survive);
- ``mirror``: one remote change -> the input events ``apply``/``delete`` append (one transaction
  each), observed bindings, the per-kind resume cursor;
- ``binder``: schedule mode: podledger's decisions bound (pods/binding) and its preemption
  victims evicted (Eviction API) in the cluster, one event per call;
- ``runner``: leader election, one watch thread per resource feeding a bounded queue, the
  writer loop, reconnects with backoff, the progress line and Prometheus metrics;
- ``cli``: the ``podledger attach`` command.

docs/attach.md is the user's page.
"""
