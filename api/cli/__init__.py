"""The ``podledger`` command line (Typer + Rich): ``console`` holds the app and the consoles,
one module per group of commands registers on it, and ``main`` runs it. Commands parse their
arguments, call one service of ``api.services`` and print its answer."""
