"""Audit services shared by the CLI and the HTTP API: explain, history, state at a position,
replay verification and what-if. All are read-only over the log; see api/audit_impl.py."""

from __future__ import annotations

from api.audit_impl import explain, history, render_explain, state_at, verify_replay, whatif

__all__ = ["explain", "history", "render_explain", "state_at", "verify_replay", "whatif"]
