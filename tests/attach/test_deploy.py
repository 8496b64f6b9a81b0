"""Issue 33 item 4: deploy/kubernetes renders with ``kubectl kustomize`` (each overlay, and one with
the optional PostgreSQL component) and every rendered object validates offline, strictly (no
unknown field), against the upstream OpenAPI-derived JSON schemas of Kubernetes 1.32 bundled by
``kubernetes-validate``; the containers run as non-root; attach's arguments are options attach
has; the Dockerfile's user is not root; docker-compose.yml has an attach service."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.k8s.conftest import ROOT

KUBECTL = shutil.which("kubectl")
DEPLOY = ROOT / "deploy" / "kubernetes"
K8S_VERSION = "1.32.0"  # the kubectl installed here; the oldest API the manifests promise
OVERLAYS = ("mirror", "shadow", "schedule")

needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


def render(path: Path) -> list[dict[str, Any]]:
    assert KUBECTL is not None
    out = subprocess.run([KUBECTL, "kustomize", str(path)], capture_output=True, text=True, check=True)
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def _with_postgres(tmp: Path) -> Path:
    overlay = tmp / "with-postgres"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        # kustomize takes relative paths only
        f"resources:\n- {os.path.relpath(DEPLOY / 'overlays' / 'shadow', overlay)}\n"
        f"components:\n- {os.path.relpath(DEPLOY / 'components' / 'postgres', overlay)}\n"
    )
    return overlay


def _deployment(docs: list[dict[str, Any]]) -> dict[str, Any]:
    [dep] = [d for d in docs if d["kind"] == "Deployment"]
    return dep


@needs_kubectl
@pytest.mark.parametrize("overlay", [*OVERLAYS, "with-postgres"])
def test_overlays_render_and_validate_offline(overlay: str, tmp_path: Path) -> None:
    kv = pytest.importorskip("kubernetes_validate", reason="kubernetes-validate (dev dependency)")
    path = _with_postgres(tmp_path) if overlay == "with-postgres" else DEPLOY / "overlays" / overlay
    docs = render(path)
    failures = []
    for doc in docs:
        try:
            kv.validate(doc, K8S_VERSION, strict=True)
        except kv.ValidationError as exc:
            failures.append(f"{doc['kind']}/{doc['metadata']['name']}: {exc.message} at {list(exc.path)}")
    assert failures == []
    kinds = {d["kind"] for d in docs}
    assert {
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Secret",
        "Deployment",
    } <= kinds
    assert ("StatefulSet" in kinds) == (overlay == "with-postgres")
    pod = _deployment(docs)["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["serviceAccountName"] == "podledger-attach"
    attach = next(c for c in pod["containers"] if c["name"] == "attach")
    mode = overlay if overlay in OVERLAYS else "shadow"
    assert f"--mode={mode}" in attach["args"]
    assert ("worker" in {c["name"] for c in pod["containers"]}) == (mode != "mirror")
    schedule_rules = [
        d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"].endswith("schedule")
    ]
    assert bool(schedule_rules) == (mode == "schedule")


@needs_kubectl
def test_attach_arguments_are_options_attach_has() -> None:
    from typer.main import get_command

    import api.attach.cli  # noqa: F401  (registers the command)
    from api.cli.console import app

    cmd = get_command(app)
    attach = cmd.commands["attach"]  # type: ignore[attr-defined]
    known = {opt for p in attach.params for opt in p.opts}
    args = _deployment(render(DEPLOY / "overlays" / "schedule"))["spec"]["template"]["spec"]["containers"][0][
        "args"
    ]
    assert {a.partition("=")[0] for a in args} <= known


def test_the_image_runs_as_a_numeric_non_root_user_and_compose_has_attach() -> None:
    users = [ln.split()[1] for ln in (ROOT / "Dockerfile").read_text().splitlines() if ln.startswith("USER ")]
    assert users and users[-1].split(":")[0].isdigit() and users[-1].split(":")[0] != "0"
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    attach = compose["services"]["attach"]
    assert attach["command"][:2] == ["podledger", "attach"]


def test_the_components_roles_script_is_compose_s() -> None:
    """Kustomize loads no file outside the component's folder, so it holds a copy of the roles
    script the compose file's PostgreSQL runs: the two stay the same."""
    copy = DEPLOY / "components" / "postgres" / "roles.sh"
    assert copy.read_bytes() == (ROOT / "deploy" / "postgres" / "10-roles.sh").read_bytes()
