"""HTTP routes: ``objects`` (apply, delete, get, list), ``audit`` (explain, history, state at
a position), ``events`` (the log and its SSE stream), ``jobs`` (what-if), ``health`` (healthz,
readyz, metrics) and ``dashboard`` (the HTML pages); ``paths`` holds the prefix, ``deps`` the
auth dependencies."""
