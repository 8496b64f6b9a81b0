"""A Kubernetes-compatible API over the ledger, served by ``podledger serve``.

Discovery (``/version``, ``/api``, ``/apis``, ``/openapi/v3``), resource paths at their upstream
group/versions with ``resourceVersion`` = log position, watch as a tail of the log, ``Table``
output for kubectl, and Kubernetes Events derived from scheduling decisions. Modules:
``resources`` (what is served), ``discovery``, ``openapi``, ``routes`` (HTTP), ``handlers``
(get/list/create/update/patch/delete/binding), ``watch``, ``table``, ``events``, ``objects``
(rows as Kubernetes objects, selectors), ``status`` (errors), and ``backend``: the only module
that calls podledger's own code.
"""

from typing import Any

__all__ = ["router"]


def __getattr__(name: str) -> Any:
    # lazily: the CLI imports submodules (``cli``, ``objects``) without loading FastAPI
    if name == "router":
        from api.k8s.routes import router

        return router
    raise AttributeError(name)
