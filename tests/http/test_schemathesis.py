"""A bounded schemathesis run against the app's own OpenAPI spec, on a real database with the
demo data: no 5xx, and every response conforms to its documented status, content type,
headers and schema."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api.http.app import create_app
from tests.http.conftest import TOKEN_SPEC, auth

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]

# The spec is read from the app when this module is collected (no database is needed for
# that); the fixture below points the app at the demo database before any case runs.
APP = create_app(None, TOKEN_SPEC)
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@pytest.fixture(scope="module", autouse=True)
def _database(demo_database):  # type: ignore[no-untyped-def]
    APP.state.ctx._db = demo_database
    yield
    APP.state.ctx._db = None


@schema.parametrize()
@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_openapi_spec(case):  # type: ignore[no-untyped-def]
    if case.path == "/podledger/v1/events/stream":
        # keep the live stream bounded whatever was generated
        case.query = {**(case.query or {}), "timeout": 0.2, "max_events": 3}
        if case.headers:
            case.headers.pop("Last-Event-ID", None)
    case.call_and_validate(headers=auth("admin"), checks=CHECKS)
