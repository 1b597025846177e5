"""The payment ledger behind the providers' ``PaymentStore`` and the webhooks' ``DedupStore``.

Why: a bonus must be paid at most once whatever crashes in between. The providers write a
write-ahead record (CREATED -> PAY_REQUESTED -> PAID) *before* the paying call; that record is only a
protection if it is committed when ``put`` returns. ``DbPaymentStore`` therefore refuses to run inside
an open ``transaction.atomic()`` block of the caller (a rollback would erase the PAY_REQUESTED mark and
a retry would pay again): pay outside transactions, then update other rows.

Two callers paying the same key at the same time (a double click, a retried task racing the original)
would both read "nothing paid yet" and both pay. A row lock cannot serialise them, since it would have to
be held in a transaction across the platform call; ``payment_claim`` takes a lease (``PaymentClaim``)
instead: one caller pays, the other waits and then finds the key paid.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, Optional

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from crowd.models import Payment, PaymentClaim, WebhookEvent, Worker
from crowd.providers.base import PaymentRecord, PaymentState

logger = logging.getLogger(__name__)

STATUS_FOR_STATE: dict[PaymentState, str] = {
    PaymentState.CREATED: Payment.Status.PENDING,
    PaymentState.PAY_REQUESTED: Payment.Status.SENT,
    PaymentState.PAID: Payment.Status.CONFIRMED,
    PaymentState.REFUSED: Payment.Status.FAILED,
}
STATE_FOR_STATUS: dict[str, PaymentState] = {v: k for k, v in STATUS_FOR_STATE.items()}
KEY_MAX = 64
"""``Payment.idempotency_key`` length (MTurk's UniqueRequestToken is 64 characters too)."""
CLAIM_LEASE = timedelta(minutes=10)
"""How long a claim protects a payment: far longer than a platform call (its timeouts are seconds), so
only a holder that died loses its claim."""
CLAIM_WAIT_SECONDS = 60.0
"""How long a second caller waits for the first to finish before giving up."""


class LedgerError(RuntimeError):
    """The ledger cannot guarantee durability here (called inside an open transaction)."""


def in_user_transaction() -> bool:
    """Return True when the caller holds an open ``atomic`` block (test-case wrappers do not count).

    pytest-django's non-transactional tests wrap each test in an atomic block marked
    ``_from_testcase``; that block is ignored so that the rule can be tested like production code.
    """
    if not connection.in_atomic_block:
        return False
    return any(not getattr(block, "_from_testcase", False) for block in connection.atomic_blocks)


def require_no_transaction(what: str) -> None:
    """Raise ``LedgerError`` when called inside a caller's transaction.

    Raises:
        LedgerError: naming ``what`` and why.
    """
    if in_user_transaction():
        raise LedgerError(
            f"{what} must run outside transaction.atomic(): a payment record has to be committed before "
            "the platform is called, or a crash could pay twice"
        )


class PaymentBusyError(LedgerError):
    """Another caller is paying this idempotency key and did not finish within the wait."""


def _owner_id() -> str:
    """A claim owner: this host and process (so a dead holder on this host is recognised) and a nonce."""
    return f"{socket.gethostname()[:30]}:{os.getpid()}:{uuid.uuid4().hex[:16]}"


def _holder_dead(owner: str) -> bool:
    """True when ``owner`` names a process on this host that no longer exists (it was killed)."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname()[:30] or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _session_locks() -> bool:
    """True on PostgreSQL, whose session advisory locks end with the holder's connection, on any host."""
    return connection.vendor == "postgresql"


def _lock_id(key: str) -> int:
    """The signed 64-bit advisory lock id of an idempotency key."""
    return int.from_bytes(hashlib.sha256(f"crowdqa-payment:{key}".encode()).digest()[:8], "big", signed=True)


def _session_lock(key: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [_lock_id(key)])
        return bool(cursor.fetchone()[0])


def _session_unlock(key: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s)", [_lock_id(key)])


def _ours(holder: str, owner: str) -> bool:
    """True when ``holder`` is a claim of this process (``owner``'s host and pid)."""
    return holder.rsplit(":", 1)[0] == owner.rsplit(":", 1)[0]


def _insert_claim(key: str, owner: str, now: datetime, lease: timedelta) -> bool:
    """Insert the claim row of ``key``; False when one exists (the key is unique)."""
    try:
        with transaction.atomic():
            PaymentClaim.objects.create(
                idempotency_key=key, owner=owner, acquired_at=now, expires_at=now + lease
            )
    except IntegrityError:
        return False
    return True


def _try_claim_with_session_lock(key: str, owner: str, lease: timedelta) -> bool:
    """PostgreSQL: the session advisory lock of ``key`` decides; the claim row records who holds it.

    Whoever gets the lock holds the only live session that may pay ``key``: a claim row left by another
    process is then a dead holder's (its session, and with it its lock, ended when it died, on whatever
    host it ran), and is taken over at once. A row of this same process is a nested claim and refused.
    """
    if not _session_lock(key):
        return False
    now = timezone.now()
    if _insert_claim(key, owner, now, lease):
        return True
    holder = PaymentClaim.objects.filter(idempotency_key=key).values_list("owner", flat=True).first()
    if holder is not None and _ours(holder, owner):
        _session_unlock(key)
        return False
    PaymentClaim.objects.update_or_create(
        idempotency_key=key, defaults={"owner": owner, "acquired_at": now, "expires_at": now + lease}
    )
    logger.warning("Payment %s: took over the claim of %s, whose database session has ended", key, holder)
    return True


def _try_claim(key: str, owner: str, lease: timedelta) -> bool:
    """Take the claim of ``key`` for ``owner``: new, or one whose holder expired or died; True on success.

    On PostgreSQL a session advisory lock tells a dead holder from a live one on any host
    (:func:`_try_claim_with_session_lock`). Elsewhere (the embedded SQLite default, one host) a holder on
    this host whose process is gone is taken over at once, and any other once its lease expired: the
    ledger rows it left tell the new holder what was already sent.
    """
    if _session_locks():
        return _try_claim_with_session_lock(key, owner, lease)
    now = timezone.now()
    if _insert_claim(key, owner, now, lease):
        return True
    taken = PaymentClaim.objects.filter(idempotency_key=key, expires_at__lte=now).update(
        owner=owner, acquired_at=now, expires_at=now + lease
    )
    if taken:
        logger.warning("Payment %s: took over a claim whose holder did not finish within %s", key, lease)
        return True
    holder = PaymentClaim.objects.filter(idempotency_key=key).values_list("owner", flat=True).first()
    if holder is not None and holder != owner and _holder_dead(holder):
        taken = PaymentClaim.objects.filter(idempotency_key=key, owner=holder).update(
            owner=owner, acquired_at=now, expires_at=now + lease
        )
        if taken:
            logger.warning(
                "Payment %s: took over the claim of %s, a process that no longer exists", key, holder
            )
    return bool(taken)


@contextmanager
def payment_claim(
    key: str,
    lease: timedelta = CLAIM_LEASE,
    wait_seconds: float = CLAIM_WAIT_SECONDS,
    poll_seconds: float = 0.05,
) -> Iterator[None]:
    """Hold the exclusive right to pay ``key`` for the duration of the ``with`` block.

    The claim is committed when the block starts (so it must run outside ``transaction.atomic()``, like
    the ledger writes it protects) and deleted when it ends, also on errors. On PostgreSQL the holder also
    keeps a session advisory lock, so a holder killed on any host is taken over as soon as its
    connection ends (this needs session-level connections: not a transaction-pooling pgbouncer). A
    holder whose connection is replaced mid-payment loses that protection; the ledger's write-ahead rows
    still keep a sent payment from being sent again.

    Args:
        key: the payment's idempotency key.
        lease: how long the claim protects if its holder dies without releasing it.
        wait_seconds: how long to wait for another holder to finish.
        poll_seconds: the interval between attempts while waiting.

    Raises:
        LedgerError: inside a caller's transaction.
        PaymentBusyError: another caller held the claim for longer than ``wait_seconds``.
    """
    require_no_transaction(f"Payment claim {key!r}")
    owner = _owner_id()
    deadline = time.monotonic() + wait_seconds
    while not _try_claim(key, owner, lease):
        if time.monotonic() >= deadline:
            holder = PaymentClaim.objects.filter(idempotency_key=key).first()
            until = holder.expires_at.isoformat() if holder is not None else "now"
            raise PaymentBusyError(
                f"Payment {key!r} is being paid by another process (its claim lasts until {until}); "
                "try again later"
            )
        time.sleep(poll_seconds)
    try:
        yield
    finally:
        PaymentClaim.objects.filter(idempotency_key=key, owner=owner).delete()
        if _session_locks():
            _session_unlock(key)


class DbPaymentStore:
    """A ``PaymentStore`` over the ``Payment`` ledger for one batch / worker / assignment.

    Args:
        batch: the ``annotation.Batch`` the payments belong to.
        worker: the ``crowd.Worker`` paid.
        assignment: the ``annotation.Assignment`` (optional).
        kind: ``Payment.Kind`` of the rows created (bonus unless told).
        reason: stored on created rows.
    """

    def __init__(
        self,
        batch: Any,
        worker: Worker,
        assignment: Any = None,
        kind: str = Payment.Kind.BONUS,
        reason: str = "",
    ) -> None:
        self.batch = batch
        self.worker = worker
        self.assignment = assignment
        self.kind = kind
        self.reason = reason

    def get(self, key: str) -> Optional[PaymentRecord]:
        """Return the record for ``key`` (a ``failed`` row is REFUSED: nothing was paid, a retry may pay)."""
        row = Payment.objects.filter(idempotency_key=key).first()
        if row is None or row.status not in STATE_FOR_STATUS:
            return None
        updated = row.sent_at or row.created
        return PaymentRecord(
            key=key,
            state=STATE_FOR_STATUS[row.status],
            worker_id=self.worker.platform_id if row.worker_id == self.worker.pk else row.worker.platform_id,
            amount_cents=row.amount_cents,
            platform_ref=row.platform_ref,
            updated_at=updated.astimezone(UTC) if updated else datetime.now(UTC),
            setups_in_doubt=row.setups_in_doubt,
        )

    def put(self, record: PaymentRecord) -> None:
        """Create or update the row of ``record.key``, committed when this returns.

        Raises:
            LedgerError: inside a caller's transaction, or for a key longer than 64 characters.
        """
        require_no_transaction(f"Payment {record.key!r}")
        if len(record.key) > KEY_MAX:
            raise LedgerError(f"idempotency key {record.key!r} is longer than {KEY_MAX} characters")
        status = STATUS_FOR_STATE[record.state]
        fields: dict[str, Any] = {
            "status": status,
            "platform_ref": record.platform_ref,
            "error": record.error[:2000],
            "setups_in_doubt": record.setups_in_doubt,
        }
        if record.state != PaymentState.CREATED:
            fields["sent_at"] = timezone.now()
        updated = Payment.objects.filter(idempotency_key=record.key).update(**fields)
        if not updated:
            Payment.objects.create(
                batch=self.batch,
                assignment=self.assignment,
                worker=self.worker,
                kind=self.kind,
                amount_cents=record.amount_cents,
                currency=self.batch.currency,
                reason=self.reason,
                idempotency_key=record.key,
                **fields,
            )
        logger.info("Payment %s is %s (%s)", record.key, status, record.platform_ref or "no platform ref")


class DbDedupStore:
    """A ``DedupStore`` over ``WebhookEvent``: the unique (provider, event_id) drops redeliveries."""

    def __init__(self, provider: str) -> None:
        self.provider = provider

    def add(self, key: str, payload: Optional[dict[str, Any]] = None) -> bool:
        """Record ``key``; return False when it was already recorded (atomic through the unique key)."""
        try:
            with transaction.atomic():
                WebhookEvent.objects.create(provider=self.provider, event_id=key[:200], payload=payload or {})
        except IntegrityError:
            return False
        return True
