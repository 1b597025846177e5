"""Schemathesis over the API's own OpenAPI schema, against the app in process (WSGI): generated requests
to every operation, as a researcher, answered with no server error and no response outside the schema.

Objects exist for the generated ids to find (a local-crowd batch with three submissions, a job; local,
as the schema names only real platforms), so the actions run their services, not only their 404s. Each
operation gets a few examples, so the whole run stays under a minute.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, given, settings
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from annotation.models import Job
from tests.browser.test_review_stream import _three_submissions
from tests.factories import make_researcher

EXAMPLES = 8


@pytest.mark.django_db(transaction=True)
def test_schema__no_server_error_and_no_response_outside_it() -> None:
    _three_submissions()  # a local-crowd batch "syl" with three submissions
    Job.objects.create(kind="import")
    token = Token.objects.create(user=make_researcher("schema")).key
    app = get_wsgi_application()
    schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", app)
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def run(case: Any) -> None:
            # identity: the GZip middleware would compress the body, which the WSGI client does not undo
            response = case.call(headers={"Authorization": f"Token {token}", "Accept-Encoding": "identity"})
            try:
                case.validate_response(response, checks=[not_a_server_error, response_schema_conformance])
            except Exception as exc:  # noqa: BLE001 - every failure is listed below
                failures.append(f"{case.operation.label}: {response.status_code} {str(exc)[:300]}")

        run()
    assert operations >= 12
    assert not failures, "\n".join(failures[:20])
