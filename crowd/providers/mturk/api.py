"""One small typed function per boto3 ``mturk`` operation, the client passed in first.

Why: each remote call is easy to stub (botocore ``Stubber``), to read and to map to crowdqa's errors;
``call`` turns botocore's ``ClientError`` into the ``errors`` hierarchy keeping MTurk's code. Every list
operation is paginated to the end (compare Mephisto's ``is_worker_blocked`` that read only 100 blocks).

Money is passed in integer cents and formatted as MTurk's dollar strings here. Client construction
(``make_client``) is the only place that knows sandbox versus live.
"""

from __future__ import annotations

import logging
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Optional
from xml.sax.saxutils import escape

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from crowd.providers import retries
from crowd.providers.mturk import errors

logger = logging.getLogger(__name__)

EXTERNAL_QUESTION_SCHEMA = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd"
)
# A date in the past: UpdateExpirationForHIT with it expires the HIT at once (documented AWS behaviour).
EXPIRE_NOW = datetime(2015, 1, 1, tzinfo=UTC)
NOTIFY_BATCH = 100
TOKEN_MAX = 64


@dataclass(frozen=True)
class MTurkEnvironment:
    """Where a requester's calls go and where workers see the HITs."""

    name: str
    endpoint_url: str
    worker_site: str
    requester_site: str


SANDBOX = MTurkEnvironment(
    name="sandbox",
    endpoint_url="https://mturk-requester-sandbox.us-east-1.amazonaws.com",
    worker_site="https://workersandbox.mturk.com",
    requester_site="https://requestersandbox.mturk.com",
)
LIVE = MTurkEnvironment(
    name="live",
    endpoint_url="https://mturk-requester.us-east-1.amazonaws.com",
    worker_site="https://worker.mturk.com",
    requester_site="https://requester.mturk.com",
)

_STATE_RE = re.compile(
    r"status of:?\s*(\w+)|is not in a valid state|already been (?:approved|rejected)", re.I
)
_NOT_FOUND_RE = re.compile(r"does not exist|not found|cannot be found", re.I)
# A replayed SendBonus token: botocore's service model lists no TurkErrorCode for it (RequestError
# carries only Message and TurkErrorCode, and the documented codes name HITs and qualifications), so
# the wording MTurk answers with is matched; a code naming a repeat (_TURK_ALREADY_RE) counts too.
_TOKEN_RE = re.compile(r"idempotency token .* has already been processed", re.I)
_FUNDS_RE = re.compile(r"insufficient funds|not have enough funds", re.I)
# TurkErrorCodes (the ``TurkErrorCode`` member of MTurk's RequestError) naming a repeated request: a
# CreateHIT whose UniqueRequestToken was used answers ``AWS.MechanicalTurk.HitAlreadyExists`` with the
# existing HIT's id in its message (botocore's service model, CreateHITWithHITType).
_TURK_ALREADY_RE = re.compile(r"AlreadyExists|Duplicate|AlreadyProcessed", re.I)
_TURK_NOT_FOUND_RE = re.compile(r"DoesNotExist|NotFound", re.I)
_TURK_FUNDS_RE = re.compile(r"InsufficientFunds", re.I)
HIT_ALREADY_EXISTS = "AWS.MechanicalTurk.HitAlreadyExists"
_ID_RE = re.compile(r"\b[A-Z0-9]{20,64}\b")


def environment_for(sandbox: bool) -> MTurkEnvironment:
    """Return SANDBOX or LIVE (the one place that turns the MTURK_SANDBOX flag into endpoints)."""
    return SANDBOX if sandbox else LIVE


def make_client(
    sandbox: bool = True,
    endpoint_url: Optional[str] = None,
    region_name: str = "us-east-1",
    connect_timeout: float = 10.0,
    read_timeout: float = 30.0,
    max_attempts: int = 10,
    retry_mode: str = "adaptive",
    **session_kwargs: Any,
) -> Any:
    """Build a boto3 ``mturk`` client for the sandbox (default) or live requester API.

    ``AWS_ENDPOINT_URL_MTURK`` wins over both (boto3 reads it itself), so the same code can talk to a
    local fake server; an explicit ``endpoint_url`` wins over everything.

    Args:
        sandbox: True for the requester sandbox (``MTURK_SANDBOX``, default true).
        endpoint_url: explicit endpoint (tests).
        region_name: MTurk only exists in us-east-1.
        connect_timeout, read_timeout: seconds; no call waits forever.
        max_attempts: attempts per call, the first included. botocore retries throttling, 5xx and
            connection errors (a reply lost after MTurk applied the call too): every write crowdqa sends
            is safe to repeat (CreateHIT and SendBonus carry a UniqueRequestToken; a repeated approval or
            rejection is recognised by the assignment's status).
        retry_mode: ``adaptive`` (default) also slows the client down while MTurk throttles it (a
            token bucket refilled at the rate MTurk accepts); ``standard`` only backs off.
        **session_kwargs: passed to ``boto3.session.Session`` (profile_name, credentials).

    Returns:
        A botocore client.
    """
    if endpoint_url is None and not os.environ.get("AWS_ENDPOINT_URL_MTURK"):
        endpoint_url = environment_for(sandbox).endpoint_url
    config = Config(
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        retries={"total_max_attempts": max_attempts, "mode": retry_mode},
    )
    session = boto3.session.Session(**session_kwargs)
    return session.client("mturk", region_name=region_name, endpoint_url=endpoint_url, config=config)


def map_client_error(exc: ClientError, operation: str) -> errors.ProviderError:
    """Turn a botocore ``ClientError`` into the matching ``MTurkError`` subclass.

    MTurk answers almost everything with ``RequestError``; its ``TurkErrorCode`` and, where that is
    generic, the message tell the kind apart. The error's ``code`` is the TurkErrorCode when MTurk gave
    one, else the ``__type``.

    Args:
        exc: the botocore error.
        operation: the MTurk operation name.

    Returns:
        The error to raise (not raised here).
    """
    err = exc.response.get("Error", {})
    code = str(err.get("Code", ""))
    turk_code = str(exc.response.get("TurkErrorCode") or err.get("TurkErrorCode") or "")
    message = str(err.get("Message", "")) or str(exc)
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if code in ("ThrottlingException", "Throttling", "TooManyRequestsException"):
        kind: type[errors.ProviderError] = errors.RateLimitedError
    elif code == "ServiceFault" or (isinstance(status, int) and status >= 500):
        kind = errors.TransientError
    elif code in (
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "AccessDeniedException",
        "AccessDenied",
    ):
        kind = errors.AuthError
    elif _TURK_FUNDS_RE.search(turk_code) or _FUNDS_RE.search(message):
        kind = errors.InsufficientFundsError
    elif _TURK_ALREADY_RE.search(turk_code) or _TOKEN_RE.search(message) or _STATE_RE.search(message):
        kind = errors.AlreadyDoneError
    elif _TURK_NOT_FOUND_RE.search(turk_code) or _NOT_FOUND_RE.search(message):
        kind = errors.NotFoundError
    else:
        kind = errors.InvalidRequestError
    shown = turk_code if turk_code and turk_code != code else code
    return errors.error_for("mturk", kind)(message, code=shown, status=status, operation=operation)


def is_repeated_request(exc: errors.ProviderError) -> bool:
    """True when MTurk refused a call because its UniqueRequestToken was already used (code or message)."""
    return bool(_TURK_ALREADY_RE.search(exc.code) or _TOKEN_RE.search(exc.message))


def ids_in_message(message: str) -> list[str]:
    """Platform ids quoted in an error message (the existing HIT of ``HitAlreadyExists``), in order."""
    return _ID_RE.findall(message)


def call(client: Any, operation: str, **params: Any) -> dict[str, Any]:
    """Call one MTurk operation by its boto3 method name, mapping errors.

    Args:
        client: boto3 mturk client.
        operation: snake_case method name (``send_bonus``).
        **params: the operation's parameters.

    Returns:
        The response dict.

    Raises:
        MTurkError: a subclass per kind of failure; network failures are ``MTurkTransientError``.
    """
    method: Callable[..., dict[str, Any]] = getattr(client, operation)
    try:
        response = method(**params)
    except ClientError as exc:
        retries.record("mturk", operation, exc.response.get("ResponseMetadata", {}).get("RetryAttempts", 0))
        raise map_client_error(exc, operation) from exc
    except NoCredentialsError as exc:
        raise errors.MTurkAuthError(str(exc), operation=operation) from exc
    except BotoCoreError as exc:  # connection errors, read timeouts
        raise errors.MTurkTransientError(str(exc), operation=operation) from exc
    retries.record("mturk", operation, response.get("ResponseMetadata", {}).get("RetryAttempts", 0))
    return response


def _paginate(
    client: Any, operation: str, key: str, page_size: int, **params: Any
) -> Iterator[dict[str, Any]]:
    """Yield every item of a NextToken-paginated operation."""
    token: Optional[str] = None
    while True:
        page_params = dict(params, MaxResults=page_size)
        if token:
            page_params["NextToken"] = token
        response = call(client, operation, **page_params)
        yield from response.get(key, [])
        token = response.get("NextToken")
        if not token:
            return


def cents_to_dollars(cents: int) -> str:
    """Format integer cents as MTurk's dollar string ("0.50")."""
    if cents < 0:
        raise ValueError(f"amount must be >= 0 cents, got {cents}")
    return f"{cents // 100}.{cents % 100:02d}"


def dollars_to_cents(amount: str) -> int:
    """Parse MTurk's dollar string ("1.25") into integer cents."""
    whole, _, frac = amount.strip().partition(".")
    return int(whole or "0") * 100 + int((frac + "00")[:2])


def external_question(url: str, frame_height: int = 0) -> str:
    """Build the ExternalQuestion XML that shows ``url`` in MTurk's iframe.

    Args:
        url: the HIT page (under PUBLIC_BASE_URL; MTurk requires https in production).
        frame_height: iframe height in pixels; 0 lets the page use the whole window.

    Returns:
        The XML string for the ``Question`` parameter.

    Raises:
        ValueError: the URL is not http(s).
    """
    if not url.startswith(("https://", "http://")):
        raise ValueError(f"ExternalURL must be an https URL, got {url!r}")
    if url.startswith("http://"):
        logger.warning("ExternalURL %s is not https: MTurk will refuse it outside tests", url)
    return (
        f'<ExternalQuestion xmlns="{EXTERNAL_QUESTION_SCHEMA}">'
        f"<ExternalURL>{escape(url)}</ExternalURL>"
        f"<FrameHeight>{int(frame_height)}</FrameHeight>"
        "</ExternalQuestion>"
    )


def parse_answer_xml(answer: str) -> dict[str, tuple[str, ...]]:
    """Parse MTurk's QuestionFormAnswers XML into field -> values (repeated fields keep every value).

    Args:
        answer: the ``Answer`` string of an assignment ("" when absent).

    Returns:
        A dict of field name to a tuple of values; empty when there is no answer.
    """
    if not answer.strip():
        return {}
    root = ET.fromstring(answer)
    result: dict[str, list[str]] = {}
    for node in root.iter():
        if not node.tag.endswith("Answer") or node.tag.endswith("QuestionFormAnswers"):
            continue
        ident = text = None
        for child in node:
            tag = child.tag.rsplit("}", 1)[-1]
            if tag == "QuestionIdentifier":
                ident = child.text or ""
            elif tag in ("FreeText", "SelectionIdentifier"):
                text = child.text or ""
        if ident is not None:
            result.setdefault(ident, []).append(text or "")
    return {k: tuple(v) for k, v in result.items()}


# --- HIT types and HITs ------------------------------------------------------------------------------


def create_hit_type(
    client: Any,
    title: str,
    description: str,
    reward_cents: int,
    assignment_duration_seconds: int,
    auto_approval_delay_seconds: int,
    keywords: Sequence[str] = (),
    qualification_requirements: Sequence[dict[str, Any]] = (),
) -> str:
    """Create (or reuse: MTurk returns the same id for identical properties) a HIT type; return its id."""
    params: dict[str, Any] = {
        "Title": title,
        "Description": description,
        "Reward": cents_to_dollars(reward_cents),
        "AssignmentDurationInSeconds": int(assignment_duration_seconds),
        "AutoApprovalDelayInSeconds": int(auto_approval_delay_seconds),
    }
    if keywords:
        params["Keywords"] = ",".join(keywords)
    if qualification_requirements:
        params["QualificationRequirements"] = list(qualification_requirements)
    return call(client, "create_hit_type", **params)["HITTypeId"]


def create_hit_with_hit_type(
    client: Any,
    hit_type_id: str,
    question_xml: str,
    max_assignments: int,
    lifetime_seconds: int,
    requester_annotation: str = "",
    unique_request_token: str = "",
) -> dict[str, Any]:
    """Create one HIT of a HIT type; the token makes a retried call fail instead of duplicating."""
    params: dict[str, Any] = {
        "HITTypeId": hit_type_id,
        "MaxAssignments": int(max_assignments),
        "LifetimeInSeconds": int(lifetime_seconds),
        "Question": question_xml,
    }
    if requester_annotation:
        params["RequesterAnnotation"] = requester_annotation[:255]
    if unique_request_token:
        params["UniqueRequestToken"] = unique_request_token[:TOKEN_MAX]
    return call(client, "create_hit_with_hit_type", **params)["HIT"]


def get_hit(client: Any, hit_id: str) -> dict[str, Any]:
    """Return one HIT."""
    return call(client, "get_hit", HITId=hit_id)["HIT"]


def list_hits(client: Any, page_size: int = 100) -> Iterator[dict[str, Any]]:
    """Yield every HIT of the requester (all pages)."""
    return _paginate(client, "list_hits", "HITs", page_size)


def update_expiration_for_hit(client: Any, hit_id: str, expire_at: datetime = EXPIRE_NOW) -> None:
    """Change a HIT's expiry; the default (a past date) expires it now."""
    call(client, "update_expiration_for_hit", HITId=hit_id, ExpireAt=expire_at)


def delete_hit(client: Any, hit_id: str) -> None:
    """Delete a HIT (only once it is expired and every assignment is approved or rejected)."""
    call(client, "delete_hit", HITId=hit_id)


def create_additional_assignments_for_hit(
    client: Any, hit_id: str, count: int, unique_request_token: str
) -> None:
    """Add assignments to a HIT; the token makes a retry safe for 24 hours."""
    call(
        client,
        "create_additional_assignments_for_hit",
        HITId=hit_id,
        NumberOfAdditionalAssignments=int(count),
        UniqueRequestToken=unique_request_token[:TOKEN_MAX],
    )


# --- assignments -------------------------------------------------------------------------------------


def list_assignments_for_hit(
    client: Any, hit_id: str, statuses: Sequence[str] = (), page_size: int = 100
) -> Iterator[dict[str, Any]]:
    """Yield every assignment of a HIT (all pages), optionally only some statuses."""
    params: dict[str, Any] = {"HITId": hit_id}
    if statuses:
        params["AssignmentStatuses"] = list(statuses)
    return _paginate(client, "list_assignments_for_hit", "Assignments", page_size, **params)


def get_assignment(client: Any, assignment_id: str) -> dict[str, Any]:
    """Return one assignment (its ``AssignmentStatus`` tells whether a retry already happened)."""
    return call(client, "get_assignment", AssignmentId=assignment_id)["Assignment"]


def approve_assignment(
    client: Any, assignment_id: str, feedback: str = "", override_rejection: bool = False
) -> None:
    """Approve an assignment (pays its reward)."""
    params: dict[str, Any] = {"AssignmentId": assignment_id}
    if feedback:
        params["RequesterFeedback"] = feedback[:1024]
    if override_rejection:
        params["OverrideRejection"] = True
    call(client, "approve_assignment", **params)


def reject_assignment(client: Any, assignment_id: str, feedback: str) -> None:
    """Reject an assignment with the feedback the worker reads."""
    call(client, "reject_assignment", AssignmentId=assignment_id, RequesterFeedback=feedback[:1024])


def send_bonus(
    client: Any, worker_id: str, assignment_id: str, amount_cents: int, reason: str, unique_request_token: str
) -> bool:
    """Pay a bonus; return True if paid now, False if MTurk says this token was already processed.

    The ``UniqueRequestToken`` makes a retry within 24 hours a no-op; the "already processed" answer
    is the one ``RequestError`` treated as success.
    """
    try:
        call(
            client,
            "send_bonus",
            WorkerId=worker_id,
            BonusAmount=cents_to_dollars(amount_cents),
            AssignmentId=assignment_id,
            Reason=reason,
            UniqueRequestToken=unique_request_token[:TOKEN_MAX],
        )
    except errors.MTurkAlreadyDoneError as exc:
        if is_repeated_request(exc):
            logger.info(
                "Assignment(%s) bonus token %s already processed", assignment_id, unique_request_token
            )
            return False
        raise
    return True


def list_bonus_payments(client: Any, assignment_id: str, page_size: int = 100) -> Iterator[dict[str, Any]]:
    """Yield every bonus paid for an assignment (all pages)."""
    return _paginate(client, "list_bonus_payments", "BonusPayments", page_size, AssignmentId=assignment_id)


# --- workers and qualifications ----------------------------------------------------------------------


def create_worker_block(client: Any, worker_id: str, reason: str) -> None:
    """Block a worker from all of this requester's HITs (counts against the worker: use sparingly)."""
    call(client, "create_worker_block", WorkerId=worker_id, Reason=reason)


def delete_worker_block(client: Any, worker_id: str, reason: str = "") -> None:
    """Lift a worker block."""
    params: dict[str, Any] = {"WorkerId": worker_id}
    if reason:
        params["Reason"] = reason
    call(client, "delete_worker_block", **params)


def list_worker_blocks(client: Any, page_size: int = 100) -> Iterator[dict[str, Any]]:
    """Yield every worker block (all pages, not just the first 100)."""
    return _paginate(client, "list_worker_blocks", "WorkerBlocks", page_size)


def create_qualification_type(client: Any, name: str, description: str, keywords: Sequence[str] = ()) -> str:
    """Create an active custom qualification type; return its id."""
    params: dict[str, Any] = {"Name": name, "Description": description, "QualificationTypeStatus": "Active"}
    if keywords:
        params["Keywords"] = ",".join(keywords)
    return call(client, "create_qualification_type", **params)["QualificationType"]["QualificationTypeId"]


def find_qualification_type(client: Any, name: str, page_size: int = 100) -> Optional[str]:
    """The id of the requester's own qualification type called exactly ``name`` (all pages), or None."""
    for qual in _paginate(
        client,
        "list_qualification_types",
        "QualificationTypes",
        page_size,
        Query=name,
        MustBeRequestable=False,
        MustBeOwnedByCaller=True,
    ):
        if qual.get("Name") == name:
            return str(qual["QualificationTypeId"])
    return None


def associate_qualification_with_worker(
    client: Any, qualification_type_id: str, worker_id: str, value: int = 1, send_notification: bool = False
) -> None:
    """Grant a qualification to a worker (granting again just sets the value)."""
    call(
        client,
        "associate_qualification_with_worker",
        QualificationTypeId=qualification_type_id,
        WorkerId=worker_id,
        IntegerValue=int(value),
        SendNotification=send_notification,
    )


def notify_workers(
    client: Any, worker_ids: Sequence[str], subject: str, message: str
) -> list[dict[str, Any]]:
    """E-mail workers, 100 ids per call (MTurk's limit); return MTurk's per-worker failures."""
    failures: list[dict[str, Any]] = []
    for start in range(0, len(worker_ids), NOTIFY_BATCH):
        batch = list(worker_ids[start : start + NOTIFY_BATCH])
        response = call(
            client, "notify_workers", Subject=subject[:200], MessageText=message[:4096], WorkerIds=batch
        )
        failures.extend(response.get("NotifyWorkersFailureStatuses", []))
    for failure in failures:
        logger.warning(
            "notify_workers failed for Worker(%s): %s",
            failure.get("WorkerId"),
            failure.get("NotifyWorkersFailureMessage"),
        )
    return failures


def get_account_balance(client: Any) -> int:
    """Return the available balance in cents."""
    return dollars_to_cents(call(client, "get_account_balance")["AvailableBalance"])
