"""The MTurk ``CrowdProvider``: a HIT type per batch, one ExternalQuestion HIT per unit.

Sandbox versus live is decided once, by the client and the ``MTurkEnvironment`` passed in
(``from_config`` reads ``MTURK_SANDBOX``); no method checks it. Quirks kept here: MTurk statuses,
the ``RequesterAnnotation`` used to find a HIT created by a crashed earlier attempt, and the 24-hour
life of ``UniqueRequestToken`` (the ``PaymentStore`` covers longer gaps).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Optional

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
from crowd.providers.mturk import api as mturk_api
from crowd.providers.mturk import errors
from crowd.providers.mturk import requirements as mturk_requirements
from crowd.providers.mturk.traits import MTurkTraits

logger = logging.getLogger(__name__)

STATUS_FROM_MTURK = {
    "Submitted": SubmissionStatus.SUBMITTED,
    "Approved": SubmissionStatus.APPROVED,
    "Rejected": SubmissionStatus.REJECTED,
}
MTURK_FROM_STATUS = {v: k for k, v in STATUS_FROM_MTURK.items()}
# UniqueRequestToken is honoured for 24 hours; past this age a retry must not rely on it.
TOKEN_LIFETIME = timedelta(hours=23)
HITS_PER_SYNC_STEP = 25
"""HITs whose assignments one sync step lists (then sync applies them and stores where it got to)."""


def annotation_for(batch_ref: str, unit_ref: str) -> str:
    """Return the RequesterAnnotation marking a HIT as crowdqa's unit (found again after a crash)."""
    return f"crowdqa:{batch_ref}:{unit_ref}"[:255]


def token_for(*parts: str) -> str:
    """Return a UniqueRequestToken from stable parts (at most 64 characters)."""
    token = "-".join(parts)
    if len(token) > mturk_api.TOKEN_MAX:
        token = token[:40] + "-" + hashlib.sha256(token.encode()).hexdigest()[:23]
    return token


def _utc(value: Optional[datetime]) -> Optional[datetime]:
    """Return an aware datetime in UTC (botocore parses timestamps in the local zone)."""
    return value.astimezone(UTC) if value is not None else None


def to_submission(assignment: Mapping[str, Any]) -> PlatformSubmission:
    """Convert an MTurk assignment dict into a ``PlatformSubmission``."""
    raw = str(assignment.get("AssignmentStatus", ""))
    return PlatformSubmission(
        platform_assignment_id=assignment["AssignmentId"],
        worker_id=assignment.get("WorkerId", ""),
        status=STATUS_FROM_MTURK.get(raw, SubmissionStatus.ACTIVE),
        platform_unit_id=assignment.get("HITId", ""),
        submitted_at=_utc(assignment.get("SubmitTime")),
        accepted_at=_utc(assignment.get("AcceptTime")),
        answers=mturk_api.parse_answer_xml(assignment.get("Answer", "") or ""),
        platform_status=raw,
    )


class MTurkProvider(MTurkTraits, CrowdProvider):
    """Amazon Mechanical Turk through a boto3 client (sandbox unless configured live)."""

    def __init__(self, client: Any, environment: mturk_api.MTurkEnvironment = mturk_api.SANDBOX) -> None:
        """Wrap a boto3 mturk client.

        Args:
            client: from ``mturk_api.make_client`` (or a Stubber-wrapped client in tests).
            environment: SANDBOX or LIVE; names the worker site in preview URLs.
        """
        self.client = client
        self.environment = environment
        self.sandbox = environment is not mturk_api.LIVE

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> MTurkProvider:
        """Build from settings-like values: ``MTURK_SANDBOX`` (default true), ``AWS_ENDPOINT_URL_MTURK``,
        ``MTURK_MAX_ATTEMPTS`` (attempts per call under throttling, default 10)."""
        sandbox = bool(config.get("MTURK_SANDBOX", True))
        endpoint = config.get("AWS_ENDPOINT_URL_MTURK") or None
        attempts = int(config.get("MTURK_MAX_ATTEMPTS") or 10)
        client = mturk_api.make_client(sandbox=sandbox, endpoint_url=endpoint, max_attempts=attempts)
        return cls(client, mturk_api.environment_for(sandbox))

    # --- batch ---------------------------------------------------------------------------------------

    def qualification_requirements(self, request: PublishRequest) -> list[dict[str, Any]]:
        """Translate the request's neutral worker requirements into MTurk's."""
        reqs: list[dict[str, Any]] = []
        if request.locales:
            reqs.append(mturk_requirements.locale_requirement(request.locales))
        if request.min_approval_rate is not None:
            reqs.append(mturk_requirements.approval_rate_requirement(request.min_approval_rate))
        if request.min_approved is not None:
            reqs.append(mturk_requirements.number_approved_requirement(request.min_approved))
        reqs.extend(
            mturk_requirements.has_qualification_requirement(q) for q in request.require_qualifications
        )
        reqs.extend(
            mturk_requirements.lacks_qualification_requirement(q) for q in request.exclude_qualifications
        )
        return reqs

    def publish(self, request: PublishRequest, listener: Optional[PublishListener] = None) -> PublishedBatch:
        """Create the HIT type, then one HIT per unit; a resumed publish adopts the HITs already made.

        MTurk returns the same HIT type for the same properties, so the HIT type needs no care. A
        resumed publish (``request.resume``: an earlier attempt failed or was killed) first lists the
        requester's HITs once and adopts every one carrying a unit's RequesterAnnotation, so a HIT made
        more than 24 hours ago (its UniqueRequestToken forgotten by MTurk) is not made twice.
        """
        listener = listener or PublishListener()
        hit_type_id = mturk_api.create_hit_type(
            self.client,
            title=request.title,
            description=request.description,
            reward_cents=request.reward_cents,
            assignment_duration_seconds=request.duration_seconds,
            auto_approval_delay_seconds=request.auto_approve_seconds,
            keywords=request.keywords,
            qualification_requirements=self.qualification_requirements(request),
        )
        listener.platform_batch(hit_type_id)
        live = self.hits_of_batch(request.batch_ref) if request.resume else {}
        units = []
        for unit in request.effective_units():
            adopted = live.get(annotation_for(request.batch_ref, unit.local_ref))
            published = (
                PublishedUnit(unit.local_ref, adopted)
                if adopted
                else self._create_hit(hit_type_id, request, unit)
            )
            listener.unit(published, adopted=bool(adopted))
            units.append(published)
        if live:
            logger.warning(
                "Batch(%s): adopted %d HIT(s) an earlier publish had made", request.batch_ref, len(live)
            )
        return PublishedBatch(
            provider=self.name,
            batch_ref=request.batch_ref,
            platform_batch_id=hit_type_id,
            units=tuple(units),
            sandbox=self.sandbox,
            preview_url=f"{self.environment.worker_site}/projects/{hit_type_id}/tasks",
        )

    def hits_of_batch(self, batch_ref: str) -> dict[str, str]:
        """The requester's HITs carrying one of the batch's RequesterAnnotations: annotation -> HIT id.

        Reads every page of ListHITs (100 a page). A unit with several HITs (a duplicate someone else
        made) keeps the oldest.
        """
        prefix = annotation_for(batch_ref, "")
        found: dict[str, tuple[Any, str]] = {}
        for hit in mturk_api.list_hits(self.client):
            annotation = str(hit.get("RequesterAnnotation") or "")
            if not annotation.startswith(prefix):
                continue
            created = hit.get("CreationTime")
            known = found.get(annotation)
            if known is None or (created is not None and known[0] is not None and created < known[0]):
                found[annotation] = (created, str(hit["HITId"]))
        return {annotation: hit_id for annotation, (_, hit_id) in found.items()}

    def _create_hit(self, hit_type_id: str, request: PublishRequest, unit: PublishUnit) -> PublishedUnit:
        """Create one unit's ExternalQuestion HIT; a retry finds the HIT of an attempt whose answer was lost.

        The UniqueRequestToken is derived from the batch and unit, so MTurk refuses a second HIT for
        the same unit (for 24 hours); the RequesterAnnotation finds the first one.
        """
        annotation = annotation_for(request.batch_ref, unit.local_ref)
        try:
            hit = mturk_api.create_hit_with_hit_type(
                self.client,
                hit_type_id,
                mturk_api.external_question(unit.external_url or request.external_url, request.frame_height),
                max_assignments=request.assignments,
                lifetime_seconds=request.lifetime_seconds,
                requester_annotation=annotation,
                unique_request_token=token_for("hit", request.batch_ref, unit.local_ref),
            )
            hit_id = hit["HITId"]
        except errors.MTurkAlreadyDoneError as exc:
            hit_id = self._existing_hit(annotation, exc)
            logger.warning(
                "Batch(%s) unit %s: MTurk already has its HIT(%s) from an earlier attempt; adopting it",
                request.batch_ref,
                unit.local_ref,
                hit_id,
            )
        logger.info("Batch(%s) unit %s published as HIT(%s)", request.batch_ref, unit.local_ref, hit_id)
        return PublishedUnit(local_ref=unit.local_ref, platform_id=hit_id)

    def add_units(
        self, batch: PublishedBatch, request: PublishRequest, units: Sequence[PublishUnit]
    ) -> tuple[PublishedUnit, ...]:
        """Create one HIT per new unit with the batch's HIT type (same reward, duration, requirements).

        A unit the batch already lists keeps its HIT; the others are created as ``publish`` creates
        them, with the same per-unit token, so a call repeated after a lost answer creates nothing twice.
        """
        known = {u.local_ref: u for u in batch.units}
        return tuple(
            known.get(unit.local_ref) or self._create_hit(batch.platform_batch_id, request, unit)
            for unit in units
        )

    def _existing_hit(self, annotation: str, exc: errors.ProviderError) -> str:
        """The HIT an earlier CreateHIT with the same token made: the id MTurk names, else by annotation.

        ``HitAlreadyExists`` quotes the existing HIT's id; it is adopted only when that HIT carries this
        unit's RequesterAnnotation (so a token reused by someone else is never taken for ours).
        """
        for candidate in mturk_api.ids_in_message(exc.message):
            try:
                hit = mturk_api.get_hit(self.client, candidate)
            except errors.MTurkNotFoundError:
                continue
            except errors.MTurkInvalidRequestError:
                continue
            if hit.get("RequesterAnnotation") == annotation:
                return str(hit["HITId"])
        return self._find_hit(annotation)

    def _find_hit(self, annotation: str) -> str:
        """Return the HIT carrying ``annotation`` (created by an earlier attempt whose answer was lost)."""
        for hit in mturk_api.list_hits(self.client):
            if hit.get("RequesterAnnotation") == annotation:
                return hit["HITId"]
        raise errors.MTurkNotFoundError(
            f"MTurk says the HIT for {annotation} was already created, but no HIT carries that annotation",
            operation="ListHITs",
        )

    def list_submissions(
        self, batch: PublishedBatch, statuses: Optional[Sequence[SubmissionStatus]] = None
    ) -> list[PlatformSubmission]:
        """List every assignment of every HIT of the batch (all pages)."""
        mturk_statuses = [MTURK_FROM_STATUS[s] for s in statuses or () if s in MTURK_FROM_STATUS]
        if statuses and not mturk_statuses:
            return []  # MTurk only lists submitted / approved / rejected assignments
        result: list[PlatformSubmission] = []
        for hit_id in batch.unit_ids():
            for assignment in mturk_api.list_assignments_for_hit(self.client, hit_id, mturk_statuses):
                result.append(to_submission(assignment))
        return result

    def submission_pages(
        self,
        batch: PublishedBatch,
        cursor: Optional[Mapping[str, Any]] = None,
        skip_units: frozenset[str] = frozenset(),
    ) -> Iterator[SubmissionPage]:
        """List the assignments of ``HITS_PER_SYNC_STEP`` HITs per step, in the batch's HIT order.

        The cursor names the last HIT listed (``{"after_unit": HITId}``): a resumed pass starts after
        it. A cursor naming a HIT the batch no longer has starts the pass again (``first``).
        """
        hit_ids = batch.unit_ids()
        after = (cursor or {}).get("after_unit")
        begin = hit_ids.index(after) + 1 if after in hit_ids else 0
        restart = bool(after) and after not in hit_ids
        todo = [h for h in hit_ids[begin:] if h not in skip_units]
        start: Optional[dict[str, Any]] = dict(cursor) if cursor and not restart else None
        if not todo:
            yield SubmissionPage(submissions=(), units=(), start=start, next=None, first=not start)
            return
        for offset in range(0, len(todo), HITS_PER_SYNC_STEP):
            step = tuple(todo[offset : offset + HITS_PER_SYNC_STEP])
            subs = tuple(
                to_submission(assignment)
                for hit_id in step
                for assignment in mturk_api.list_assignments_for_hit(self.client, hit_id)
            )
            more = offset + HITS_PER_SYNC_STEP < len(todo)
            yield SubmissionPage(
                submissions=subs,
                units=step,
                start=start,
                next={"after_unit": step[-1]} if more else None,
                first=offset == 0 and not start,
                left=max(0, len(todo) - offset - len(step)),
            )
            start = {"after_unit": step[-1]}

    def add_assignments(self, batch: PublishedBatch, unit_platform_id: str, count: int, token: str) -> None:
        """Add assignments to one HIT (``token`` dedups a retry for 24 hours)."""
        try:
            mturk_api.create_additional_assignments_for_hit(self.client, unit_platform_id, count, token)
        except errors.MTurkAlreadyDoneError:
            logger.info("HIT(%s) additional assignments with token %s already added", unit_platform_id, token)

    def stop(self, batch: PublishedBatch) -> None:
        """Expire every HIT of the batch now (workers already working may still submit)."""
        for hit_id in batch.unit_ids():
            mturk_api.update_expiration_for_hit(self.client, hit_id)
            logger.info("Batch(%s) HIT(%s) expired", batch.batch_ref, hit_id)

    def pause(self, batch: PublishedBatch) -> None:
        """MTurk has no pause: expire the HITs (``stop_is_final``: the batch cannot be listed again)."""
        self.stop(batch)

    def balance_cents(self) -> int:
        """Return the requester's available balance in cents."""
        return mturk_api.get_account_balance(self.client)

    # --- submissions ---------------------------------------------------------------------------------

    def _settled(
        self, assignment_id: str, wanted: SubmissionStatus, exc: errors.ProviderError
    ) -> ReviewResult:
        """After an AlreadyDone answer, return ``changed=False`` if the state is ``wanted``, else re-raise."""
        current = to_submission(mturk_api.get_assignment(self.client, assignment_id))
        if current.status == wanted:
            return ReviewResult(assignment_id, wanted, changed=False)
        raise errors.MTurkAlreadyDoneError(
            f"Assignment({assignment_id}) is {current.platform_status or current.status.value}, "
            f"cannot make it {wanted.value}: {exc.message}",
            code=exc.code,
            status=exc.status,
            operation=exc.operation,
        ) from exc

    def submission(self, batch: PublishedBatch, platform_assignment_id: str) -> Optional[PlatformSubmission]:
        """MTurk's record of an assignment (GetAssignment): its worker, HIT and status."""
        return to_submission(mturk_api.get_assignment(self.client, platform_assignment_id))

    def approve(self, batch: PublishedBatch, platform_assignment_id: str, feedback: str = "") -> ReviewResult:
        """Approve an assignment; an already approved one gives ``changed=False``."""
        try:
            mturk_api.approve_assignment(self.client, platform_assignment_id, feedback)
        except errors.MTurkAlreadyDoneError as exc:
            return self._settled(platform_assignment_id, SubmissionStatus.APPROVED, exc)
        return ReviewResult(platform_assignment_id, SubmissionStatus.APPROVED)

    def reject(
        self, batch: PublishedBatch, platform_assignment_id: str, reason: str, category: str = "OTHER"
    ) -> ReviewResult:
        """Reject an assignment with feedback (``category`` is Prolific's and ignored here)."""
        if not reason.strip():
            raise errors.MTurkInvalidRequestError(
                f"Assignment({platform_assignment_id}): a rejection needs feedback for the worker",
                operation="RejectAssignment",
            )
        try:
            mturk_api.reject_assignment(self.client, platform_assignment_id, reason)
        except errors.MTurkAlreadyDoneError as exc:
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
        """Pay a bonus once per key: the store first, then MTurk's UniqueRequestToken.

        A ``PAY_REQUESTED`` record younger than 23 hours is resent with the same token (MTurk dedups
        it); an older one is reported ``UNCONFIRMED`` and never resent. A refusal (no funds, unknown
        assignment...) marks the record ``REFUSED``, which leaves the budget; a later call asks again.

        Raises:
            MTurkError: the refusal, after the record was marked; a network error leaves it
                ``PAY_REQUESTED``.
        """
        token = token_for(idempotency_key)
        record = payments.get(idempotency_key)
        done = already_paid(record, worker_id)
        if done is not None:
            return done
        if (
            record is not None
            and record.state == PaymentState.PAY_REQUESTED
            and datetime.now(UTC) - record.updated_at > TOKEN_LIFETIME
        ):
            logger.warning(
                "Assignment(%s) bonus %s was requested at %s and never confirmed: not resending",
                platform_assignment_id,
                idempotency_key,
                record.updated_at.isoformat(),
            )
            return PaymentResult(
                idempotency_key, PaymentStatus.UNCONFIRMED, token, record.amount_cents, worker_id
            )
        # A request this call makes (not one an earlier run left unanswered): "already processed" can
        # then only answer botocore's own retry of this call after its first reply was lost.
        first_request = record is None or record.state != PaymentState.PAY_REQUESTED
        if record is None:
            record = PaymentRecord(
                idempotency_key, PaymentState.PAY_REQUESTED, worker_id, amount_cents, token
            )
            payments.put(record)
        elif record.state != PaymentState.PAY_REQUESTED:  # refused before: nothing was paid, ask again
            record = advance_payment(payments, record, PaymentState.PAY_REQUESTED, error="")
        try:
            paid_now = mturk_api.send_bonus(
                self.client, worker_id, platform_assignment_id, amount_cents, reason, token
            )
        except errors.PAYMENT_REFUSED as exc:
            # MTurk refused the token's first use (a used token answers "already processed", handled
            # in send_bonus): nothing was paid, so the ledger row leaves the budget.
            advance_payment(payments, record, PaymentState.REFUSED, error=str(exc))
            raise
        advance_payment(payments, record, PaymentState.PAID)
        status = PaymentStatus.PAID if paid_now or first_request else PaymentStatus.ALREADY_PAID
        logger.info(
            "Assignment(%s) bonus %s for Worker(%s): %s",
            platform_assignment_id,
            idempotency_key,
            worker_id,
            status.value,
        )
        return PaymentResult(idempotency_key, status, token, amount_cents, worker_id)

    def bonuses_on_record(self, batch: PublishedBatch, platform_assignment_id: str) -> Optional[list[int]]:
        """Every bonus MTurk paid for the assignment (ListBonusPayments, all pages), in cents."""
        return [
            mturk_api.dollars_to_cents(str(b["BonusAmount"]))
            for b in mturk_api.list_bonus_payments(self.client, platform_assignment_id)
        ]

    # --- workers -------------------------------------------------------------------------------------

    def block_worker(self, worker_id: str, reason: str) -> None:
        """Hard-block a worker (a soft block is a ``DoesNotExist`` qualification via ``qualify_worker``)."""
        mturk_api.create_worker_block(self.client, worker_id, reason)

    def unblock_worker(self, worker_id: str, reason: str) -> None:
        """Lift a worker block."""
        mturk_api.delete_worker_block(self.client, worker_id, reason)

    def is_blocked(self, worker_id: str) -> bool:
        """Return whether the worker is blocked (reads every page of blocks)."""
        return any(b.get("WorkerId") == worker_id for b in mturk_api.list_worker_blocks(self.client))

    def create_qualification(self, name: str, description: str) -> str:
        """Create a custom qualification type; one an earlier attempt made (its answer lost) is adopted.

        MTurk refuses a second qualification type of the same name, so the refusal is answered by
        looking the name up among the requester's own qualification types.
        """
        try:
            return mturk_api.create_qualification_type(self.client, name, description)
        except errors.MTurkInvalidRequestError as exc:
            if "already created a QualificationType with this name" not in exc.message:
                raise
            found = mturk_api.find_qualification_type(self.client, name)
            if found is None:
                raise
            logger.warning("QualificationType %s (%s) made by an earlier attempt: adopting it", name, found)
            return found

    def qualify_worker(self, worker_id: str, qualification_id: str, value: int = 1) -> None:
        """Grant the qualification to the worker."""
        mturk_api.associate_qualification_with_worker(self.client, qualification_id, worker_id, value)

    def notify_workers(
        self, worker_ids: Sequence[str], subject: str, message: str, batch: Optional[PublishedBatch] = None
    ) -> None:
        """E-mail workers through MTurk (100 per call)."""
        mturk_api.notify_workers(self.client, list(worker_ids), subject, message)
