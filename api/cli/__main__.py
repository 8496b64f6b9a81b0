"""``python -m api.cli``: the same as the ``podledger`` console script."""

from api.cli.main import main

main()
