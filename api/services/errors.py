"""Errors the services raise. Each edge maps them to its own answer: the HTTP API to a status
code and ``{"error", "message", "details"}``, the CLI to a message and exit code 1."""

from __future__ import annotations

from typing import Any


class ServiceError(Exception):
    """A request the service refuses; ``details`` name object and field where known."""

    code = "bad_request"

    def __init__(self, message: str, *, details: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or []


class BadRequest(ServiceError):
    """A malformed parameter (a selector, a cursor, a time, an If-Match value)."""

    code = "bad_request"


class NotFound(ServiceError, LookupError):
    """No such kind, object, or history (also a LookupError, for callers that catch that)."""

    code = "not_found"


class Invalid(ServiceError):
    """Manifests that do not parse or validate; nothing was appended."""

    code = "invalid"


class Conflict(ServiceError):
    """If-Match did not match, or a concurrent write of the same object won."""

    code = "conflict"


class Rejected(ServiceError):
    """Admission refused the request; exactly one AdmissionRejected event was appended at
    ``position`` and nothing else changed."""

    code = "rejected"

    def __init__(self, message: str, *, details: list[dict[str, Any]], position: int) -> None:
        super().__init__(message, details=details)
        self.position = position


__all__ = ["BadRequest", "Conflict", "Invalid", "NotFound", "Rejected", "ServiceError"]
