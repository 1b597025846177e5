"""Settle submissions on their platform and in crowdqa: approve, reject, bonus, block, qualify.

Why: crowdqa and the platform must never disagree about a decision. Every decision (approve, reject,
block, unblock) is validated and written locally first, in a transaction that is still open when the
platform is told: a value the database would refuse (a NUL byte, an over-long text) fails before any
platform call, and a platform refusal rolls the local change back. Only a crash between the platform's
answer and the commit leaves the platform ahead, which the next sync repairs (MTurk/Prolific approved
-> approved locally with its reward row). Messages are validated before they are sent. Every call is
safe to repeat. Bonuses go through ``DbPaymentStore`` (its ledger row is committed before the platform
call) and are paid at most once per idempotency key, so they must be called outside any transaction.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import timedelta
from typing import Optional

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from annotation.hits import handler_for
from annotation.models import Assignment, Batch
from annotation.textnorm import storable
from crowd.models import BatchPlatformState, Payment, Worker
from crowd.providers import errors
from crowd.providers.base import CrowdProvider, PaymentResult, PaymentStatus, PublishedBatch
from crowd.providers.costs import bonus_fee_cents, check_budget, fees_for
from crowd.providers.factory import get_provider
from crowd.services import events, local_review
from crowd.services.budget import spent_cents
from crowd.services.ledger import (
    DbPaymentStore,
    LedgerError,
    PaymentBusyError,
    payment_claim,
    require_no_transaction,
)
from crowd.services.lifecycle import LifecycleError, provider_for
from crowd.services.publishing import published_of
from crowd.services.qualifications import qualify_worker

logger = logging.getLogger(__name__)


NO_WORK_ON_FILE = "no_work_on_file"
"""``Assignment.platform_meta`` key: the platform says it was submitted, but no answers reached crowdqa."""


class ReviewError(Exception):
    """A review action cannot be done (bad reason, wrong state, platform refused); shown to the user."""


MAX_TEXT_CHARS = {"reason": 1024, "feedback": 1024, "subject": 200, "message": 4096, "block": 1024}
"""Longest text a decision carries (MTurk's RequesterFeedback, Reason and message limits are 1,024,
1,024 and 4,096 characters; a subject is a line), checked before anything is written or sent."""


def checked_text(value: str, what: str, owner: str) -> str:
    """``value`` stripped, when the database and every platform can take it.

    Raises:
        ReviewError: it holds a NUL byte or a lone surrogate (no database column takes them), or is
            longer than ``MAX_TEXT_CHARS[what]``.
    """
    text = (value or "").strip()
    if storable(text) != text:
        raise ReviewError(f"{owner}: the {what} holds characters that cannot be stored (NUL or invalid)")
    limit = MAX_TEXT_CHARS[what]
    if len(text) > limit:
        raise ReviewError(f"{owner}: the {what} is {len(text):,} characters long (at most {limit:,})")
    return text


def work_on_file(assignment: Assignment) -> bool:
    """True when crowdqa holds the answers of a submission (the HIT page's, or those MTurk stored).

    A submission restored by sync from a platform that kept no answers (a Prolific participant who came
    back without the page's code, an MTurk assignment submitted outside the page) has none: it is never
    approved or paid without a person confirming it.
    """
    return not assignment.platform_meta.get(NO_WORK_ON_FILE)


def evidence_text(assignment: Assignment) -> str:
    """The platform's evidence of a submission without work on file, for messages and pages."""
    evidence = assignment.platform_meta.get("evidence") or {}
    code = evidence.get("completion_code") or "none"
    seconds = evidence.get("seconds")
    taken = f"{seconds} s" if seconds is not None else "unknown"
    status = evidence.get("platform_status") or "unknown"
    return f"platform status {status}, completion code {code}, time taken {taken}"


def _require_work(assignment: Assignment, action: str, confirmed: bool) -> None:
    if confirmed or work_on_file(assignment):
        return
    raise ReviewError(
        f"Assignment({assignment.pk}) has no work on file ({evidence_text(assignment)}): it is not "
        f"{action} automatically; check the work on the platform and confirm it explicitly"
    )


def reward_key(assignment: Assignment) -> str:
    """The ledger key of an assignment's reward (one per assignment)."""
    return f"reward-{assignment.pk}"


def bonus_key(assignment: Assignment, reason: str) -> str:
    """The default ledger key of a bonus: what is paid, never when (a retry reuses it)."""
    return f"bonus-{assignment.pk}-{slugify(reason)[:40] or 'bonus'}"[:64]


def _load(assignment: Assignment) -> Assignment:
    return Assignment.objects.select_related("hit__batch", "worker").get(pk=assignment.pk)


def _platform(assignment: Assignment) -> tuple[CrowdProvider, PublishedBatch, str]:
    """The provider, the published batch and the platform's id of the assignment.

    Raises:
        ReviewError: the batch was never published or the assignment has no platform id.
    """
    batch = assignment.hit.batch
    try:
        provider = provider_for(batch)
    except LifecycleError as exc:
        raise ReviewError(str(exc)) from exc
    published = published_of(batch)
    if published is None:
        raise ReviewError(f"Batch({batch.pk}) was never published; nothing to review on {batch.provider}")
    attention = BatchPlatformState.of(batch.pk).attention_reason
    if attention:
        raise ReviewError(f"Batch({batch.pk}) needs attention: {attention}")
    if assignment.platform_meta.get("missing_on_platform") and provider.external:
        raise ReviewError(
            f"Assignment({assignment.pk}) has no submission on {provider.name} (abandoned there after it "
            "was submitted here): pay it by bonus, or reject it here"
        )
    ref = assignment.platform_ref if provider.external else str(assignment.pk)
    if not ref:
        raise ReviewError(f"Assignment({assignment.pk}) has no {provider.name} id; run sync_batches first")
    return provider, published, ref


PLATFORM_CHECK = "platform_check"
"""``Assignment.platform_meta`` key: why the platform's record did not vouch for this submission."""


def _vouched(assignment: Assignment, provider: CrowdProvider, published: PublishedBatch, ref: str) -> None:
    """Check with the platform that it knows this submission: same id, same worker, same HIT.

    MTurk cannot confirm an assignment while it is being worked on, so anyone who knows a worker id and
    a HIT id can open a HIT under a made-up ``assignmentId``; that work is never approved or paid. The
    reason is kept on the assignment (``platform_meta["platform_check"]``) and shown to the researcher.

    Raises:
        ReviewError: the platform does not know the id, names another worker or HIT, or did not answer.
    """
    owner = f"Assignment({assignment.pk})"
    try:
        found = provider.submission(published, ref)
    except errors.NotFoundError:
        found, problem = None, f"{provider.name} has no assignment {ref}: the id was not one it issued"
    except errors.ProviderError as exc:
        raise ReviewError(f"{owner}: could not check it with {provider.name} ({exc}); try again") from exc
    else:
        if found is None:
            return
        problem = ""
        if found.worker_id != assignment.worker.platform_id:
            problem = f"{provider.name} says assignment {ref} belongs to another worker"
        elif found.platform_unit_id and found.platform_unit_id != assignment.hit.platform_ref:
            problem = f"{provider.name} says assignment {ref} belongs to another HIT"
    if not problem:
        if not assignment.vouched:  # now it counts for the HIT's slots and completion, the worker's caps
            from crowd.services.vouching import mark_vouched  # vouching reads this module's PLATFORM_CHECK

            try:
                mark_vouched(assignment)
            except IntegrityError as exc:
                raise ReviewError(
                    f"{owner}: {provider.name} vouches for a second assignment of this worker on this HIT"
                ) from exc
            assignment.vouched = True
        return
    Assignment.objects.filter(pk=assignment.pk).update(
        vouched=False, platform_meta={**assignment.platform_meta, PLATFORM_CHECK: problem}
    )
    raise ReviewError(f"{owner}: {problem}; it is never approved or paid (reject it here)")


def record_approval(assignment: Assignment, confirmed: bool, unreviewed_only: bool = False) -> bool:
    """Approve locally and write the reward's ledger row, in one transaction (idempotent).

    Args:
        assignment: a submitted, rejected or already approved assignment.
        confirmed: True when the platform has approved (and so paid) it.
        unreviewed_only: see :func:`crowd.services.local_review.approve`.

    Returns:
        True when the local state changed.
    """
    with transaction.atomic():
        changed = local_review.approve(assignment, unreviewed_only=unreviewed_only)
        batch = assignment.hit.batch
        Payment.objects.get_or_create(
            idempotency_key=reward_key(assignment),
            defaults={
                "batch": batch,
                "assignment": assignment,
                "worker": assignment.worker,
                "kind": Payment.Kind.REWARD,
                "amount_cents": batch.reward_cents,
                "currency": batch.currency,
                "reason": "reward",
                "platform_ref": assignment.platform_ref,
                "status": Payment.Status.CONFIRMED if confirmed else Payment.Status.PENDING,
            },
        )
    return changed


def approve_assignment(
    assignment: Assignment, feedback: str = "", confirm_no_work: bool = False, unreviewed_only: bool = False
) -> None:
    """Approve a submission on its platform, then locally with its reward row; screening grants the qual.

    A submission with no work on file (``work_on_file``) is refused unless ``confirm_no_work`` says a
    person checked it on the platform. A qualification grant the platform refuses stays pending
    (``Qualification.platform_synced`` False) and is retried by sync: the approval itself has happened
    and is not reported as failed. ``unreviewed_only`` (automatic approval) approves only work still
    waiting for review, checked again under the assignment's row lock, so a rejection made meanwhile
    stands and the platform is not told anything.

    Raises:
        ReviewError: wrong state or the platform refused.
    """
    assignment = _load(assignment)
    if unreviewed_only and assignment.status != Assignment.Status.SUBMITTED:
        raise ReviewError(f"Assignment({assignment.pk}) is {assignment.status}; it was reviewed already")
    if assignment.status not in (
        Assignment.Status.SUBMITTED,
        Assignment.Status.REJECTED,
        Assignment.Status.APPROVED,
    ):
        raise ReviewError(
            f"Assignment({assignment.pk}) is {assignment.status}; only submitted work is approved"
        )
    if assignment.status != Assignment.Status.APPROVED:
        _require_work(assignment, "approved", confirm_no_work)
    feedback = checked_text(feedback, "feedback", f"Assignment({assignment.pk})")
    provider, published, ref = _platform(assignment)
    if assignment.status != Assignment.Status.APPROVED:
        _vouched(assignment, provider, published, ref)
    with transaction.atomic():
        try:
            record_approval(assignment, confirmed=provider.external, unreviewed_only=unreviewed_only)
        except local_review.AlreadyReviewed as exc:
            raise ReviewError(f"{exc}; it was reviewed meanwhile") from exc
        try:
            provider.approve(published, ref, feedback)
        except errors.ProviderError as exc:
            raise ReviewError(f"Assignment({assignment.pk}) approve on {provider.name}: {exc}") from exc
    if handler_for(assignment.hit.batch.kind).qualifies_workers:
        qualify_worker(assignment.worker, assignment.hit.batch)
    logger.info("Assignment(%s) approved on %s", assignment.pk, provider.name)
    events.assignment_decided(assignment)
    _top_up(assignment)


def _top_up(assignment: Assignment) -> None:
    """Pay the floor-wage top-up of a just approved assignment (:mod:`crowd.services.fair_pay`).

    The approval stands whatever happens here: a refused or deferred top-up is logged, and approving
    again (or ``review_batch --bonus`` with the same key) pays it once.
    """
    from crowd.services.fair_pay import FLOOR_OPTION, top_up_to_floor

    if not assignment.hit.batch.options.get(FLOOR_OPTION):
        return
    assignment.refresh_from_db(fields=["status", "active_seconds"])
    try:
        top_up_to_floor(assignment)
    except (ReviewError, LedgerError) as exc:
        logger.warning("Assignment(%s): floor-wage top-up not paid: %s", assignment.pk, exc)


def reject_assignment(assignment: Assignment, reason: str, category: str = "OTHER") -> None:
    """Reject a submission on its platform, then locally (the reason is shown to the worker).

    Prolific needs a message of at least 100 characters and a rejection category; both are checked
    before anything is sent.

    Raises:
        ReviewError: empty / too short reason, wrong state, or the platform refused.
    """
    assignment = _load(assignment)
    reason = checked_text(reason, "reason", f"Assignment({assignment.pk})")
    if not reason:
        raise ReviewError(f"Assignment({assignment.pk}): a rejection needs a reason the worker can read")
    if assignment.status == Assignment.Status.REJECTED:
        return
    if assignment.status != Assignment.Status.SUBMITTED:
        raise ReviewError(
            f"Assignment({assignment.pk}) is {assignment.status}; only submitted work is rejected"
        )
    provider, published, ref = _platform(assignment)
    with transaction.atomic():
        local_review.reject(assignment, reason)
        try:
            provider.reject(published, ref, reason, category)
        except errors.NotFoundError as exc:
            # An id the platform never issued (made up at arrival): nothing there to disagree with.
            note = {**assignment.platform_meta, PLATFORM_CHECK: f"{provider.name} has no assignment {ref}"}
            Assignment.objects.filter(pk=assignment.pk).update(platform_meta=note)
            logger.warning("Assignment(%s) rejected here only: %s", assignment.pk, exc)
        except errors.ProviderError as exc:
            raise ReviewError(
                f"Assignment({assignment.pk}) reject on {provider.name}: {exc.message}"
            ) from exc
    logger.info("Assignment(%s) rejected on %s", assignment.pk, provider.name)
    events.assignment_decided(assignment)


def bonus(
    assignment: Assignment,
    amount_cents: int,
    reason: str,
    key: Optional[str] = None,
    confirm_no_work: bool = False,
) -> PaymentResult:
    """Pay a bonus once per key (default ``bonus-<assignment>-<slug(reason)>``), even across crashes.

    Must run outside ``transaction.atomic()`` (the ledger row is committed before the platform call).
    Concurrent calls with one key are serialised by the key's payment claim: the second waits for the
    first and then finds the key paid.

    A pay request whose answer was lost (now, or by an earlier run) is settled from the platform's own
    record (MTurk's ListBonusPayments, Prolific's submission ``bonus_payments``): paid there, it is
    confirmed; listed nowhere once the settling time has passed (``CROWDQA_PAYMENT_SETTLE_SECONDS``),
    it is sent again, once.

    Returns:
        The provider's ``PaymentResult``: PAID, ALREADY_PAID (an earlier run paid it), or UNCONFIRMED
        when the answer was lost and the record cannot tell yet (``resolve_payments`` settles it later).

    Raises:
        ReviewError: bad amount or reason, over budget, the platform refused, or another caller has been
            paying the same key for longer than the claim's wait.
    """
    require_no_transaction("bonus()")
    assignment = _load(assignment)
    if amount_cents <= 0:
        raise ReviewError(f"Assignment({assignment.pk}): a bonus must be positive, got {amount_cents} cents")
    reason = checked_text(reason, "reason", f"Assignment({assignment.pk})")
    if not reason:
        raise ReviewError(f"Assignment({assignment.pk}): a bonus needs a reason")
    _require_work(assignment, "paid a bonus", confirm_no_work)
    key = key or bonus_key(assignment, reason)
    try:
        with payment_claim(key):
            result = _pay_bonus(assignment, amount_cents, reason, key)
    except PaymentBusyError as exc:
        raise ReviewError(f"Assignment({assignment.pk}) bonus {key}: {exc}") from exc
    logger.info("Assignment(%s) bonus %s: %s", assignment.pk, key, result.status.value)
    return result


def _pay_bonus(assignment: Assignment, amount_cents: int, reason: str, key: str) -> PaymentResult:
    """Check the budget and pay through the provider; the caller holds the key's payment claim."""
    batch = assignment.hit.batch
    if not Payment.objects.filter(idempotency_key=key).exists():
        cost = amount_cents + bonus_fee_cents(amount_cents, fees_for(batch.provider))
        spent = spent_cents(batch)["total"]
        budget = check_budget(cost, spent, batch.budget_cap_cents)
        if not budget.allowed:
            events.budget_reached(batch, spent, trigger="payment_refused", refused_cents=cost)
            raise ReviewError(
                f"Assignment({assignment.pk}): a bonus of {amount_cents} cents would exceed "
                f"Batch({batch.pk})'s budget ({budget.remaining_cents + cost} cents left)"
            )
    provider, published, ref = _platform(assignment)
    _vouched(assignment, provider, published, ref)
    store = DbPaymentStore(batch, assignment.worker, assignment, kind=Payment.Kind.BONUS, reason=reason)
    worker_id = assignment.worker.platform_id
    try:
        result = provider.bonus(published, ref, worker_id, amount_cents, reason, key, store)
    except (errors.TransientError, errors.RateLimitedError) as exc:
        # The pay request went out and no answer came back: the platform's record says what happened.
        row = Payment.objects.filter(idempotency_key=key, status=Payment.Status.SENT).first()
        if row is not None and _settle(row) == Payment.Status.CONFIRMED:
            return PaymentResult(key, PaymentStatus.PAID, row.platform_ref, amount_cents, worker_id)
        raise ReviewError(
            f"Assignment({assignment.pk}) bonus {key} on {provider.name}: {exc}; "
            + (f"payment UNKNOWN: {UNKNOWN_ADVICE}" if row is not None else "nothing was paid: try again")
        ) from exc
    except errors.ProviderError as exc:
        raise ReviewError(f"Assignment({assignment.pk}) bonus {key} on {provider.name}: {exc}") from exc
    if result.status != PaymentStatus.UNCONFIRMED:
        return result
    row = Payment.objects.get(idempotency_key=key)
    settled = _settle(row)
    if settled == Payment.Status.CONFIRMED:
        return replace(result, status=PaymentStatus.ALREADY_PAID)
    if settled == Payment.Status.FAILED:  # the record shows no payment: send it again, once
        logger.warning("Payment %s: not on %s's record; sending it again", key, provider.name)
        try:
            return provider.bonus(published, ref, worker_id, amount_cents, reason, key, store)
        except errors.ProviderError as exc:
            raise ReviewError(f"Assignment({assignment.pk}) bonus {key} on {provider.name}: {exc}") from exc
    return result


UNKNOWN_ADVICE = (
    "the platform did not answer; run `manage.py resolve_payments` (or the same bonus again) later: it "
    "settles the payment from the platform's own record and sends it again only if the record shows none"
)


def settle_time() -> timedelta:
    """How long after a pay request a platform's record is trusted to list it (Prolific pays later)."""
    return timedelta(seconds=float(getattr(settings, "CROWDQA_PAYMENT_SETTLE_SECONDS", 600)))


def _settle(row: Payment) -> Optional[str]:
    """Settle an unanswered (``sent``) bonus from the platform's record; None when it cannot be read.

    Returns ``confirmed``, ``failed`` (not on the record after the settling time), ``sent`` (not listed
    yet: still unknown), or None (the platform keeps no record crowdqa reads, or it could not be read).
    """
    try:
        return resolve_payment(row)
    except ReviewError as exc:
        logger.warning("Payment %s stays unknown: %s", row.idempotency_key, exc)
        return None


def resolve_payment(payment: Payment, paid: Optional[bool] = None) -> str:
    """Settle a payment whose answer was lost (``sent``, never confirmed) against the platform's record.

    Args:
        payment: a ``sent`` bonus row.
        paid: what a person saw on the platform's dashboard; None to ask the platform's own record
            (MTurk's ListBonusPayments: paid when it lists more bonuses of this amount for the
            assignment than the ledger already holds as confirmed).

    Returns:
        ``confirmed`` (it was paid), ``failed`` (it was not: a new attempt with the same key may pay), or
        ``sent`` (the record does not list it yet and the pay request is younger than ``settle_time``:
        still unknown).

    Raises:
        ReviewError: not a sent bonus, or the platform keeps no record and ``paid`` was not given.
    """
    payment = Payment.objects.select_related("assignment__hit__batch", "worker").get(pk=payment.pk)
    if payment.kind != Payment.Kind.BONUS or payment.status != Payment.Status.SENT:
        raise ReviewError(
            f"Payment({payment.idempotency_key}) is a {payment.status} {payment.kind}: nothing to resolve"
        )
    source = "the researcher's check of the platform"
    if paid is None:
        provider, published, ref = _platform(payment.assignment)
        try:
            amounts = provider.bonuses_on_record(published, ref)
        except errors.ProviderError as exc:
            raise ReviewError(
                f"Payment({payment.idempotency_key}): {provider.name} record unreadable: {exc}"
            ) from exc
        if amounts is None:
            raise ReviewError(
                f"Payment({payment.idempotency_key}): {provider.name} keeps no bonus record crowdqa reads; "
                "check its dashboard, then resolve with paid or not paid"
            )
        confirmed = Payment.objects.filter(
            assignment=payment.assignment,
            kind=Payment.Kind.BONUS,
            amount_cents=payment.amount_cents,
            status=Payment.Status.CONFIRMED,
        ).count()
        paid = amounts.count(payment.amount_cents) > confirmed
        source = f"{provider.name}'s bonus record"
        sent_at = payment.sent_at or payment.created
        if not paid and sent_at is not None and timezone.now() - sent_at < settle_time():
            logger.info("Payment %s: not on %s yet; still unknown", payment.idempotency_key, source)
            return str(Payment.Status.SENT)
    status = Payment.Status.CONFIRMED if paid else Payment.Status.FAILED
    error = "" if paid else f"not paid according to {source}"
    Payment.objects.filter(pk=payment.pk, status=Payment.Status.SENT).update(status=status, error=error)
    logger.warning("Payment %s resolved as %s from %s", payment.idempotency_key, status, source)
    return str(status)


def notify_batch_workers(
    batch: Batch, subject: str, message: str, workers: Optional[list[Worker]] = None
) -> int:
    """Message the workers of a batch (all who took one of its HITs, or ``workers``) on its platform.

    Returns:
        How many workers were messaged.

    Raises:
        ReviewError: empty subject or message, no worker, or the platform refused.
    """
    subject = checked_text(subject, "subject", f"Batch({batch.pk})")
    message = checked_text(message, "message", f"Batch({batch.pk})")
    if not subject or not message:
        raise ReviewError(f"Batch({batch.pk}): a message needs a subject and a text")
    if workers is None:
        workers = list(Worker.objects.filter(assignments__hit__batch=batch).distinct().order_by("pk"))
    if not workers:
        raise ReviewError(f"Batch({batch.pk}) has no workers to message")
    try:
        provider = provider_for(batch)
    except LifecycleError as exc:
        raise ReviewError(str(exc)) from exc
    try:
        provider.notify_workers([w.platform_id for w in workers], subject, message, published_of(batch))
    except errors.ProviderError as exc:
        raise ReviewError(f"Batch({batch.pk}) notify on {provider.name}: {exc}") from exc
    logger.info("Batch(%s): %d worker(s) notified on %s", batch.pk, len(workers), provider.name)
    return len(workers)


def _worker_provider(worker: Worker) -> CrowdProvider:
    try:
        return get_provider(worker.platform, settings)
    except errors.ProviderConfigError as exc:
        raise ReviewError(f"Worker({worker.pk}) platform {worker.platform}: {exc}") from exc


def block_worker(worker: Worker, reason: str) -> None:
    """Block a worker locally and on their platform (no more claims, excluded from future batches).

    The block is written first, in the transaction open while the platform is told; a platform refusal
    undoes it.
    """
    reason = checked_text(reason, "block", f"Worker({worker.pk})")
    provider = _worker_provider(worker)
    with transaction.atomic():
        Worker.objects.filter(pk=worker.pk).update(blocked=True, block_reason=reason)
        try:
            provider.block_worker(worker.platform_id, reason)
        except errors.ProviderError as exc:
            raise ReviewError(f"Worker({worker.pk}) block on {worker.platform}: {exc}") from exc
    worker.refresh_from_db()


def unblock_worker(worker: Worker, reason: str = "") -> None:
    """Lift a block locally and on the platform (a platform refusal undoes the local change)."""
    reason = checked_text(reason, "block", f"Worker({worker.pk})")
    provider = _worker_provider(worker)
    with transaction.atomic():
        Worker.objects.filter(pk=worker.pk).update(blocked=False, block_reason="")
        try:
            provider.unblock_worker(worker.platform_id, reason)
        except errors.ProviderError as exc:
            raise ReviewError(f"Worker({worker.pk}) unblock on {worker.platform}: {exc}") from exc
    worker.refresh_from_db()
