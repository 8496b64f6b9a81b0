"""HTTP routes: ``objects`` (apply, delete, get, list, explain, history), ``events`` (the log,
its SSE stream, state at a position), ``jobs`` (what-if), ``health`` (healthz, readyz,
metrics) and ``dashboard`` (the HTML pages)."""
