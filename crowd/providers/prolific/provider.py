"""The Prolific ``CrowdProvider``: one study per batch, participant groups as allow and block lists.

Participants arrive at ``external_url`` with ``PROLIFIC_PID``, ``STUDY_ID`` and ``SESSION_ID`` and are sent
back to ``completion_url(code)``. The one dangerous call is paying a bulk bonus, which Prolific does not
deduplicate: ``bonus`` walks a write-ahead record in the caller's ``PaymentStore``
(CREATED -> PAY_REQUESTED -> PAID) and never sends ``pay`` for a key whose record already says
PAY_REQUESTED; such a payment is reported ``UNCONFIRMED`` until someone resolves it
(``resolve_unconfirmed``).
"""

from __future__ import annotations

import logging
import math
import secrets
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Optional

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from crowd.providers.base import (
    CrowdProvider,
    PaymentRecord,
    PaymentResult,
    PaymentState,
    PaymentStatus,
    PaymentStore,
    PlatformSubmission,
    PublishedBatch,
    PublishedUnit,
    PublishListener,
    PublishRequest,
    PublishUnit,
    ReviewResult,
    SubmissionPage,
    SubmissionStatus,
    advance_payment,
    already_paid,
)
from crowd.providers.prolific import api as prolific_api
from crowd.providers.prolific import errors
from crowd.providers.prolific import pages as prolific_pages
from crowd.providers.prolific.api import ProlificClient
from crowd.providers.prolific.traits import ProlificTraits

logger = logging.getLogger(__name__)

STATUS_FROM_PROLIFIC = {
    "RESERVED": SubmissionStatus.ACTIVE,
    "ACTIVE": SubmissionStatus.ACTIVE,
    "AWAITING REVIEW": SubmissionStatus.SUBMITTED,
    "APPROVED": SubmissionStatus.APPROVED,
    "REJECTED": SubmissionStatus.REJECTED,
    "RETURNED": SubmissionStatus.RETURNED,
    "TIMED-OUT": SubmissionStatus.TIMED_OUT,
    "PROCESSING": SubmissionStatus.PROCESSING,
}


def _parse_time(value: Any) -> Optional[datetime]:
    """Parse Prolific's ISO timestamps ("2024-01-01T10:00:00.000Z"); None when absent."""
    if not value:
        return None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def to_submission(item: Mapping[str, Any], study_id: str = "") -> PlatformSubmission:
    """Convert a Prolific submission dict into a ``PlatformSubmission``."""
    raw = str(item.get("status", ""))
    return PlatformSubmission(
        platform_assignment_id=str(item["id"]),
        worker_id=str(item.get("participant_id") or item.get("participant") or ""),
        status=STATUS_FROM_PROLIFIC.get(raw, SubmissionStatus.ACTIVE),
        platform_unit_id=str(item.get("study_id") or study_id),
        submitted_at=_parse_time(item.get("completed_at")),
        accepted_at=_parse_time(item.get("started_at")),
        answers=None,
        platform_status=raw,
        completion_code=str(item.get("study_code") or ""),
    )


def internal_name(batch_ref: str) -> str:
    """The study's internal name: how a later attempt finds the study of a batch."""
    return f"crowdqa:{batch_ref}"


def _completion_code(study: Mapping[str, Any]) -> str:
    """The COMPLETED code of an existing study (kept when the study is adopted)."""
    for entry in study.get("completion_codes") or ():
        if entry.get("code_type") == "COMPLETED" and entry.get("code"):
            return str(entry["code"])
    return ""


def resolve_unconfirmed(payments: PaymentStore, key: str, paid: bool) -> PaymentRecord:
    """Settle an UNCONFIRMED payment after a person checked Prolific's dashboard.

    Args:
        payments: the store.
        key: the idempotency key.
        paid: True if Prolific shows the bonus paid (record becomes PAID); False to allow one more
            pay attempt (record goes back to CREATED).

    Returns:
        The updated record.

    Raises:
        KeyError: no record for ``key``.
    """
    record = payments.get(key)
    if record is None:
        raise KeyError(f"no payment record for idempotency key {key!r}")
    return advance_payment(payments, record, PaymentState.PAID if paid else PaymentState.CREATED)


class ProlificProvider(ProlificTraits, CrowdProvider):
    """Prolific through its REST API."""

    def __init__(
        self,
        client: ProlificClient,
        workspace_id: str = "",
        block_group_id: str = "",
        device_compatibility: Sequence[str] = ("desktop",),
    ) -> None:
        """Wrap a ``ProlificClient``.

        Args:
            client: the HTTP client (token and base URL).
            workspace_id: workspace for new participant groups (``PROLIFIC_WORKSPACE_ID``).
            block_group_id: participant group used as crowdqa's block list (``PROLIFIC_BLOCK_GROUP_ID``);
                every study excludes it.
            device_compatibility: study devices (the syllabus HIT needs a desktop).
        """
        self.client = client
        self.workspace_id = workspace_id
        self.block_group_id = block_group_id
        self.device_compatibility = tuple(device_compatibility)
        self.sandbox = False  # Prolific has no sandbox; test against the fake server

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ProlificProvider:
        """Build from ``PROLIFIC_API_TOKEN``, ``PROLIFIC_API_URL`` and the optional group settings."""
        return cls(
            ProlificClient.from_config(config),
            workspace_id=str(config.get("PROLIFIC_WORKSPACE_ID") or ""),
            block_group_id=str(config.get("PROLIFIC_BLOCK_GROUP_ID") or ""),
        )

    # --- batch ---------------------------------------------------------------------------------------

    def study_body(self, request: PublishRequest, completion_code: str) -> dict[str, Any]:
        """Build the study creation body for a request."""
        filters: list[dict[str, Any]] = []
        if request.require_qualifications:
            filters.append(prolific_api.allowlist_filter(request.require_qualifications))
        excluded = list(request.exclude_qualifications) + (
            [self.block_group_id] if self.block_group_id else []
        )
        if excluded:
            filters.append(prolific_api.blocklist_filter(excluded))
        if request.min_approval_rate is not None:
            filters.append(prolific_api.approval_rate_filter(request.min_approval_rate))
        filters.extend(request.extra.get("prolific_filters", []))  # type: ignore[arg-type]
        return {
            "name": request.title,
            "internal_name": internal_name(request.batch_ref),
            "description": request.description,
            "external_study_url": prolific_api.study_url(request.external_url),
            "prolific_id_option": "url_parameters",
            "completion_codes": [
                {
                    "code": completion_code,
                    "code_type": "COMPLETED",
                    "actions": [{"action": "MANUALLY_REVIEW"}],
                }
            ],
            "total_available_places": request.assignments * len(request.effective_units()),
            "estimated_completion_time": max(1, math.ceil(request.duration_seconds / 60)),
            "reward": request.reward_cents,
            "device_compatibility": list(self.device_compatibility),
            "filters": filters,
        }

    def publish(self, request: PublishRequest, listener: Optional[PublishListener] = None) -> PublishedBatch:
        """Create the study (or adopt the one an earlier attempt made) and publish it.

        Prolific does not deduplicate study creation, so the study's id is handed to ``listener`` (which
        records it) before any further call, and a resumed publish (``request.resume``) first looks for
        the study: by the recorded id, else by its internal name ``crowdqa:<batch>``. A creation whose
        answer was lost is followed by the same look-up before it is ever sent again.
        """
        listener = listener or PublishListener()
        code = request.completion_code or secrets.token_hex(4).upper()
        study = self.find_study(request) if request.resume else None
        if study is None:
            study = self._create_study(request, code)
        study_id = str(study["id"])
        code = _completion_code(study) or code
        listener.platform_batch(study_id, code)
        if study.get("status") == "UNPUBLISHED":
            self._publish_study(study_id)
        units = tuple(PublishedUnit(u.local_ref, study_id) for u in request.effective_units())
        for unit in units:
            listener.unit(unit, adopted=request.resume)
        logger.info("Batch(%s) published as Prolific Study(%s)", request.batch_ref, study_id)
        return PublishedBatch(
            provider=self.name,
            batch_ref=request.batch_ref,
            platform_batch_id=study_id,
            units=units,
            sandbox=False,
            completion_code=code,
            preview_url=f"https://app.prolific.com/researcher/studies/{study_id}",
        )

    def find_study(self, request: PublishRequest) -> Optional[dict[str, Any]]:
        """The study an earlier attempt created for the batch: by recorded id, else by internal name."""
        if request.platform_batch_id:
            try:
                return prolific_api.Studies.retrieve(self.client, request.platform_batch_id)
            except errors.ProlificNotFoundError:
                logger.warning(
                    "Study(%s) recorded for Batch(%s) is gone", request.platform_batch_id, request.batch_ref
                )
        name = internal_name(request.batch_ref)
        for item in prolific_api.Studies.list(self.client):
            if item.get("internal_name") == name and item.get("status") != "DELETED":
                logger.warning(
                    "Batch(%s): adopting Study(%s) an earlier attempt created", request.batch_ref, item["id"]
                )
                return prolific_api.Studies.retrieve(self.client, str(item["id"]))
        return None

    def _create_study(self, request: PublishRequest, code: str) -> dict[str, Any]:
        """Create the study; after a lost answer, look for it before creating it again (bounded)."""
        body = self.study_body(request, code)
        for attempt in Retrying(
            stop=stop_after_attempt(4),
            wait=wait_random_exponential(multiplier=0.5, max=10),
            retry=retry_if_exception_type(errors.ProlificTransientError),
            sleep=self.client.sleep,
            reraise=True,
        ):
            with attempt:
                if attempt.retry_state.attempt_number > 1:
                    found = self.find_study(request)
                    if found is not None:
                        return found
                return prolific_api.Studies.create(self.client, body)
        raise AssertionError("unreachable: Retrying reraises")  # pragma: no cover

    def _publish_study(self, study_id: str) -> None:
        """PUBLISH the study; a repeat after a lost answer finds it already active."""
        try:
            prolific_api.Studies.transition(self.client, study_id, "PUBLISH")
        except (errors.ProlificInvalidRequestError, errors.ProlificAlreadyDoneError):
            status = prolific_api.Studies.retrieve(self.client, study_id).get("status")
            if status == "UNPUBLISHED":
                raise
            logger.info("Study(%s) was already published (%s)", study_id, status)

    def add_units(
        self, batch: PublishedBatch, request: PublishRequest, units: Sequence[PublishUnit]
    ) -> tuple[PublishedUnit, ...]:
        """Give the study the places of its new units: ``assignments`` places per unit it has in all.

        The study's ``total_available_places`` is raised to an absolute target computed from the units
        (never incremented), so a call repeated after a lost answer, or for units already counted, adds
        nothing; places added by hand beyond the target are kept.
        """
        study_id = batch.platform_batch_id
        refs = {u.local_ref for u in batch.units} | {u.local_ref for u in units}
        target = request.assignments * len(refs)
        study = prolific_api.Studies.retrieve(self.client, study_id)
        current = int(study.get("total_available_places", 0))
        if current < target:
            prolific_api.Studies.update(self.client, study_id, {"total_available_places": target})
            logger.info("Study(%s) places %d -> %d for %d unit(s)", study_id, current, target, len(refs))
        return tuple(PublishedUnit(u.local_ref, study_id) for u in units)

    def list_submissions(
        self, batch: PublishedBatch, statuses: Optional[Sequence[SubmissionStatus]] = None
    ) -> list[PlatformSubmission]:
        """List every submission of the study (all pages).

        The study is read first: Prolific answers the submission list of a study it does not know
        with an empty list, which would read as every local submission gone.

        Raises:
            ProlificNotFoundError: the study does not exist (any more).
        """
        prolific_api.Studies.retrieve(self.client, batch.platform_batch_id)
        subs = [
            to_submission(s, batch.platform_batch_id)
            for s in prolific_api.Studies.list_submissions(self.client, batch.platform_batch_id)
        ]
        if statuses:
            wanted = set(statuses)
            subs = [s for s in subs if s.status in wanted]
        return subs

    def submission_pages(
        self,
        batch: PublishedBatch,
        cursor: Optional[Mapping[str, Any]] = None,
        skip_units: frozenset[str] = frozenset(),
    ) -> Iterator[SubmissionPage]:
        """The study's submissions a page at a time, earliest start first (:mod:`.pages`).

        Raises:
            ProlificNotFoundError: the study does not exist (any more).
        """
        study_id = batch.platform_batch_id
        prolific_api.Studies.retrieve(self.client, study_id)  # an unknown study lists as empty
        for page in prolific_pages.pages(self.client, study_id, cursor):
            subs = tuple(to_submission(item, study_id) for item in page.items)
            yield SubmissionPage(
                submissions=subs, units=None, start=page.start, next=page.next, first=page.first
            )

    def add_assignments(self, batch: PublishedBatch, unit_platform_id: str, count: int, token: str) -> None:
        """Add places to the study (read, then PATCH the total).

        Not deduplicated by ``token``: a retry after a lost answer can add places twice (places cost
        nothing until used; the caller can check ``total_available_places``).
        """
        study = prolific_api.Studies.retrieve(self.client, unit_platform_id)
        total = int(study.get("total_available_places", 0)) + int(count)
        prolific_api.Studies.update(self.client, unit_platform_id, {"total_available_places": total})
        logger.info("Study(%s) now has %d places (token %s)", unit_platform_id, total, token)

    def pause(self, batch: PublishedBatch) -> None:
        """Pause the study (resume with ``resume``); a study already paused is left alone."""
        self._transition(batch, "PAUSE", "PAUSED")

    def resume(self, batch: PublishedBatch) -> None:
        """Resume a paused study; a study already active is left alone."""
        self._transition(batch, "START", "ACTIVE")

    def _transition(self, batch: PublishedBatch, action: str, reached: str) -> None:
        """Move the study with ``action``; Prolific refuses a move to the status it has, which a retried
        call makes, so that refusal is success when the study is already ``reached``."""
        try:
            prolific_api.Studies.transition(self.client, batch.platform_batch_id, action)
        except (errors.ProlificInvalidRequestError, errors.ProlificAlreadyDoneError):
            study = prolific_api.Studies.retrieve(self.client, batch.platform_batch_id)
            if study.get("status") != reached:
                raise
            logger.info("Study(%s) already %s", batch.platform_batch_id, reached)

    def stop(self, batch: PublishedBatch) -> None:
        """Stop the study; an already completed study is left alone."""
        try:
            prolific_api.Studies.transition(self.client, batch.platform_batch_id, "STOP")
        except (errors.ProlificInvalidRequestError, errors.ProlificAlreadyDoneError):
            study = prolific_api.Studies.retrieve(self.client, batch.platform_batch_id)
            if study.get("status") not in ("COMPLETED", "AWAITING REVIEW"):
                raise
            logger.info("Study(%s) already %s", batch.platform_batch_id, study.get("status"))

    # --- submissions ---------------------------------------------------------------------------------

    def _settled(
        self, submission_id: str, wanted: SubmissionStatus, exc: errors.ProviderError
    ) -> ReviewResult:
        """After a refused transition, return ``changed=False`` if already ``wanted``, else re-raise."""
        current = to_submission(prolific_api.Submissions.retrieve(self.client, submission_id))
        if current.status in (wanted, SubmissionStatus.PROCESSING):
            return ReviewResult(submission_id, wanted, changed=False)
        raise errors.ProlificAlreadyDoneError(
            f"Submission({submission_id}) is {current.platform_status}, "
            f"cannot make it {wanted.value}: {exc.message}",
            code=exc.code,
            status=exc.status,
            operation=exc.operation,
        ) from exc

    def approve(self, batch: PublishedBatch, platform_assignment_id: str, feedback: str = "") -> ReviewResult:
        """Approve one submission; an already approved one gives ``changed=False``."""
        try:
            prolific_api.Submissions.approve(self.client, platform_assignment_id)
        except (errors.ProlificInvalidRequestError, errors.ProlificAlreadyDoneError) as exc:
            return self._settled(platform_assignment_id, SubmissionStatus.APPROVED, exc)
        return ReviewResult(platform_assignment_id, SubmissionStatus.APPROVED)

    def bulk_approve(self, batch: PublishedBatch, submission_ids: Sequence[str]) -> None:
        """Approve many submissions of the study in one call."""
        prolific_api.Submissions.bulk_approve(self.client, batch.platform_batch_id, submission_ids)

    def reject(
        self, batch: PublishedBatch, platform_assignment_id: str, reason: str, category: str = "OTHER"
    ) -> ReviewResult:
        """Reject one submission (message of 100+ characters and a Prolific rejection category)."""
        prolific_api.validate_rejection(reason, category, platform_assignment_id)
        try:
            prolific_api.Submissions.reject(self.client, platform_assignment_id, reason, category)
        except (errors.ProlificInvalidRequestError, errors.ProlificAlreadyDoneError) as exc:
            return self._settled(platform_assignment_id, SubmissionStatus.REJECTED, exc)
        return ReviewResult(platform_assignment_id, SubmissionStatus.REJECTED)

    def bonus(
        self,
        batch: PublishedBatch,
        platform_assignment_id: str,
        worker_id: str,
        amount_cents: int,
        reason: str,
        idempotency_key: str,
        payments: PaymentStore,
    ) -> PaymentResult:
        """Pay a bonus once per key (set up, write PAY_REQUESTED, pay, write PAID).

        Concurrent calls with the same key must be serialised by the caller (``crowd.services.ledger.
        payment_claim``, which ``crowd.services.review.bonus`` holds around this call).
        ``reason`` is not sent: Prolific bonuses carry no message (use ``notify_workers``).

        A set-up whose answer never comes (a 5xx, a dropped connection, a kill before its id is recorded)
        may have made a bulk bonus on Prolific that no record names. The API can neither find nor
        cancel it (docs.prolific.com, Bonuses: set up and pay only), so it cannot be reused: the record
        counts it (``setups_in_doubt``, written before the call and taken back when the answer comes)
        and the re-run sets up and pays a new one. Such an orphan pays nothing (Prolific pays a bulk
        bonus only through its pay call, which crowdqa sends only for the bulk it recorded); the
        assignment page names it.

        Raises:
            ProlificTransientError: the pay call's answer was lost; the record stays PAY_REQUESTED and
                a retry returns UNCONFIRMED instead of paying again.
        """
        record = payments.get(idempotency_key)
        done = already_paid(record, worker_id)
        if done is not None:
            return done
        if record is not None and record.state == PaymentState.PAY_REQUESTED:
            logger.warning(
                "Submission(%s) bonus %s: pay was sent at %s without a confirmed answer; not resending "
                "(check Prolific, then resolve_unconfirmed)",
                platform_assignment_id,
                idempotency_key,
                record.updated_at.isoformat(),
            )
            return PaymentResult(
                idempotency_key,
                PaymentStatus.UNCONFIRMED,
                record.platform_ref,
                record.amount_cents,
                worker_id,
            )
        if record is None or not record.platform_ref:
            record = self._set_up_bonus(batch, record, idempotency_key, worker_id, amount_cents, payments)
        record = advance_payment(payments, record, PaymentState.PAY_REQUESTED, error="")
        try:
            prolific_api.BonusPayments.pay(self.client, record.platform_ref)
        except errors.PAYMENT_REFUSED as exc:
            advance_payment(payments, record, PaymentState.REFUSED, error=str(exc))  # nothing was paid
            raise
        advance_payment(payments, record, PaymentState.PAID)
        logger.info(
            "Submission(%s) bonus %s paid to Participant(%s): bulk %s",
            platform_assignment_id,
            idempotency_key,
            worker_id,
            record.platform_ref,
        )
        return PaymentResult(
            idempotency_key, PaymentStatus.PAID, record.platform_ref, record.amount_cents, worker_id
        )

    def _set_up_bonus(
        self,
        batch: PublishedBatch,
        record: Optional[PaymentRecord],
        key: str,
        worker_id: str,
        amount_cents: int,
        payments: PaymentStore,
    ) -> PaymentRecord:
        """Set up the bulk bonus of ``key``, counting the set-up as in doubt until its answer comes."""
        doubt = (record.setups_in_doubt if record is not None else 0) + 1
        record = PaymentRecord(key, PaymentState.CREATED, worker_id, amount_cents, "", setups_in_doubt=doubt)
        payments.put(record)
        try:
            bulk = prolific_api.BonusPayments.set_up(
                self.client, batch.platform_batch_id, {worker_id: amount_cents}
            )
        except errors.RateLimitedError:
            advance_payment(payments, record, PaymentState.CREATED, setups_in_doubt=doubt - 1)
            raise  # throttled past the retries: nothing was set up
        except errors.TransientError:
            logger.warning(
                "Bonus %s: the set-up's answer was lost; a bulk bonus may sit unpaid on Prolific", key
            )
            raise  # it may exist: the count stays
        except errors.ProviderError as exc:
            advance_payment(payments, record, PaymentState.REFUSED, error=str(exc), setups_in_doubt=doubt - 1)
            raise
        return advance_payment(
            payments, record, PaymentState.CREATED, platform_ref=str(bulk["id"]), setups_in_doubt=doubt - 1
        )

    def bonuses_on_record(self, batch: PublishedBatch, platform_assignment_id: str) -> Optional[list[int]]:
        """Every bonus Prolific paid for the submission, in cents (its ``bonus_payments``).

        Prolific pays a bulk bonus asynchronously, so a payment sent moments ago may not be listed yet:
        the caller waits a settling time before it takes "not listed" for "not paid".
        """
        submission = prolific_api.Submissions.retrieve(self.client, platform_assignment_id)
        return [int(cents) for cents in submission.get("bonus_payments") or ()]

    # --- workers -------------------------------------------------------------------------------------

    def account_currency(self) -> str:
        """The ``currency_code`` of the workspace that pays: ``PROLIFIC_WORKSPACE_ID``'s, or the account's
        only workspace's when it is unset.

        Fails closed: a reward in the wrong currency is a real loss, so an account with several
        workspaces and no ``PROLIFIC_WORKSPACE_ID``, or a balance without a currency, is refused
        instead of assumed to be USD.

        Raises:
            ProviderConfigError: the paying workspace or its currency cannot be told.
        """
        workspace_id = self.workspace_id
        if not workspace_id:
            workspaces = prolific_api.Workspaces.list(self.client)
            if len(workspaces) != 1:
                names = ", ".join(f"{w.get('title', '?')} ({w.get('id')})" for w in workspaces) or "none"
                raise errors.ProviderConfigError(
                    f"PROLIFIC_WORKSPACE_ID is not set and the account has {len(workspaces)} workspaces "
                    f"({names}): set it to the workspace that pays this batch",
                    platform="prolific",
                )
            workspace_id = str(workspaces[0]["id"])
        code = prolific_api.Workspaces.balance(self.client, workspace_id).get("currency_code")
        if not code:
            raise errors.ProviderConfigError(
                f"Prolific gave no currency_code for workspace {workspace_id}'s balance", platform="prolific"
            )
        return str(code).upper()

    def _block_group(self) -> str:
        if not self.block_group_id:
            raise errors.ProviderConfigError(
                "PROLIFIC_BLOCK_GROUP_ID is not set: Prolific blocks workers through a participant group",
                platform="prolific",
            )
        return self.block_group_id

    def block_worker(self, worker_id: str, reason: str) -> None:
        """Add the participant to the block-list group that every study excludes."""
        prolific_api.ParticipantGroups.add_participants(self.client, self._block_group(), [worker_id])
        logger.info("Participant(%s) blocked: %s", worker_id, reason)

    def unblock_worker(self, worker_id: str, reason: str) -> None:
        """Remove the participant from the block-list group."""
        prolific_api.ParticipantGroups.remove_participants(self.client, self._block_group(), [worker_id])

    def create_qualification(self, name: str, description: str) -> str:
        """Create a participant group (used as an allow-list); return its id."""
        return str(
            prolific_api.ParticipantGroups.create(self.client, name, self.workspace_id, description)["id"]
        )

    def qualify_worker(self, worker_id: str, qualification_id: str, value: int = 1) -> None:
        """Add the participant to the group (``value`` has no meaning on Prolific)."""
        prolific_api.ParticipantGroups.add_participants(self.client, qualification_id, [worker_id])

    def notify_workers(
        self, worker_ids: Sequence[str], subject: str, message: str, batch: Optional[PublishedBatch] = None
    ) -> None:
        """Message each participant about the batch's study (Prolific messages need a study)."""
        if batch is None:
            raise errors.ProlificInvalidRequestError(
                "Prolific messages must name a study: pass the batch", operation="POST messages/"
            )
        body = f"{subject}\n\n{message}" if subject else message
        for worker_id in worker_ids:
            prolific_api.Messages.send(self.client, worker_id, body, batch.platform_batch_id)
