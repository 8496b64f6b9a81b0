"""``podledger checkpoint | prove | verify --checkpoint | db roles``: anchored history and roles.

The checkpoint key is a file outside the database: ``--key``, else ``PODLEDGER_CHECKPOINT_KEY``,
else ``$PODLEDGER_HOME/checkpoint.key``. See docs/transparency.md.
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from api.cli.console import UserError, app, database, db_app, err, out
from api.cli.printer import Table

KeyOpt = Annotated[
    str | None,
    typer.Option(
        "--key",
        help="Signing key file (default: $PODLEDGER_CHECKPOINT_KEY or $PODLEDGER_HOME/checkpoint.key).",
    ),
]


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{what} {path}: {exc}") from exc


@app.command()
def checkpoint(
    key: KeyOpt = None,
    origin: Annotated[
        str | None, typer.Option(help="Origin line (default: $PODLEDGER_CHECKPOINT_ORIGIN or 'podledger').")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Also write the note to this file.")
    ] = None,
    new_key: Annotated[bool, typer.Option("--new-key", help="Create the signing key file first.")] = False,
    key_name: Annotated[str, typer.Option(help="Name of a key made with --new-key.")] = "podledger",
    verifier_key: Annotated[
        bool, typer.Option("--verifier-key", help="Print the public verifier key and exit.")
    ] = False,
) -> None:
    """Extend the Merkle tree over the log and print a signed checkpoint (C2SP signed note)."""
    from ledger import anchor

    try:
        signer = anchor.create_key(key, key_name) if new_key else anchor.load_signer(key)
        if new_key:
            err.print(
                f"created checkpoint key {anchor.key_path(key)} (keep it outside the database host's backups)"
            )
        if verifier_key:
            out.print(signer.verifier.text())
            return
        signed = anchor.make_checkpoint(database(), signer, origin)
    except anchor.AnchorError as exc:
        raise UserError(str(exc)) from exc
    if output is not None:
        output.write_text(signed.note, encoding="utf-8")
    sys.stdout.write(signed.note)


@app.command()
def prove(
    position: Annotated[int, typer.Argument(help="Log position of the event.")],
    checkpoint_file: Annotated[
        Path | None, typer.Option("--checkpoint", help="Prove against this checkpoint (default: the newest).")
    ] = None,
    public_key: Annotated[
        str | None,
        typer.Option(
            "--public-key",
            help="Verifier key (text or file) the checkpoint must be signed with (default: "
            "$PODLEDGER_CHECKPOINT_VERIFIER_KEY, else the signing key's public half).",
        ),
    ] = None,
) -> None:
    """Print an inclusion proof (JSON) of one event in a signed checkpoint.

    The checkpoint's signature is checked with the verifier key first. Anyone holding the verifier key checks it with ``ledger.transparency.verify_event_proof``
    (or ``python -m ledger.transparency PROOF.json VERIFIER_KEY``).
    """
    import orjson

    from ledger import anchor

    note = _read(checkpoint_file, "checkpoint") if checkpoint_file else None
    try:
        proof = anchor.prove(database(), position, anchor.require_verifier(public_key), note)
    except anchor.AnchorError as exc:
        raise UserError(str(exc)) from exc
    sys.stdout.write(orjson.dumps(proof, option=orjson.OPT_INDENT_2).decode() + "\n")


def verify_checkpoint(checkpoint_file: Path, public_key: str | None, key: str | None) -> None:
    """``podledger verify --checkpoint FILE``: is the log an append-only extension of FILE?"""
    from ledger import anchor

    note = _read(checkpoint_file, "checkpoint")
    try:
        verifier = anchor.load_verifier(public_key) if public_key else anchor.load_signer(key).verifier
    except anchor.AnchorError as exc:
        raise UserError(str(exc)) from exc
    res = anchor.verify_against_checkpoint(database(), note, verifier)
    if res.ok:
        out.print(
            f"ok: the log ({res.log_size} events) extends the checkpoint of {res.checkpoint_size} events "
            "(signature and consistency proof verified)"
        )
        return
    where = f" at position {res.first_bad_position}" if res.first_bad_position is not None else ""
    out.print(f"FAILED{where}: {res.reason}")
    raise typer.Exit(1)


@db_app.command("roles")
def db_roles(
    output: Annotated[str, typer.Option("-o", "--output", help="table | json")] = "table",
) -> None:
    """Show the owner, application and reporting roles and what each may do on events."""
    import orjson

    from ledger import db, roles

    infos = roles.describe(db.get_database(owner=True))
    issues = roles.problems(infos)
    if output == "json":
        sys.stdout.write(
            orjson.dumps({"roles": [asdict(r) for r in infos], "problems": issues}).decode() + "\n"
        )
    else:
        table = Table("ROLE", "PURPOSE", "LOGIN", "SUPERUSER", "ON EVENTS", "SESSIONS")
        for r in infos:
            table.add_row(
                r.name,
                r.purpose,
                "yes" if r.login else "no",
                "YES" if r.superuser else "no",
                ", ".join(r.events) or "-",
                str(r.sessions),
            )
        out.print(table)
        for p in issues:
            out.print(f"problem: {p}")
    if issues:
        raise typer.Exit(1)
