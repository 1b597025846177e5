"""The API's role fixtures (token clients, the fake platform) for the webhook event tests."""

from tests.api.conftest import fake, researcher  # noqa: F401
