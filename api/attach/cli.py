"""``podledger attach --kubeconfig FILE [--context NAME] --mode mirror [--namespace NS ...]``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from api.cli.console import UserError, app

MODES = ("mirror", "shadow", "schedule")


@app.command()
def attach(
    kubeconfig: Annotated[
        Path | None,
        typer.Option(help="kubeconfig of the cluster to attach to (default: --in-cluster inside a Pod)."),
    ] = None,
    in_cluster: Annotated[
        bool,
        typer.Option(
            "--in-cluster",
            help="Use the Pod's service account: KUBERNETES_SERVICE_HOST/PORT, its projected token "
            "(re-read when it rotates) and CA. The default when --kubeconfig is not given inside a Pod.",
        ),
    ] = False,
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
        int | None, typer.Option(help="Serve Prometheus metrics (and the liveness probe) on PORT.")
    ] = None,
    metrics_address: Annotated[
        str, typer.Option(help="Address the metrics server binds (0.0.0.0 in a Pod).")
    ] = "127.0.0.1",
    auth_failures: Annotated[
        int,
        typer.Option(
            help="Exit non-zero (3) after this many 401/403 answers in a row (backing off between "
            "them); 0: retry forever.",
            min=0,
        ),
    ] = 10,
    scheduler_name: Annotated[
        str,
        typer.Option(
            help="schedule mode: the profile name podledger serves: only pods with this "
            "spec.schedulerName are scheduled (written to the ledger's SchedulerConfig)."
        ),
    ] = "podledger",
    progress_every: Annotated[float, typer.Option(help="Seconds between progress lines.")] = 10.0,
    queue_size: Annotated[int, typer.Option(help="Changes read ahead of the writer, at most.")] = 1000,
    events_every: Annotated[
        float,
        typer.Option(help="Seconds between two reads of the cluster's scheduling Events (0: never).", min=0),
    ] = 5.0,
    page_size: Annotated[int, typer.Option(help="Objects per list page (limit=).", min=1)] = 250,
    max_list_objects: Annotated[
        int,
        typer.Option(
            help="A list of one kind past this many objects (a server that keeps paging) is "
            "abandoned and retried with backoff.",
            min=1,
        ),
    ] = 200_000,
) -> None:
    """Attach to a live cluster through its Kubernetes API (leader-elected, runs until SIGTERM).

    mirror: list then watch its objects and append each change as podledger's input events
    (read-only on the cluster); shadow: the same, with the cluster's bindings recorded as
    PodBindingObserved beside podledger's own decisions; schedule: podledger's decisions for
    pods of --scheduler-name are bound through pods/binding, their groups' conditions patched
    on the status subresource. See docs/attach.md."""
    import os
    import socket

    from api.attach import incluster
    from api.attach.remote import Remote, RemoteError, load_client
    from api.attach.remote import cluster_name as kube_cluster
    from api.attach.runner import Attach
    from ledger import db

    if mode not in MODES:
        raise UserError(f"--mode must be one of {', '.join(MODES)}, not {mode!r}")
    if kubeconfig is not None and in_cluster:
        raise UserError("--kubeconfig and --in-cluster: give one")
    if kubeconfig is None and (in_cluster or incluster.available()):
        try:
            api_client, _tokens = incluster.load_client()
        except incluster.InClusterError as exc:
            raise UserError(f"--in-cluster: {exc}") from None
        cluster = cluster_name or "in-cluster"
    elif kubeconfig is None:
        raise UserError("--kubeconfig FILE is required outside a Pod (or --in-cluster inside one)")
    else:
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
        Remote(api_client, page_size=page_size, max_list_objects=max_list_objects),
        cluster,
        namespaces=sorted(set(namespace or [])),
        mode=mode,
        name=name or f"{socket.gethostname()}:{os.getpid()}",
        queue_size=queue_size,
        progress_every=progress_every,
        profile=scheduler_name,
        auth_failures=auth_failures,
        events_every=events_every,
    )
    if metrics_port is not None:
        runner.metrics.serve(metrics_port, metrics_address)
    raise typer.Exit(runner.run())
