"""Manifests the ledger tests apply."""

from __future__ import annotations


def pod(name: str, cpu: str = "1", namespace: str = "ns") -> dict:
    """A plain pod with one container requesting ``cpu``."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
    }
