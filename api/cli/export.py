"""``podledger export --follow``: the event log as JSON lines through a logical replication slot
(``ledger/logstream.py``; the publication ``podledger_events`` of migration 0027)."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Annotated

import typer

from api.cli.console import UserError, app, err, out


@app.command()
def export(
    out_file: Annotated[Path, typer.Option("--out", help="JSON lines file to append the events to.")],
    follow: Annotated[
        bool, typer.Option("--follow", help="Keep exporting new events until Ctrl-C or SIGTERM.")
    ] = False,
    slot: Annotated[
        str, typer.Option(help="Logical replication slot of this consumer (created on first use).")
    ] = "podledger_export",
    max_events: Annotated[
        int | None, typer.Option(help="Stop after writing this many events (resume later).", min=1)
    ] = None,
    poll: Annotated[float, typer.Option(help="Seconds between two reads of an idle slot.", min=0.01)] = 0.5,
    drop_slot: Annotated[
        bool,
        typer.Option("--drop-slot", help="Drop the slot (the server stops keeping WAL for it) and exit."),
    ] = False,
) -> None:
    """Append the log's events, in position order and each exactly once, to a JSON lines file
    (resumes from its slot and the file's last position after a restart)."""
    from ledger import db, logstream

    url = db.libpq_url(db.server_url())  # the owner: creating and reading a slot needs REPLICATION
    if drop_slot:
        logstream.drop_slot(url, slot)
        out.print(f"dropped slot {slot}")
        return
    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    try:
        exporter = logstream.Exporter(url, out_file, slot)
        n = exporter.run(follow=follow, poll=poll, max_events=max_events, stop=stop.is_set)
    except logstream.StreamError as exc:
        raise UserError(str(exc)) from exc
    err.print(f"exported {n} events to {out_file} (last position {exporter.last_position})")
