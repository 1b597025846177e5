"""Prolific REST API: one class per resource, endpoint templates as class attributes.

HTTP goes through ``requests`` (a ``Session`` per client: connection reuse, and its exceptions tell a
refused connection from a read timeout, which matters for payments). Every call has a timeout; the token
is read when the client is built, never at import; list calls follow ``_links.next`` to the last page.
HTTP errors become ``ProlificError`` subclasses carrying the status and Prolific's error code.

Reference: https://docs.prolific.com/api-reference (studies, submissions, bonuses, participant groups,
messages). Money: study ``reward`` is in cents; bonus amounts in ``csv_bonuses`` are decimals in the study
currency ("1.50"), which ``BonusPayments.set_up`` formats from cents.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Optional
from urllib.parse import urljoin

import requests
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from crowd.providers import retries
from crowd.providers.prolific import errors
from crowd.providers.prolific.traits import REJECTION_CATEGORIES, ProlificTraits

logger = logging.getLogger(__name__)

DEFAULT_API_URL = "https://api.prolific.com/api/v1/"
COMPLETION_URL = "https://app.prolific.com/submissions/complete"
MIN_REJECTION_MESSAGE = ProlificTraits.min_rejection_chars
IDEMPOTENT_METHODS = frozenset({"GET", "PUT", "PATCH", "DELETE"})
"""Methods retried after a 5xx or a dropped connection (crowdqa's PATCHes set absolute values)."""
STUDY_URL_PARAMS = "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"


def completion_url(code: str) -> str:
    """Return the URL a participant is redirected to when done (``...complete?cc=<code>``)."""
    return f"{COMPLETION_URL}?cc={code}"


def study_url(base_url: str) -> str:
    """Append Prolific's participant/study/session placeholders to the arrival URL."""
    sep = "&" if "?" in base_url else "?"
    return f"{base_url}{sep}{STUDY_URL_PARAMS}"


def validate_rejection(message: str, category: str, submission_id: str = "") -> None:
    """Check a rejection locally, since Prolific refuses short messages and unknown categories.

    Raises:
        ProlificInvalidRequestError: message under 100 characters or unknown category.
    """
    where = f"Submission({submission_id}): " if submission_id else ""
    if len(message.strip()) < MIN_REJECTION_MESSAGE:
        raise errors.ProlificInvalidRequestError(
            f"{where}rejection message must be at least {MIN_REJECTION_MESSAGE} characters, "
            f"got {len(message.strip())}",
            operation="POST submissions/{id}/transition/",
        )
    if category not in REJECTION_CATEGORIES:
        raise errors.ProlificInvalidRequestError(
            f"{where}rejection_category {category!r} is not one of {sorted(REJECTION_CATEGORIES)}",
            operation="POST submissions/{id}/transition/",
        )


def cents_to_amount(cents: int) -> str:
    """Format cents as Prolific's bonus amount ("1.50")."""
    if cents <= 0:
        raise ValueError(f"bonus must be > 0 cents, got {cents}")
    return f"{cents // 100}.{cents % 100:02d}"


@dataclass
class ProlificClient:
    """An authenticated HTTP client for Prolific's API.

    Attributes:
        token: the API token (``PROLIFIC_API_TOKEN``), sent as ``Authorization: Token <token>``.
        base_url: ``PROLIFIC_API_URL`` (default ``https://api.prolific.com/api/v1/``).
        timeout: (connect, read) seconds for every call.
        session: a ``requests.Session`` (injectable for tests).
        retries: further attempts of a call that may be retried (see ``request``).
        max_wait: the longest wait between attempts, in seconds (a longer ``Retry-After`` is cut).
        sleep: how to wait (tests pass a recorder).
    """

    token: str
    base_url: str = DEFAULT_API_URL
    timeout: tuple[float, float] = (10.0, 30.0)
    session: Optional[requests.Session] = None
    retries: int = 8
    max_wait: float = 60.0
    sleep: Callable[[float], None] = field(default=lambda seconds: time.sleep(seconds), repr=False)

    def __post_init__(self) -> None:
        if not self.token:
            raise errors.ProviderConfigError("PROLIFIC_API_TOKEN is empty", platform="prolific")
        if not self.base_url.endswith("/"):
            self.base_url += "/"
        if self.session is None:
            self.session = requests.Session()

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ProlificClient:
        """Build from ``PROLIFIC_API_TOKEN``, ``PROLIFIC_API_URL`` and ``PROLIFIC_RETRIES``."""
        retries = config.get("PROLIFIC_RETRIES")
        return cls(
            token=str(config.get("PROLIFIC_API_TOKEN") or ""),
            base_url=str(config.get("PROLIFIC_API_URL") or DEFAULT_API_URL),
            retries=8 if retries is None else int(retries),
        )

    def request(
        self,
        method: str,
        path: str,
        json: Any = None,
        params: Optional[Mapping[str, Any]] = None,
        idempotent: Optional[bool] = None,
    ) -> Any:
        """Send one request, retrying what is safe to retry, and return the decoded JSON body.

        A 429 is always retried (Prolific did nothing), after its ``Retry-After`` when given, else after
        a jittered exponential backoff. A 5xx or a dropped connection is retried only for a call that
        is safe to repeat: ``idempotent`` (default: GET, PUT, PATCH, DELETE), or a connection never
        made. A POST that creates something (a study, a bulk bonus payment) is never repeated here:
        its caller finds out whether it took effect.

        Args:
            method: HTTP method.
            path: path relative to ``base_url`` ("studies/") or an absolute URL (pagination links).
            json: the JSON body.
            params: query parameters.
            idempotent: the call may be repeated after a 5xx or a lost answer (None: by method).

        Raises:
            ProlificError: a subclass per status, once retries are spent; network failures and
                timeouts are ``ProlificTransientError`` (the request may have been processed).
        """
        safe = method in IDEMPOTENT_METHODS if idempotent is None else idempotent
        operation = f"{method} {path.split('?')[0]}"

        def retryable(exc: BaseException) -> bool:
            if isinstance(exc, errors.RateLimitedError):
                return True
            if isinstance(exc, errors.TransientError):
                return safe or exc.never_sent
            return False

        def log_retry(state: RetryCallState) -> None:
            retries.record("prolific", operation, 1)
            logger.info(
                "Prolific %s: attempt %d failed (%s); retrying",
                operation,
                state.attempt_number,
                state.outcome.exception() if state.outcome else "",
            )

        retrying = Retrying(
            stop=stop_after_attempt(self.retries + 1),
            wait=self._wait,
            retry=retry_if_exception(retryable),
            sleep=self.sleep,
            before_sleep=log_retry,
            reraise=True,
        )
        return retrying(self._send, method, path, json, params)

    def _wait(self, state: RetryCallState) -> float:
        """Seconds before the next attempt: the answer's ``Retry-After``, else jittered backoff."""
        exc = state.outcome.exception() if state.outcome else None
        retry_after = exc.retry_after if isinstance(exc, errors.ProviderError) else None
        if retry_after is not None:
            return min(self.max_wait, retry_after)
        return wait_random_exponential(multiplier=0.5, max=self.max_wait)(state)

    def _send(self, method: str, path: str, json: Any, params: Optional[Mapping[str, Any]]) -> Any:
        """One attempt of ``request``."""
        url = path if path.startswith(("http://", "https://")) else urljoin(self.base_url, path)
        operation = f"{method} {path}"
        assert self.session is not None
        try:
            response = self.session.request(
                method,
                url,
                json=json,
                params=params,
                timeout=self.timeout,
                headers={"Authorization": f"Token {self.token}", "Accept": "application/json"},
            )
        except requests.RequestException as exc:
            error = errors.ProlificTransientError(f"{url}: {exc}", operation=operation)
            # A connection that was never made carried nothing: repeating it is always safe.
            error.never_sent = isinstance(exc, requests.ConnectTimeout) or _refused(exc)
            raise error from exc
        if response.status_code >= 400:
            raise self._error(response, operation)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise errors.ProlificTransientError(
                f"{url}: response is not JSON: {response.text[:200]!r}",
                status=response.status_code,
                operation=operation,
            ) from exc

    @staticmethod
    def _error(response: requests.Response, operation: str) -> errors.ProviderError:
        """Map an HTTP error response to the matching ``ProlificError``."""
        status = response.status_code
        code = ""
        message = response.text[:500]
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict):
            detail = body.get("error", body)
            if isinstance(detail, dict):
                code = str(detail.get("error_code", "") or detail.get("code", ""))
                message = str(detail.get("detail") or detail.get("title") or detail.get("message") or message)
            else:
                message = str(detail)
        if status in (401, 403):
            kind: type[errors.ProviderError] = errors.AuthError
        elif status == 404:
            kind = errors.NotFoundError
        elif status == 409:
            kind = errors.AlreadyDoneError
        elif status == 402:
            kind = errors.InsufficientFundsError
        elif status == 429:
            kind = errors.RateLimitedError
        elif status >= 500:
            kind = errors.TransientError
        else:
            kind = errors.InvalidRequestError
        error = errors.error_for("prolific", kind)(message, code=code, status=status, operation=operation)
        error.retry_after = retry_after_seconds(response.headers.get("Retry-After"))
        return error

    def paginate(self, path: str, params: Optional[Mapping[str, Any]] = None) -> Iterator[dict[str, Any]]:
        """Yield every item of a list endpoint, following ``_links.next.href`` (or ``next``)."""
        next_url: Optional[str] = path
        next_params = params
        while next_url:
            page = self.request("GET", next_url, params=next_params)
            if isinstance(page, list):
                yield from page
                return
            yield from page.get("results", [])
            links = page.get("_links") or {}
            nxt = links.get("next") if isinstance(links, dict) else None
            next_url = nxt.get("href") if isinstance(nxt, dict) else (nxt or page.get("next"))
            next_params = None  # the link carries the query


def retry_after_seconds(value: Optional[str]) -> Optional[float]:
    """Parse a ``Retry-After`` header (seconds or an HTTP date) into seconds from now; None when absent."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _refused(exc: requests.RequestException) -> bool:
    """True when the connection could not be made at all (nothing reached Prolific)."""
    text = str(exc)
    return isinstance(exc, requests.ConnectionError) and (
        "NewConnectionError" in text or "Connection refused" in text
    )


class Workspaces:
    """``/workspaces/``: the workspaces studies are paid from.

    A workspace's currency is on its balance (``GET /workspaces/{id}/balance/``: ``currency_code``,
    amounts in its sub-unit); the workspace itself (``GET /workspaces/{id}/``) names no currency.
    """

    @staticmethod
    def list(client: ProlificClient) -> list[dict[str, Any]]:
        """The workspaces the token's user belongs to."""
        return list(client.request("GET", "workspaces/").get("results") or [])

    @staticmethod
    def balance(client: ProlificClient, workspace_id: str) -> dict[str, Any]:
        return client.request("GET", f"workspaces/{workspace_id}/balance/")


class Studies:
    """``/studies/``: create, publish, pause, stop, add places."""

    list_endpoint = "studies/"
    detail_endpoint = "studies/{id}/"
    transition_endpoint = "studies/{id}/transition/"
    submissions_endpoint = "studies/{id}/submissions/"

    @classmethod
    def create(cls, client: ProlificClient, study: Mapping[str, Any]) -> dict[str, Any]:
        """Create a draft study (UNPUBLISHED); return it. Never repeated after a lost answer here."""
        return client.request("POST", cls.list_endpoint, json=dict(study))

    @classmethod
    def list(cls, client: ProlificClient) -> Iterator[dict[str, Any]]:
        """Yield every study of the researcher (all pages; a short form with ``internal_name``)."""
        return client.paginate(cls.list_endpoint)

    @classmethod
    def retrieve(cls, client: ProlificClient, study_id: str) -> dict[str, Any]:
        """Return one study."""
        return client.request("GET", cls.detail_endpoint.format(id=study_id))

    @classmethod
    def update(cls, client: ProlificClient, study_id: str, fields: Mapping[str, Any]) -> dict[str, Any]:
        """PATCH a study (``total_available_places`` to add places)."""
        return client.request("PATCH", cls.detail_endpoint.format(id=study_id), json=dict(fields))

    @classmethod
    def transition(cls, client: ProlificClient, study_id: str, action: str) -> dict[str, Any]:
        """Move a study: ``PUBLISH``, ``PAUSE``, ``START`` (resume) or ``STOP``.

        Repeated after a 5xx or a lost answer: a repeat of a transition already made is refused, and
        the provider reads the study's status then.
        """
        return client.request(
            "POST", cls.transition_endpoint.format(id=study_id), json={"action": action}, idempotent=True
        )

    @classmethod
    def list_submissions(cls, client: ProlificClient, study_id: str) -> Iterator[dict[str, Any]]:
        """Yield every submission of a study (all pages)."""
        return client.paginate(cls.submissions_endpoint.format(id=study_id))


class Submissions:
    """``/submissions/``: approve, bulk approve, reject."""

    list_endpoint = "submissions/"
    detail_endpoint = "submissions/{id}/"
    transition_endpoint = "submissions/{id}/transition/"
    bulk_approve_endpoint = "submissions/bulk-approve/"

    @classmethod
    def page(cls, client: ProlificClient, study_id: str, page: int, page_size: int) -> dict[str, Any]:
        """One page of a study's submissions, earliest start first (``GET /submissions/?study=``).

        Ordered by start time, the list only grows at its end (a submission starts once), so a page
        number and the id that opens the page locate a place in it across runs.
        """
        params = {"study": study_id, "ordering": "started_at", "page": page, "page_size": page_size}
        return client.request("GET", cls.list_endpoint, params=params)

    @classmethod
    def retrieve(cls, client: ProlificClient, submission_id: str) -> dict[str, Any]:
        """Return one submission."""
        return client.request("GET", cls.detail_endpoint.format(id=submission_id))

    @classmethod
    def approve(cls, client: ProlificClient, submission_id: str) -> dict[str, Any]:
        """Approve a submission (pays its reward)."""
        return client.request(
            "POST",
            cls.transition_endpoint.format(id=submission_id),
            json={"action": "APPROVE"},
            idempotent=True,
        )

    @classmethod
    def reject(
        cls, client: ProlificClient, submission_id: str, message: str, category: str
    ) -> dict[str, Any]:
        """Reject a submission (``ProlificProvider.reject`` checks message and category first)."""
        body = {"action": "REJECT", "message": message, "rejection_category": category}
        return client.request(
            "POST", cls.transition_endpoint.format(id=submission_id), json=body, idempotent=True
        )

    @classmethod
    def bulk_approve(cls, client: ProlificClient, study_id: str, submission_ids: Sequence[str]) -> None:
        """Approve many submissions of one study in one call."""
        body = {"study_id": study_id, "submission_ids": list(submission_ids)}
        client.request("POST", cls.bulk_approve_endpoint, json=body, idempotent=True)


class BonusPayments:
    """Bonuses: set up (``/submissions/bonus-payments/``), then pay (``/bulk-bonus-payments/{id}/pay/``).

    The pay call is NOT idempotent on Prolific's side: never call it twice for one bulk id; the
    provider guards it with a ``PaymentStore``.
    """

    set_up_endpoint = "submissions/bonus-payments/"
    pay_endpoint = "bulk-bonus-payments/{id}/pay/"

    @classmethod
    def set_up(
        cls, client: ProlificClient, study_id: str, amounts_cents: Mapping[str, int]
    ) -> dict[str, Any]:
        """Create a bulk bonus for participant (or submission) ids and return it; nothing is paid yet."""
        csv = "".join(f"{pid},{cents_to_amount(c)}\n" for pid, c in amounts_cents.items())
        return client.request("POST", cls.set_up_endpoint, json={"study_id": study_id, "csv_bonuses": csv})

    @classmethod
    def pay(cls, client: ProlificClient, bulk_id: str) -> None:
        """Pay a bulk bonus (asynchronous on Prolific's side; NOT idempotent)."""
        client.request("POST", cls.pay_endpoint.format(id=bulk_id))


class ParticipantGroups:
    """``/participant-groups/``: allow-lists (screened workers) and block-lists."""

    list_endpoint = "participant-groups/"
    participants_endpoint = "participant-groups/{id}/participants/"

    @classmethod
    def create(
        cls, client: ProlificClient, name: str, workspace_id: str = "", description: str = ""
    ) -> dict[str, Any]:
        """Create a participant group; return it (``id``)."""
        body: dict[str, Any] = {"name": name}
        if workspace_id:
            body["workspace_id"] = workspace_id
        if description:
            body["description"] = description
        return client.request("POST", cls.list_endpoint, json=body)

    @classmethod
    def add_participants(cls, client: ProlificClient, group_id: str, participant_ids: Sequence[str]) -> None:
        """Add participants to a group (adding a member again is harmless)."""
        client.request(
            "POST",
            cls.participants_endpoint.format(id=group_id),
            json={"participant_ids": list(participant_ids)},
            idempotent=True,
        )

    @classmethod
    def remove_participants(
        cls, client: ProlificClient, group_id: str, participant_ids: Sequence[str]
    ) -> None:
        """Remove participants from a group."""
        client.request(
            "DELETE",
            cls.participants_endpoint.format(id=group_id),
            json={"participant_ids": list(participant_ids)},
        )

    @classmethod
    def list_participants(cls, client: ProlificClient, group_id: str) -> Iterator[dict[str, Any]]:
        """Yield every member of a group (all pages)."""
        return client.paginate(cls.participants_endpoint.format(id=group_id))


class Messages:
    """``/messages/``: write to a participant."""

    list_endpoint = "messages/"

    @classmethod
    def send(cls, client: ProlificClient, recipient_id: str, body: str, study_id: str) -> None:
        """Send one message to a participant about a study."""
        client.request(
            "POST", cls.list_endpoint, json={"recipient_id": recipient_id, "body": body, "study_id": study_id}
        )


def allowlist_filter(group_ids: Sequence[str]) -> dict[str, Any]:
    """Study filter admitting only members of the groups (screened workers)."""
    return {"filter_id": "participant_group_allowlist", "selected_values": list(group_ids)}


def blocklist_filter(group_ids: Sequence[str]) -> dict[str, Any]:
    """Study filter keeping out members of the groups (blocked, or did an earlier batch)."""
    return {"filter_id": "participant_group_blocklist", "selected_values": list(group_ids)}


def approval_rate_filter(min_percent: int) -> dict[str, Any]:
    """Study filter on the participant's approval rate."""
    return {"filter_id": "approval_rate", "selected_range": {"lower": int(min_percent), "upper": 100}}
