"""``podledger predictions refresh``: the predicted starts ``v_pending_now`` shows (issue 34).

Derived data, rebuilt on demand as ``projections rebuild`` rebuilds the projections: the
estimator explain uses, for the first pending entities in queue order, stored in
``pending_predictions`` (``api/services/pending_predictions.py``). Nothing is appended to the log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from api.cli.console import UserError, app, database, err, out

if TYPE_CHECKING:
    from api.services.start_estimate import Estimate

predictions_app = typer.Typer(no_args_is_help=True, help="Predicted starts of pending work (derived data).")
app.add_typer(predictions_app, name="predictions")


@predictions_app.command("refresh")
def predictions_refresh(
    limit: Annotated[
        int | None,
        typer.Option(
            help="Predict the first N pending entities in queue order (0: all; default "
            "PODLEDGER_PREDICT_LIMIT, else 50)."
        ),
    ] = None,
) -> None:
    """Recompute the predicted start of the pending PodGroups and pods as of the head and
    replace the stored ones (v_pending_now's predicted_* columns), in one transaction; one
    progress line per entity on stderr."""
    from api.services.explain import render_prediction
    from api.services.pending_predictions import refresh

    if limit is not None and limit < 0:
        raise UserError(f"--limit must be 0 or more, got {limit}")

    def progress(i: int, n: int, entity: tuple[str, str, str], est: Estimate | None) -> None:
        kind, namespace, name = entity
        said = "not pending as of the position" if est is None else render_prediction(est.as_dict()).strip()
        err.print(f"  {i}/{n} {kind} {namespace}/{name}: {said}")

    done = refresh(database(), limit=limit, on_entity=progress)
    rest = done.pending - len(done.entities)
    out.print(
        f"predictions: {done.rows} stored as of position {done.position} "
        f"({done.pending} pending{f', {rest} beyond the limit not predicted' if rest > 0 else ''}) "
        f"in {done.seconds:.2f}s"
    )
