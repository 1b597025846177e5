"""``manage.py sync_batches``: reconcile published batches with their platforms (the periodic job)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.models import Batch
from config.commands import JsonCommand
from crowd.providers import retries
from crowd.providers.traits import arriving, named

ATTENTION_ADVICE = (
    "open each batch's page and check on the platform whether its HITs or study were deleted or expired; "
    "approvals and bonuses are held until a sync reads the platform again: restore the work there and run "
    "sync_batches again, or cancel the batch from its page and settle its workers with review_batch or "
    "resolve_payments"
)


class Command(JsonCommand):
    help = (
        f"Sync batches with {named(arriving(), '/')}: restore lost submissions, follow status changes, "
        "budget."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch", type=int, help="Only this batch (default: every published one).")
        parser.add_argument("--sync", action="store_true", help="Run here instead of through the queue.")

    def handle(self, *args: Any, **opts: Any) -> None:
        from crowd.tasks import sync_batches

        if opts["batch"] is not None and not Batch.objects.filter(pk=opts["batch"]).exists():
            raise CommandError(f"no Batch({opts['batch']})")
        if not opts["sync"]:
            result = sync_batches.delay(opts["batch"])
            self.emit({"queued": True, "task_id": result.id, "batch": opts["batch"]})
            return
        before = retries.mark()
        result = sync_batches(opts["batch"])
        retried = retries.since(before)
        lines = [
            f"Batch({r['batch']}): "
            + (
                f"publish resumed ({r['publish_resumed']} HITs on the platform); "
                if r.get("publish_resumed")
                else ""
            )
            + f"{r['restored']} restored, {r['changed']} changed, "
            f"{r['expired']} expired, {r['missing_flagged']} submitted here but missing on the platform"
            + (f"; NEEDS ATTENTION: {r['needs_attention']}" if r.get("needs_attention") else "")
            + (f"; PUBLISH FAILED: {r['publish_error']}" if r.get("publish_error") else "")
            for r in result["batches"]
        ]
        lines += [f"Batch({f['batch']}) FAILED: {f['error']}" for f in result["failed"]]
        if retried:
            lines.append(retries.describe(retried))
        self.emit({"queued": False, **result, "retried": retried}, lines)
        problems = []
        if result["failed"]:
            problems.append(f"{len(result['failed'])} batch(es) failed to sync: {result['failed']}")
        if result["needs_attention"]:
            names = ", ".join(f"Batch({a['batch']})" for a in result["needs_attention"])
            count = len(result["needs_attention"])
            problems.append(f"{count} batch(es) need attention ({names}): {ATTENTION_ADVICE}")
        if problems:
            raise CommandError("; ".join(problems))
