"""Projections: inline (same transaction as the append) and async (checkpointed runner)."""
