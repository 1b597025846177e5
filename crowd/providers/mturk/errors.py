"""Amazon Mechanical Turk's errors: each kind of failure of :mod:`crowd.providers.errors` as a ``MTurk``.

The platform's modules import this module as ``errors``: it also re-exports the shared kinds, so
``errors.TransientError`` and ``errors.MTurkTransientError`` read from one place.
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
    "MTurkAlreadyDoneError",
    "MTurkAuthError",
    "MTurkError",
    "MTurkInsufficientFundsError",
    "MTurkInvalidRequestError",
    "MTurkNotFoundError",
    "MTurkRateLimitedError",
    "MTurkTransientError",
    "NotFoundError",
    "ProviderConfigError",
    "ProviderError",
    "RateLimitedError",
    "TransientError",
    "error_for",
]

PLATFORM = "mturk"


class MTurkError(ProviderError):
    """An error from Amazon Mechanical Turk."""

    platform = PLATFORM


class MTurkNotFoundError(MTurkError, NotFoundError):
    """MTurk: the HIT, assignment or qualification does not exist."""


class MTurkAlreadyDoneError(MTurkError, AlreadyDoneError):
    """MTurk: the assignment is not in the state the operation needs, or the token was already used."""


class MTurkInvalidRequestError(MTurkError, InvalidRequestError):
    """MTurk: ``RequestError`` not covered by a more precise kind."""


class MTurkRateLimitedError(MTurkError, RateLimitedError):
    """MTurk: throttled."""


class MTurkAuthError(MTurkError, AuthError):
    """MTurk: credentials refused."""


class MTurkTransientError(MTurkError, TransientError):
    """MTurk: ``ServiceFault`` or a network failure."""


class MTurkInsufficientFundsError(MTurkError, InsufficientFundsError):
    """MTurk: the requester balance is too low."""


register_errors(
    PLATFORM,
    {
        NotFoundError: MTurkNotFoundError,
        AlreadyDoneError: MTurkAlreadyDoneError,
        InvalidRequestError: MTurkInvalidRequestError,
        RateLimitedError: MTurkRateLimitedError,
        AuthError: MTurkAuthError,
        TransientError: MTurkTransientError,
        InsufficientFundsError: MTurkInsufficientFundsError,
    },
)
