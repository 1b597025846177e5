"""``manage.py manage_workers``: block, unblock or message crowd workers on their platform."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.models import Batch
from annotation.platforms import Platform
from config.commands import JsonCommand
from crowd.models import Worker
from crowd.services.review import ReviewError, block_worker, notify_batch_workers, unblock_worker


class Command(JsonCommand):
    help = (
        "Block or unblock workers (--block / --unblock with --worker, --reason) or message a batch's "
        "workers (--notify --batch N --subject --message; --worker to pick some)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        action = parser.add_mutually_exclusive_group(required=True)
        action.add_argument("--block", action="store_true", help="Block the --worker(s) (needs --reason).")
        action.add_argument("--unblock", action="store_true", help="Lift the --worker(s)' block.")
        action.add_argument("--notify", action="store_true", help="Message workers of --batch.")
        parser.add_argument(
            "--worker",
            action="append",
            default=[],
            metavar="PSEUDONYM_OR_ID",
            help="A worker by pseudonym or platform id (repeatable).",
        )
        parser.add_argument(
            "--platform", choices=Platform.values(), help="Platform of --worker platform ids."
        )
        parser.add_argument("--batch", type=int, help="The batch whose workers --notify messages.")
        parser.add_argument(
            "--reason",
            default="",
            help="Why (kept with the block; sent where the platform's block takes one).",
        )
        parser.add_argument("--subject", default="", help="Message subject.")
        parser.add_argument("--message", default="", help="Message text.")

    def _worker(self, ref: str, platform: str | None) -> Worker:
        rows = Worker.objects.filter(pseudonym=ref) | Worker.objects.filter(platform_id=ref)
        if platform:
            rows = rows.filter(platform=platform)
        found = list(rows.distinct()[:2])
        if len(found) != 1:
            problem = "no worker" if not found else "more than one worker (give --platform)"
            raise CommandError(f"--worker {ref}: {problem}")
        return found[0]

    def handle(self, *args: Any, **opts: Any) -> None:
        workers = [self._worker(ref, opts["platform"]) for ref in opts["worker"]]
        try:
            if opts["notify"]:
                batch = Batch.objects.filter(pk=opts["batch"]).first() if opts["batch"] else None
                if batch is None:
                    raise CommandError("--notify needs an existing --batch")
                count = notify_batch_workers(batch, opts["subject"], opts["message"], workers or None)
                self.emit({"notified": count, "batch": batch.pk}, [f"{count} worker(s) messaged"])
                return
            if not workers:
                raise CommandError("--block / --unblock need --worker")
            for worker in workers:
                if opts["block"]:
                    if not opts["reason"].strip():
                        raise CommandError("--block needs --reason (it is kept with the worker)")
                    block_worker(worker, opts["reason"])
                else:
                    unblock_worker(worker, opts["reason"])
        except ReviewError as exc:
            raise CommandError(str(exc)) from exc
        verb = "blocked" if opts["block"] else "unblocked"
        self.emit({verb: [w.pseudonym for w in workers]}, [f"{w.pseudonym} {verb}" for w in workers])
