"""``podledger attach``: mirror a live cluster's objects into the ledger through its Kubernetes API.

- ``kinds``: the watched resources, their API paths, and remote object -> podledger manifest;
- ``remote``: list and watch over the official ``kubernetes`` client (raw JSON, so fields the
  client's models do not know, like ``spec.schedulingGroup``, survive);
- ``mirror``: one remote change -> the input events ``apply``/``delete`` append (one transaction
  each), observed bindings, the per-kind resume cursor;
- ``runner``: leader election, one watch thread per resource feeding a bounded queue, the
  writer loop, reconnects with backoff, the progress line and Prometheus metrics;
- ``cli``: the ``podledger attach`` command.

docs/attach.md is the user's page.
"""
