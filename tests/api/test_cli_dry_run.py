"""``podledger apply/delete --dry-run=server|client`` and ``apply --validate``: a dry run or a
misspelled field leaves no trace in the log."""

from __future__ import annotations

from ledger.database import Database
from tests.api.test_cli import cli, events

POD = """apiVersion: v1
kind: Pod
metadata: {name: web, namespace: dry}
spec:
  containers: [{name: c, resources: {requests: {cpu: 100m}}}]
"""
TYPO = POD.replace("resources:", "resource:")


def test_server_and_client_dry_runs_append_nothing(database: Database) -> None:
    n = events(database)
    r = cli("apply", "--dry-run=server", "-f", "-", stdin=POD)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "pod/web created (server dry run)"
    r = cli("apply", "--dry-run=client", "-f", "-", stdin=POD)
    assert r.returncode == 0 and r.stdout.strip() == "pod/web validated (dry run)", r.stderr
    assert events(database) == n
    assert cli("apply", "-f", "-", stdin=POD).returncode == 0
    n = events(database)
    r = cli("delete", "pod", "dry/web", "--dry-run=server")
    assert r.returncode == 0 and r.stdout.strip() == "pod/web deleted (server dry run)", r.stderr
    assert events(database) == n
    r = cli("delete", "pod", "dry/nope", "--dry-run=server")
    assert r.returncode != 0 and "not found" in r.stderr


def test_apply_is_strict_by_default_and_validate_warn_or_false_lets_a_typo_through(
    database: Database,
) -> None:
    n = events(database)
    r = cli("apply", "-f", "-", stdin=TYPO)
    assert r.returncode == 1
    assert 'strict decoding error: unknown field "spec.containers[0].resource"' in r.stderr
    assert events(database) == n
    r = cli("apply", "--validate=warn", "--dry-run=server", "-f", "-", stdin=TYPO)
    assert r.returncode == 0, r.stderr
    assert 'Warning: document 1 of -: Pod dry/web: unknown field "spec.containers[0].resource"' in r.stderr
    r = cli("apply", "--validate=false", "--dry-run=server", "-f", "-", stdin=TYPO)
    assert r.returncode == 0 and "Warning" not in r.stderr, r.stderr
    assert cli("apply", "--validate=maybe", "-f", "-", stdin=TYPO).returncode != 0
    assert events(database) == n
