"""Errors raised by crowd providers, keeping the platform's own code and HTTP status.

Two axes: the platform (each platform package's ``errors`` module: ``crowd.providers.mturk.errors``...)
and the kind of failure defined here (``NotFoundError``, ``AlreadyDoneError``, ``RateLimitedError`` ...).
A concrete error inherits from both, so a Celery task can retry on ``(RateLimitedError, TransientError)``
whatever the platform, while platform code can still catch its own root class. ``error_for(platform,
kind)`` picks the concrete class a platform registered; nothing here swallows an error (compare
Mephisto's ``approve_work`` that catches every ``Exception``).
"""

from __future__ import annotations

from typing import Optional


class ProviderError(Exception):
    """Base of every crowd-platform error.

    Attributes:
        platform: ``"mturk"``, ``"prolific"``, ``"fake"`` ... (``""`` when not tied to one).
        code: the platform's error code (MTurk ``__type`` such as ``RequestError``, Prolific
            ``error_code``), or ``""``.
        status: the HTTP status when there was a response, else ``None``.
        operation: the remote operation (``SendBonus``, ``POST studies/``), or ``""``.
        retry_after: seconds the platform asked to wait before a retry (``Retry-After``), else None.
        never_sent: the request never reached the platform (a refused connection): safe to repeat.
    """

    platform: str = ""
    retry_after: Optional[float] = None
    never_sent: bool = False

    def __init__(
        self,
        message: str,
        *,
        code: str = "",
        status: Optional[int] = None,
        operation: str = "",
        platform: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.operation = operation
        if platform is not None:
            self.platform = platform

    def __str__(self) -> str:
        parts = [p for p in (self.platform, self.operation, self.code) if p]
        if self.status is not None:
            parts.append(f"HTTP {self.status}")
        prefix = f"[{' '.join(parts)}] " if parts else ""
        return f"{prefix}{self.message}"


# --- kinds -------------------------------------------------------------------------------------------


class ProviderConfigError(ProviderError):
    """The provider is not configured (missing token, unknown provider name, missing group id)."""


class AuthError(ProviderError):
    """The platform refused the credentials (HTTP 401/403, bad AWS keys)."""


class NotFoundError(ProviderError):
    """The HIT, assignment, study or submission does not exist on the platform."""


class AlreadyDoneError(ProviderError):
    """The transition was already made (approve an approved assignment, reuse a spent token)."""


class InvalidRequestError(ProviderError):
    """The platform rejected the request's content (HTTP 400, local validation before sending)."""


class RateLimitedError(ProviderError):
    """The platform asks us to slow down (HTTP 429, MTurk ``ThrottlingException``): retry later."""


class TransientError(ProviderError):
    """A network failure or a 5xx answer: the call may or may not have reached the platform."""


class InsufficientFundsError(ProviderError):
    """The requester account cannot pay for this call."""


PAYMENT_REFUSED: tuple[type[ProviderError], ...] = (
    InvalidRequestError,
    AuthError,
    NotFoundError,
    InsufficientFundsError,
)
"""Errors that prove a pay request was refused, so nothing was paid (a network error proves nothing)."""


# --- platforms ---------------------------------------------------------------------------------------

_TABLE: dict[tuple[str, type[ProviderError]], type[ProviderError]] = {}
"""The concrete class of each (platform, kind), filled by each platform's own ``errors`` module."""


def register_errors(platform: str, table: dict[type[ProviderError], type[ProviderError]]) -> None:
    """Record a platform's concrete error class for each kind of failure (its ``errors`` module calls this).

    Args:
        platform: the provider name.
        table: kind class (``NotFoundError`` ...) -> the platform's class inheriting from it.
    """
    for kind, concrete in table.items():
        if not issubclass(concrete, kind):
            raise TypeError(f"{concrete.__name__} must inherit from {kind.__name__}")
        _TABLE[(platform, kind)] = concrete


def error_for(platform: str, kind: type[ProviderError]) -> type[ProviderError]:
    """Return the concrete error class for a platform and a kind of failure.

    Args:
        platform: a provider name whose ``errors`` module registered its classes.
        kind: one of the kind classes above (``NotFoundError`` ...).

    Returns:
        The class inheriting from both, or ``kind`` itself for other platforms.
    """
    return _TABLE.get((platform, kind), kind)
