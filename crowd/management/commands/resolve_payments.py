"""``manage.py resolve_payments``: settle bonuses whose answer was lost against the platform's record."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from config.commands import JsonCommand
from crowd.models import Payment
from crowd.providers.traits import named, platform_traits
from crowd.services.review import ReviewError, bonus, resolve_payment


class Command(JsonCommand):
    help = (
        "Settle bonuses sent without a confirmed answer (unknown): from the platform's own record of "
        f"bonuses ({named((t for t in platform_traits() if t.bonus_record_readable), 'and')}), sending "
        "again, once, those the record shows unpaid; or with --paid / --not-paid after checking its "
        "dashboard."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch", type=int, help="Only this batch's payments.")
        parser.add_argument("--key", help="Only the payment with this idempotency key.")
        seen = parser.add_mutually_exclusive_group()
        seen.add_argument(
            "--paid", action="store_true", help="You saw it paid on the platform (needs --key)."
        )
        seen.add_argument(
            "--not-paid", action="store_true", help="You saw it not paid on the platform (needs --key)."
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        rows = Payment.objects.filter(kind=Payment.Kind.BONUS, status=Payment.Status.SENT).order_by("pk")
        if opts["batch"] is not None:
            rows = rows.filter(batch_id=opts["batch"])
        if opts["key"]:
            rows = rows.filter(idempotency_key=opts["key"])
            if not rows.exists():
                raise CommandError(f"no unconfirmed bonus with key {opts['key']!r}")
        elif opts["paid"] or opts["not_paid"]:
            raise CommandError("--paid / --not-paid settle one payment: name it with --key")
        paid = True if opts["paid"] else False if opts["not_paid"] else None
        resolved, unresolved = [], []
        for row in rows.select_related("assignment"):
            try:
                status = resolve_payment(row, paid)
                if status == Payment.Status.FAILED and paid is None and row.assignment is not None:
                    # The record shows no payment: send it again under the same key, once.
                    result = bonus(
                        row.assignment,
                        row.amount_cents,
                        row.reason,
                        key=row.idempotency_key,
                        confirm_no_work=True,
                    )
                    status = f"resent: {result.status.value}"
                elif status == Payment.Status.SENT:
                    status = "unknown: not on the platform's record yet; run this again later"
                resolved.append({"key": row.idempotency_key, "status": status})
            except ReviewError as exc:
                unresolved.append({"key": row.idempotency_key, "error": str(exc)})
        lines = [f"{r['key']}: {r['status']}" for r in resolved]
        lines += [f"{u['key']}: UNRESOLVED: {u['error']}" for u in unresolved]
        self.emit({"resolved": resolved, "unresolved": unresolved}, lines)
        if unresolved:
            raise CommandError(f"{len(unresolved)} payment(s) could not be resolved")
