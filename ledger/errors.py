"""Errors raised by the ledger. Each carries a message meant for users."""

from __future__ import annotations


class LedgerError(Exception):
    """Base class for ledger errors."""


class ConcurrencyError(LedgerError):
    """An expected stream version did not match; nothing was appended."""

    def __init__(self, stream: str, expected: int, actual: int) -> None:
        super().__init__(f"stream {stream!r}: expected version {expected}, found {actual}")
        self.stream = stream
        self.expected = expected
        self.actual = actual


class EventValidationError(LedgerError):
    """An event payload failed its schema, is too large or is not JSON-serialisable."""


class IdempotencyConflict(LedgerError):
    """Part of a batch was already stored under the same event ids, part was not."""


class DatabaseMissing(LedgerError):
    """The configured database (PODLEDGER_DATABASE_URL) does not exist: never created silently."""


class UnknownEventType(EventValidationError):
    pass
