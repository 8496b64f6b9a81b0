"""``podledger attach --kubeconfig FILE [--context NAME] --mode mirror [--namespace NS ...]``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from api.cli.console import UserError, app

MODES = ("mirror", "shadow", "schedule")


@app.command()
def attach(
    kubeconfig: Annotated[Path, typer.Option(help="kubeconfig of the cluster to attach to.")],
    mode: Annotated[
        str,
        typer.Option(
            help="mirror (record the cluster's objects and bindings) or shadow (mirror, but the "
            "cluster's bindings are recorded beside podledger's own decisions) or schedule (podledger's "
            "decisions are bound in the cluster); shadow and schedule need `podledger worker` on the ledger."
        ),
    ] = "mirror",
    context: Annotated[
        str | None, typer.Option(help="kubeconfig context (default: the current one).")
    ] = None,
    namespace: Annotated[
        list[str] | None,
        typer.Option("--namespace", "-n", help="Mirror only these namespaces (repeat; default: all)."),
    ] = None,
    name: Annotated[str | None, typer.Option(help="Process name for logs.")] = None,
    cluster_name: Annotated[
        str | None, typer.Option(help="Name of the cluster in event meta (default: the kubeconfig's).")
    ] = None,
    metrics_port: Annotated[
        int | None, typer.Option(help="Serve Prometheus metrics on 127.0.0.1:PORT.")
    ] = None,
    scheduler_name: Annotated[
        str,
        typer.Option(
            help="schedule mode: the profile name podledger serves: only pods with this "
            "spec.schedulerName are scheduled (written to the ledger's SchedulerConfig)."
        ),
    ] = "podledger",
    progress_every: Annotated[float, typer.Option(help="Seconds between progress lines.")] = 10.0,
    queue_size: Annotated[int, typer.Option(help="Changes read ahead of the writer, at most.")] = 1000,
) -> None:
    """Attach to a live cluster through its Kubernetes API (leader-elected, runs until SIGTERM).

    mirror: list then watch its objects and append each change as podledger's input events
    (read-only on the cluster); shadow: the same, with the cluster's bindings recorded as
    PodBindingObserved beside podledger's own decisions; schedule: podledger's decisions for
    pods of --scheduler-name are bound through pods/binding, their groups' conditions patched
    on the status subresource. See docs/attach.md."""
    import os
    import socket

    from api.attach.remote import Remote, RemoteError, load_client
    from api.attach.remote import cluster_name as kube_cluster
    from api.attach.runner import Attach
    from ledger import db

    if mode not in MODES:
        raise UserError(f"--mode must be one of {', '.join(MODES)}, not {mode!r}")
    if not kubeconfig.exists():
        raise UserError(f"--kubeconfig {kubeconfig}: no such file")
    try:
        api_client = load_client(str(kubeconfig), context)
        cluster = cluster_name or kube_cluster(str(kubeconfig), context)
    except (RemoteError, Exception) as exc:  # the client raises ConfigException, ValueError ...
        raise UserError(f"--kubeconfig {kubeconfig}: {exc}") from None
    runner = Attach(
        db.get_database(),
        db.app_url(),
        Remote(api_client),
        cluster,
        namespaces=sorted(set(namespace or [])),
        mode=mode,
        name=name or f"{socket.gethostname()}:{os.getpid()}",
        queue_size=queue_size,
        progress_every=progress_every,
        profile=scheduler_name,
    )
    if metrics_port is not None:
        runner.metrics.serve(metrics_port)
    raise typer.Exit(runner.run())
