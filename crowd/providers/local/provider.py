"""The embedded local crowd as a ``CrowdProvider``: the database is the platform.

Local workers (in-lab annotators, experts) claim HITs on ``/work/`` and submit on crowdqa's own pages, so
there is nothing remote to publish or poll: ``list_submissions`` reads ``Assignment`` rows, approve /
reject only report the state (``crowd.services.review`` changes it), a bonus is a confirmed ledger row
written once per key, blocks and qualifications are ``Worker`` / ``Qualification`` rows. Platform ids
are the local ids: ``batch.pk`` for the batch, ``hit.pk`` for a unit, ``assignment.pk`` for a submission.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from django.db.models import F

from annotation.models import HIT, Assignment, Batch
from annotation.platforms import Platform
from crowd.models import Qualification, Worker, WorkerMessage
from crowd.providers import errors
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
    SubmissionStatus,
    already_paid,
)
from crowd.providers.local.traits import LocalTraits

logger = logging.getLogger(__name__)

NEUTRAL_STATUS: dict[str, SubmissionStatus] = {
    Assignment.Status.ACCEPTED: SubmissionStatus.ACTIVE,
    Assignment.Status.SUBMITTED: SubmissionStatus.SUBMITTED,
    Assignment.Status.APPROVED: SubmissionStatus.APPROVED,
    Assignment.Status.REJECTED: SubmissionStatus.REJECTED,
    Assignment.Status.RETURNED: SubmissionStatus.RETURNED,
    Assignment.Status.EXPIRED: SubmissionStatus.TIMED_OUT,
}
"""Local assignment status -> the providers' neutral status (used by sync for every provider)."""


def _assignment(platform_assignment_id: str) -> Assignment:
    assignment = (
        Assignment.objects.filter(pk=int(platform_assignment_id)).first()
        if (platform_assignment_id.isdecimal() and platform_assignment_id.isascii())
        else None
    )
    if assignment is None:
        raise errors.NotFoundError(f"no local Assignment({platform_assignment_id})", platform="local")
    return assignment


def _worker(worker_id: str) -> Worker:
    worker = Worker.objects.filter(platform=LocalTraits.name, platform_id=worker_id).first()
    if worker is None:
        raise errors.NotFoundError(f"no local worker {worker_id!r}", platform="local")
    return worker


class LocalProvider(LocalTraits, CrowdProvider):
    """The local crowd: every call reads or writes crowdqa's own tables."""

    sandbox = False

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> LocalProvider:
        """Build the provider (it needs no settings)."""
        return cls()

    def publish(self, request: PublishRequest, listener: Optional[PublishListener] = None) -> PublishedBatch:
        """Nothing to advertise: the units are the HITs themselves (the batch status opens them)."""
        return PublishedBatch(
            provider=self.name,
            batch_ref=request.batch_ref,
            platform_batch_id=request.batch_ref,
            units=tuple(PublishedUnit(u.local_ref, u.local_ref) for u in request.effective_units()),
            sandbox=False,
            completion_code=request.completion_code,
        )

    def add_units(
        self, batch: PublishedBatch, request: PublishRequest, units: Sequence[PublishUnit]
    ) -> tuple[PublishedUnit, ...]:
        """Nothing to advertise: a new HIT of a published batch can be claimed as soon as it exists."""
        return tuple(PublishedUnit(u.local_ref, u.local_ref) for u in units)

    def list_submissions(
        self, batch: PublishedBatch, statuses: Optional[Sequence[SubmissionStatus]] = None
    ) -> list[PlatformSubmission]:
        """Return the batch's assignments as submissions."""
        result = []
        for a in Assignment.objects.filter(hit__batch=int(batch.batch_ref)).select_related("worker"):
            sub = PlatformSubmission(
                platform_assignment_id=str(a.pk),
                worker_id=a.worker.platform_id,
                status=NEUTRAL_STATUS[a.status],
                platform_unit_id=str(a.hit_id),
                submitted_at=a.submitted_at,
                accepted_at=a.accepted_at,
                platform_status=a.status,
            )
            if not statuses or sub.status in statuses:
                result.append(sub)
        return result

    def add_assignments(self, batch: PublishedBatch, unit_platform_id: str, count: int, token: str) -> None:
        """Raise the HIT's slot count (not deduplicated by ``token``: the caller checks the count)."""
        HIT.objects.filter(pk=int(unit_platform_id)).update(max_assignments=F("max_assignments") + count)

    def stop(self, batch: PublishedBatch) -> None:
        """No new claims: ``claim_next`` only hands out work of published batches, so the status does it."""
        logger.info("Batch(%s) stopped on the local crowd", batch.batch_ref)

    def _review(self, platform_assignment_id: str, wanted: SubmissionStatus) -> ReviewResult:
        assignment = _assignment(platform_assignment_id)
        current = NEUTRAL_STATUS[assignment.status]
        if current == wanted:
            return ReviewResult(platform_assignment_id, wanted, changed=False)
        allowed = (SubmissionStatus.SUBMITTED,) + (
            (SubmissionStatus.REJECTED,) if wanted == SubmissionStatus.APPROVED else ()
        )
        if current not in allowed:
            raise errors.AlreadyDoneError(
                f"Assignment({platform_assignment_id}) is {assignment.status}, cannot make it {wanted.value}",
                platform="local",
            )
        return ReviewResult(platform_assignment_id, wanted)

    def approve(self, batch: PublishedBatch, platform_assignment_id: str, feedback: str = "") -> ReviewResult:
        """Check that the assignment can be approved (the review service changes the row)."""
        return self._review(platform_assignment_id, SubmissionStatus.APPROVED)

    def reject(
        self, batch: PublishedBatch, platform_assignment_id: str, reason: str, category: str = "OTHER"
    ) -> ReviewResult:
        """Check that the assignment can be rejected (the review service changes the row)."""
        if not reason.strip():
            raise errors.InvalidRequestError(
                f"Assignment({platform_assignment_id}): a rejection needs a reason", platform="local"
            )
        return self._review(platform_assignment_id, SubmissionStatus.REJECTED)

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
        """Record the bonus as paid once per key (local workers are paid outside the platform)."""
        record = payments.get(idempotency_key)
        done = already_paid(record, worker_id)
        if done is not None:
            return done
        payments.put(
            PaymentRecord(
                idempotency_key, PaymentState.PAID, worker_id, amount_cents, f"local:{idempotency_key}"
            )
        )
        return PaymentResult(
            idempotency_key, PaymentStatus.PAID, f"local:{idempotency_key}", amount_cents, worker_id
        )

    def block_worker(self, worker_id: str, reason: str) -> None:
        """Set ``Worker.blocked`` (``check_can_work`` refuses blocked workers)."""
        Worker.objects.filter(pk=_worker(worker_id).pk).update(blocked=True, block_reason=reason)

    def unblock_worker(self, worker_id: str, reason: str) -> None:
        """Clear ``Worker.blocked``."""
        Worker.objects.filter(pk=_worker(worker_id).pk).update(blocked=False, block_reason="")

    def create_qualification(self, name: str, description: str) -> str:
        """A local qualification is just its name (``Qualification.name``)."""
        return name

    def qualify_worker(self, worker_id: str, qualification_id: str, value: int = 1) -> None:
        """Create or update the worker's ``Qualification`` row."""
        Qualification.objects.update_or_create(
            worker=_worker(worker_id),
            name=qualification_id,
            defaults={"value": value, "platform_synced": True},
        )

    def notify_workers(
        self, worker_ids: Sequence[str], subject: str, message: str, batch: Optional[PublishedBatch] = None
    ) -> None:
        """Put the message in each local worker's inbox (their home page); unknown ids are skipped.

        Raises:
            InvalidRequestError: none of ``worker_ids`` is a local worker.
        """
        workers = list(Worker.objects.filter(platform=Platform.LOCAL, platform_id__in=list(worker_ids)))
        if not workers:
            raise errors.InvalidRequestError("no local worker to message", operation="notify_workers")
        batch_id = int(batch.batch_ref) if batch is not None and str(batch.batch_ref).isdigit() else None
        if batch_id is not None and not Batch.objects.filter(pk=batch_id).exists():
            batch_id = None
        WorkerMessage.objects.bulk_create(
            WorkerMessage(worker=w, batch_id=batch_id, subject=subject, body=message) for w in workers
        )
        logger.info("notify %d local workers: %s", len(workers), subject)
