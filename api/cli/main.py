"""``podledger``: registers every command group on the app and runs it.

Whatever goes wrong, the CLI prints one ``error: ...`` line and exits 1, never a Python
traceback (set ``PODLEDGER_DEBUG=1`` to see one): user errors, ledger and service errors,
input that is not UTF-8 or is nested too deeply, and a database that cannot be reached.
"""

from __future__ import annotations

import os
import sys

import api.attach.cli  # noqa: F401  (registers attach)
import api.cli.admin  # noqa: F401  (registers db upgrade, verify, projections rebuild, log)
import api.cli.anchor  # noqa: F401  (registers checkpoint, prove, db roles)
import api.cli.audit  # noqa: F401  (registers explain, history, replay)
import api.cli.objects  # noqa: F401  (registers apply, get, delete)
import api.cli.partitions  # noqa: F401  (registers db partitions)
import api.cli.scheduling  # noqa: F401  (registers schedule, simulate, demo, worker)
import api.cli.serve  # noqa: F401  (registers serve)
import api.k8s.cli  # noqa: F401  (registers kubeconfig)
from api.cli.console import UserError, app, err, one_line_error
from api.services.errors import ServiceError
from ledger.errors import LedgerError


def main() -> None:
    try:
        app()
    except (UserError, LedgerError, ServiceError) as exc:
        err.print(f"error: {exc}")
        sys.exit(1)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # one clear line instead of a traceback
        if os.environ.get("PODLEDGER_DEBUG"):
            raise
        err.print(f"error: {one_line_error(exc)}")
        sys.exit(1)


if __name__ == "__main__":
    main()


__all__ = ["app", "main"]
