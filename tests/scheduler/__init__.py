"""Pure unit tests of the scheduling core (no database)."""
