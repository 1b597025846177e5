"""Prolific's errors: each kind of failure of :mod:`crowd.providers.errors` as a ``Prolific``.

The platform's modules import this module as ``errors``: it also re-exports the shared kinds, so
``errors.TransientError`` and ``errors.ProlificTransientError`` read from one place.
"""

from __future__ import annotations

from crowd.providers.errors import (
    PAYMENT_REFUSED,
    AlreadyDoneError,
    AuthError,
    InsufficientFundsError,
    InvalidRequestError,
    NotFoundError,
    ProviderConfigError,
    ProviderError,
    RateLimitedError,
    TransientError,
    error_for,
    register_errors,
)

__all__ = [
    "PAYMENT_REFUSED",
    "AlreadyDoneError",
    "AuthError",
    "InsufficientFundsError",
    "InvalidRequestError",
    "ProlificAlreadyDoneError",
    "ProlificAuthError",
    "ProlificError",
    "ProlificInsufficientFundsError",
    "ProlificInvalidRequestError",
    "ProlificNotFoundError",
    "ProlificRateLimitedError",
    "ProlificTransientError",
    "NotFoundError",
    "ProviderConfigError",
    "ProviderError",
    "RateLimitedError",
    "TransientError",
    "error_for",
]

PLATFORM = "prolific"


class ProlificError(ProviderError):
    """An error from Prolific."""

    platform = PLATFORM


class ProlificNotFoundError(ProlificError, NotFoundError):
    """Prolific: HTTP 404."""


class ProlificAlreadyDoneError(ProlificError, AlreadyDoneError):
    """Prolific: the submission or study is already in the requested state."""


class ProlificInvalidRequestError(ProlificError, InvalidRequestError):
    """Prolific: HTTP 400 or a request refused by local validation."""


class ProlificRateLimitedError(ProlificError, RateLimitedError):
    """Prolific: HTTP 429."""


class ProlificAuthError(ProlificError, AuthError):
    """Prolific: HTTP 401 or 403."""


class ProlificTransientError(ProlificError, TransientError):
    """Prolific: HTTP 5xx, a timeout or a dropped connection."""


class ProlificInsufficientFundsError(ProlificError, InsufficientFundsError):
    """Prolific: HTTP 402 or a balance error."""


register_errors(
    PLATFORM,
    {
        NotFoundError: ProlificNotFoundError,
        AlreadyDoneError: ProlificAlreadyDoneError,
        InvalidRequestError: ProlificInvalidRequestError,
        RateLimitedError: ProlificRateLimitedError,
        AuthError: ProlificAuthError,
        TransientError: ProlificTransientError,
        InsufficientFundsError: ProlificInsufficientFundsError,
    },
)
