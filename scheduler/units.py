"""The core's resource units and how its messages show them.

The model keeps every amount as an integer in base units: milli-CPU for ``cpu``, bytes for
``memory`` and storage, plain counts for everything else (GPUs, pods). Messages show an amount
as kubectl shows a quantity (``1500m``, ``2``, ``80Gi``), so a diagnosis reads like the
manifests it is about. (The ledger formats stored manifests the same way on its side,
``ledger/resources/quantity.py``; the core imports nothing of the ledger.)
"""

from __future__ import annotations

_MILLI = frozenset({"cpu"})
_BYTES = frozenset({"memory", "ephemeral-storage", "storage"})
_SUFFIXES = tuple((s, 1024 ** (6 - i)) for i, s in enumerate(("Ei", "Pi", "Ti", "Gi", "Mi", "Ki")))


def show_amount(resource: str, amount: int) -> str:
    """``amount`` of ``resource`` (base units) in Kubernetes quantity notation."""
    if resource in _MILLI:
        whole, milli = divmod(amount, 1000)
        return str(whole) if milli == 0 else f"{amount}m"
    if amount and (resource in _BYTES or resource.startswith("hugepages-")):
        for suffix, unit in _SUFFIXES:
            if amount % unit == 0:
                return f"{amount // unit}{suffix}"
    return str(amount)
