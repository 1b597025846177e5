"""``manage.py review_batch``: list, approve, reject and bonus a batch's submissions on its platform."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db.models import QuerySet

from annotation.models import Assignment, Batch, IllegalTransition
from annotation.qc.common import error_flags
from config.commands import JsonCommand
from crowd.providers import retries
from crowd.providers.base import PaymentStatus
from crowd.providers.traits import named, platform_traits
from crowd.services.batch_jobs import batch_job
from crowd.services.review import (
    UNKNOWN_ADVICE,
    ReviewError,
    approve_assignment,
    bonus,
    evidence_text,
    reject_assignment,
    work_on_file,
)


def submission_error_flags(a: Assignment) -> list[str]:
    """The error-severity QC flags of an assignment's pairs, each code once (review flags do not count)."""
    found = [f for p in a.qa_pairs.all() for f in error_flags(p.qc_flags or [], p.qc_severity or {})]
    return sorted(set(found))


def submission_row(a: Assignment) -> dict[str, Any]:
    """One assignment as the ``--list`` JSON shows it (pseudonym, never the platform id)."""
    flags = [f for p in a.qa_pairs.all() for f in (p.qc_flags or [])]
    return {
        "assignment": a.pk,
        "hit": a.hit_id,
        "worker": a.worker.pseudonym,
        "status": a.status,
        "platform_ref": a.platform_ref,
        "submitted_at": a.submitted_at,
        "seconds": a.time_on_task_seconds,
        "pairs": a.qa_pairs.count(),
        "flags": sorted(set(flags)),
        "error_flags": submission_error_flags(a),
        "restored": bool(a.platform_meta.get("restored")),
        "work_on_file": work_on_file(a),
        "evidence": a.platform_meta.get("evidence") or {},
    }


class Command(JsonCommand):
    help = "Review a batch: --list, --approve-all-passing, --approve ID..., --reject ID --reason, --bonus ID."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch", type=int, required=True, help="The batch.")
        parser.add_argument("--list", action="store_true", help="Print the submissions as JSON.")
        parser.add_argument(
            "--approve-all-passing",
            action="store_true",
            help=(
                "Approve submitted work whose QA pairs have no error-severity QC flag (review flags do "
                "not hold work back); every submission left out is listed under 'skipped' with why."
            ),
        )
        parser.add_argument(
            "--confirm-no-work",
            action="store_true",
            help="With --approve / --bonus: you checked on the platform that work without answers on "
            "file is to be paid anyway.",
        )
        parser.add_argument("--approve", type=int, nargs="+", default=[], metavar="ID", help="Approve these.")
        parser.add_argument(
            "--reject", type=int, metavar="ID", help="Reject this assignment (needs --reason)."
        )
        parser.add_argument(
            "--category",
            default="OTHER",
            help=f"Rejection category on {named(t for t in platform_traits() if t.rejection_categories)} "
            "(elsewhere kept with the reason).",
        )
        parser.add_argument(
            "--bonus", type=int, metavar="ID", help="Pay a bonus to this assignment's worker."
        )
        parser.add_argument("--cents", type=int, help="Bonus amount in cents.")
        parser.add_argument("--key", default=None, help="Bonus idempotency key (default from the reason).")
        parser.add_argument(
            "--reason", default="", help="Reason for --reject / --bonus (shown to the worker)."
        )

    def _assignment(self, batch: Batch, pk: int) -> Assignment:
        assignment = Assignment.objects.filter(pk=pk, hit__batch=batch).first()
        if assignment is None:
            raise CommandError(f"no Assignment({pk}) in Batch({batch.pk})")
        return assignment

    def _approve(
        self, batch: Batch, to_approve: list[Assignment], summary: dict[str, Any], confirm_no_work: bool
    ) -> None:
        """Approve each submission in a ``pay`` job, recording the approved and the refused in ``summary``."""
        with batch_job(batch.pk, "pay", "submissions", len(to_approve)) as job:
            for done, a in enumerate(to_approve, 1):
                self.progress("approving", done, len(to_approve))
                try:
                    approve_assignment(a, confirm_no_work=confirm_no_work)
                    summary["approved"].append(a.pk)
                except (ReviewError, IllegalTransition) as exc:
                    summary["errors"].append({"assignment": a.pk, "error": str(exc)})
                job.report(done)
            job.result = {"approved": len(summary["approved"]), "errors": summary["errors"][:20]}

    def _bonus(self, batch: Batch, opts: dict[str, Any]) -> dict[str, Any]:
        """Pay ``--bonus``'s assignment ``--cents`` once per key; its row of the summary."""
        if not opts["cents"]:
            raise CommandError("--bonus needs --cents N")
        a = self._assignment(batch, opts["bonus"])
        try:
            result = bonus(
                a, opts["cents"], opts["reason"], key=opts["key"], confirm_no_work=opts["confirm_no_work"]
            )
        except ReviewError as exc:
            raise CommandError(str(exc)) from exc
        return {
            "assignment": a.pk,
            "key": result.idempotency_key,
            "status": result.status.value,
            "cents": result.amount_cents,
        }

    def handle(self, *args: Any, **opts: Any) -> None:
        batch = Batch.objects.filter(pk=opts["batch"]).first()
        if batch is None:
            raise CommandError(f"no Batch({opts['batch']})")
        summary: dict[str, Any] = {
            "batch": batch.pk,
            "approved": [],
            "rejected": [],
            "bonuses": [],
            "errors": [],
            "skipped": [],
            "skipped_no_work": [],
        }
        before = retries.mark()
        rows = Assignment.objects.filter(hit__batch=batch).select_related("worker").order_by("pk")
        to_approve = [self._assignment(batch, pk) for pk in opts["approve"]]
        if opts["approve_all_passing"]:
            to_approve += _passing(rows, summary)
        if to_approve:
            self._approve(batch, to_approve, summary, opts["confirm_no_work"])
        if opts["reject"] is not None:
            a = self._assignment(batch, opts["reject"])
            try:
                reject_assignment(a, opts["reason"], opts["category"])
            except (ReviewError, IllegalTransition) as exc:
                raise CommandError(str(exc)) from exc
            summary["rejected"].append(a.pk)
        if opts["bonus"] is not None:
            summary["bonuses"].append(self._bonus(batch, opts))
        if opts["list"]:
            summary["submissions"] = [submission_row(a) for a in rows.prefetch_related("qa_pairs")]
        lines = [
            f"Assignment({s['assignment']}): skipped, {s['reason'].replace('_', ' ')} ({s['detail']})"
            for s in summary["skipped"]
        ]
        lines += [
            f"Assignment({b['assignment']}) bonus {b['key']}: {b['status']}"
            + (f" ({UNKNOWN_ADVICE})" if b["status"] == PaymentStatus.UNCONFIRMED.value else "")
            for b in summary["bonuses"]
        ]
        retried = retries.since(before)
        if retried:
            summary["retried"] = retried
            lines.append(retries.describe(retried))
        self.emit(summary, lines)
        if summary["errors"]:
            raise CommandError(
                f"{len(summary['errors'])} assignment(s) could not be approved: {summary['errors']}"
            )


def _passing(rows: QuerySet[Assignment], summary: dict[str, Any]) -> list[Assignment]:
    """The submitted assignments of ``rows`` with work on file and no QC error; the others are recorded in
    ``summary`` as skipped, with why."""
    passing = []
    for a in rows.filter(status=Assignment.Status.SUBMITTED).prefetch_related("qa_pairs"):
        errors = submission_error_flags(a)
        if not work_on_file(a):
            summary["skipped_no_work"].append({"assignment": a.pk, "evidence": evidence_text(a)})
            summary["skipped"].append(
                {"assignment": a.pk, "reason": "no_work_on_file", "detail": evidence_text(a)}
            )
        elif errors:
            summary["skipped"].append(
                {"assignment": a.pk, "reason": "qc_errors", "detail": ", ".join(errors)}
            )
        else:
            passing.append(a)
    return passing
