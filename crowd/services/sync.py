"""Bring crowdqa's view of a batch in line with its platform (polling, webhooks, after a crash).

Why: a web server or worker can die between a worker's submission on MTurk and its arrival in our
database, or between a platform approval and the local one. ``sync_batch`` asks the provider to
``reconcile`` the platform's submissions with the local statuses and repairs the difference:
unknown submissions are restored (worker and assignment rows; MTurk's stored answers become the
assignment's answers, marked ``platform_meta["restored"]``), changed ones follow the platform (auto-approval
-> approved with its reward row; returned / timed out -> returned / expired). It also finishes work
a crash may have left half done: HITs created locally but not yet on the platform (SciQ stage 2,
``publish_pending_hits``) and screening qualifications the platform refused (``retry_pending_grants``).
Running it twice changes nothing the second time.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Optional

from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.http import QueryDict
from django.utils import timezone

from annotation.hits import handler_for
from annotation.models import HIT, Assignment, Batch, IllegalTransition
from crowd.models import BatchPlatformState, Worker
from crowd.providers import errors
from crowd.providers.base import CrowdProvider, PlatformSubmission, PublishedBatch, SubmissionStatus
from crowd.providers.local.provider import NEUTRAL_STATUS
from crowd.providers.traits import hosted_platforms, traits_for
from crowd.services import local_review
from crowd.services.batch_jobs import Tracker, batch_job
from crowd.services.budget import enforce_budget
from crowd.services.lifecycle import LifecycleError, provider_for
from crowd.services.publishing import follows_parent, publish, publish_pending_hits, published_of
from crowd.services.qualifications import qualify_worker, retry_pending_grants
from crowd.services.review import NO_WORK_ON_FILE, record_approval
from crowd.services.sync_pass import SyncPass, still_changing
from crowd.services.vouching import confirm_listed

logger = logging.getLogger(__name__)

NEEDS_ATTENTION = "needs_attention"
"""Sync's count naming a batch the platform no longer knows (its HITs or study are gone): the reason is
kept in ``BatchPlatformState.attention_reason``."""

SYNCABLE = (Batch.Status.PUBLISHED, Batch.Status.PAUSED, Batch.Status.COMPLETED)


class SyncError(Exception):
    """The platform could not be read; the message names the batch."""


class TransientSyncError(SyncError):
    """The platform could not be read for a reason that may pass (network, 5xx, throttling): retry."""


def _note(assignment: Assignment, reason: str) -> None:
    """Record on the assignment why sync changed it (shown to the researcher)."""
    assignment.refresh_from_db(fields=["platform_meta"])
    Assignment.objects.filter(pk=assignment.pk).update(
        platform_meta={
            **assignment.platform_meta,
            "sync_reason": reason,
            "synced_at": timezone.now().isoformat(),
        }
    )
    assignment.refresh_from_db()


def _fields(answers: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    """Platform answers -> form fields as the HIT page stores them (one value: str; several: list)."""
    fields: dict[str, Any] = {}
    for key, values in answers.items():
        if key in ("assignmentId", "crowdqa"):
            continue
        fields[key] = values[0] if len(values) == 1 else list(values)
    return fields


def _store_with_handler(assignment: Assignment, fields: dict[str, Any]) -> bool:
    """Submit restored answers through the batch's HIT handler (QA pairs too); False when they do not pass.

    Runs inside the caller's transaction.
    """
    try:
        handler = handler_for(assignment.hit.batch.kind)
        query = QueryDict(mutable=True)
        for key, value in fields.items():
            query.setlist(key, value if isinstance(value, list) else [value])
        check = handler.check(assignment.hit, assignment, handler.fields_from(query))
    except Exception:  # noqa: BLE001 - a handler problem must not stop the restore of the raw answers
        logger.exception("Assignment(%s): restored answers could not be checked", assignment.pk)
        return False
    if not check.ok:
        return False
    try:
        with transaction.atomic():
            handler.submit(assignment, check)
    except Exception:  # noqa: BLE001 - e.g. the passage was taken meanwhile: keep the raw answers instead
        logger.exception("Assignment(%s): restored answers could not be stored as QA pairs", assignment.pk)
        assignment.refresh_from_db()
        return False
    return True


def _submit_restored(assignment: Assignment, sub: PlatformSubmission) -> None:
    """Submit a locally accepted assignment with the answers the platform kept (or none)."""
    fields = _fields(sub.answers or {})
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().select_related("hit__batch").get(pk=assignment.pk)
        if locked.status != Assignment.Status.ACCEPTED:
            return
        locked.platform_meta = {
            **locked.platform_meta,
            "restored": True,
            "restored_at": timezone.now().isoformat(),
            "answers_from_platform": sub.answers is not None,
            NO_WORK_ON_FILE: not fields,
            "evidence": sub.evidence(),
        }
        locked.save(update_fields=["platform_meta"])
        if not (fields and _store_with_handler(locked, fields)):
            locked.submit(fields or dict(locked.draft), now=sub.submitted_at)
        locked.hit.complete_if_done()
    logger.warning("Assignment(%s) restored from %s as submitted", assignment.pk, sub.platform_assignment_id)


def _restore(batch: Batch, sub: PlatformSubmission, counts: dict[str, int]) -> Optional[Assignment]:
    """Create the worker and assignment of a submission the database never heard of."""
    if sub.status in (SubmissionStatus.ACTIVE, SubmissionStatus.RETURNED, SubmissionStatus.TIMED_OUT):
        return None  # nothing to keep: still working, or gone
    hit = (
        batch.hits.filter(platform_ref=sub.platform_unit_id).first()
        if traits_for(batch.provider).unit_per_hit
        else None
    )
    existing = Assignment.objects.filter(hit__batch=batch, platform_ref=sub.platform_assignment_id).first()
    if hit is None and existing is None:
        # Prolific keeps no answers and names only the study: without a local assignment there is nothing
        # to restore; report it so the researcher can review it on Prolific.
        counts["unmatched"] += 1
        logger.warning(
            "Batch(%s) submission %s has no local assignment", batch.pk, sub.platform_assignment_id
        )
        return None
    worker = Worker.objects.get_or_create_for(batch.provider, sub.worker_id)
    assignment = existing
    if assignment is None:
        # The platform lists it, for this worker on this HIT: a session it vouches for, with a row of its
        # own (the worker's other sessions on the HIT, unconfirmed, are left as they are).
        try:
            with transaction.atomic():
                assignment = Assignment.objects.create(
                    hit=hit,
                    worker=worker,
                    platform_ref=sub.platform_assignment_id,
                    accepted_at=sub.accepted_at or timezone.now(),
                    platform_meta={"restored": True},
                    vouched=True,
                )
        except IntegrityError:
            assignment = Assignment.objects.filter(platform_ref=sub.platform_assignment_id).first()
            if assignment is None:
                counts["conflicts"] += 1
                logger.warning(
                    "Batch(%s) submission %s: the worker already has confirmed work on this HIT",
                    batch.pk,
                    sub.platform_assignment_id,
                )
                return None
    counts["restored"] += 1
    if assignment.status in (Assignment.Status.RETURNED, Assignment.Status.EXPIRED):
        assignment.reopen(assignment.expires_at, sub.platform_assignment_id)
    if assignment.status == Assignment.Status.ACCEPTED:
        _submit_restored(assignment, sub)
    assignment.refresh_from_db()
    return assignment


def _apply(assignment: Assignment, sub: PlatformSubmission, counts: dict[str, int]) -> None:
    """Make the local assignment follow the platform's status, and record why."""
    status = sub.status
    platform = assignment.hit.batch.provider
    try:
        if status == SubmissionStatus.SUBMITTED and assignment.status == Assignment.Status.ACCEPTED:
            _submit_restored(assignment, sub)
        elif status == SubmissionStatus.APPROVED:
            if assignment.status == Assignment.Status.ACCEPTED:
                _submit_restored(assignment, sub)
                assignment.refresh_from_db()
            record_approval(assignment, confirmed=True)
            if handler_for(assignment.hit.batch.kind).qualifies_workers:
                qualify_worker(assignment.worker, assignment.hit.batch)  # as approve_assignment does
        elif status == SubmissionStatus.REJECTED:
            if assignment.status == Assignment.Status.ACCEPTED:
                _submit_restored(assignment, sub)
                assignment.refresh_from_db()
            if assignment.status == Assignment.Status.SUBMITTED:
                local_review.reject(assignment, f"Rejected on {assignment.hit.batch.provider}.")
        elif status == SubmissionStatus.RETURNED and assignment.status == Assignment.Status.ACCEPTED:
            assignment.return_()
        elif status == SubmissionStatus.TIMED_OUT and assignment.status == Assignment.Status.ACCEPTED:
            assignment.expire()
        else:
            counts["ignored"] += 1
            return
    except IllegalTransition as exc:
        counts["conflicts"] += 1
        logger.warning("Assignment(%s) cannot follow the platform (%s): %s", assignment.pk, status.value, exc)
        _note(assignment, f"{platform} says {sub.platform_status or status.value}; cannot follow: {exc}")
        return
    counts["changed"] += 1
    _note(assignment, f"{sub.platform_status or status.value} on {platform}")


def settled_units(batch: Batch) -> set[str]:
    """Platform ids of the batch's HITs on which nothing can change any more (MTurk: a HIT per unit).

    A HIT whose every slot (``max_assignments``) holds an approved or rejected assignment its platform
    vouched for (a made-up MTurk id rejected here never settles a HIT), and which holds
    no other live work, has no submission left to arrive and no decision left to follow: sync does not
    list its assignments again. A Prolific study is one unit and is always read.
    """
    if not traits_for(batch.provider).unit_per_hit:
        return set()
    decided = (Assignment.Status.APPROVED, Assignment.Status.REJECTED)
    gone = (Assignment.Status.EXPIRED, Assignment.Status.RETURNED)
    rows = (
        HIT.objects.filter(batch=batch)
        .exclude(platform_ref="")
        .annotate(
            decided=Count(
                "assignments", filter=Q(assignments__status__in=decided, assignments__vouched=True)
            ),
            live=Count("assignments", filter=~Q(assignments__status__in=decided + gone)),
        )
        .values_list("platform_ref", "max_assignments", "decided", "live")
    )
    return {
        ref for ref, slots, done, live in rows if live == 0 and done >= max(slots, batch.assignments_per_hit)
    }


def _missing_resolved(assignment: Assignment) -> bool:
    """True for local work absent on the platform that an earlier sync already settled or flagged."""
    return assignment.status in (Assignment.Status.EXPIRED, Assignment.Status.RETURNED) or bool(
        assignment.platform_meta.get("missing_on_platform")
    )


def _resolve_missing(batch: Batch, assignments: list[Assignment], counts: dict[str, Any]) -> None:
    """Settle local work the platform does not list (MTurk lists only submitted work).

    Accepted work whose time limit has passed was abandoned or returned on the platform: it expires
    locally, freeing its slot. Submitted work the platform never received (the deadline passed between
    the local commit and the post to the platform) is marked for the researcher, who can pay it by
    bonus: approving it on the platform is impossible.
    """
    now = timezone.now()
    for assignment in assignments:
        if assignment.status == Assignment.Status.ACCEPTED:
            if assignment.expires_at is not None and assignment.expires_at <= now:
                if assignment.expire_if_overdue():
                    _note(assignment, f"abandoned or returned on {batch.provider}: time limit passed")
                    counts["expired"] += 1
            continue
        if assignment.status == Assignment.Status.SUBMITTED and not assignment.platform_meta.get(
            "missing_on_platform"
        ):
            Assignment.objects.filter(pk=assignment.pk).update(
                platform_meta={**assignment.platform_meta, "missing_on_platform": True}
            )
            assignment.refresh_from_db()
            _note(
                assignment,
                f"submitted here but {batch.provider} has no submission (abandoned there): "
                "it cannot be approved on the platform; pay it by bonus or reject it here",
            )
            counts["missing_flagged"] += 1


def sync_batch(batch: Batch) -> dict[str, Any]:
    """Reconcile one batch with its platform and enforce its budget cap.

    First publishes HITs the platform does not know yet (a refusal is reported in ``publish_error``
    and retried next time; it does not stop the reconcile) and retries the batch's pending
    qualification grants.

    A draft whose publish failed or was killed (``half_published``) is published first: the HITs or
    study the stopped attempt made are adopted (``publish_resumed`` counts the batch's units).

    Returns:
        Counts: ``units_skipped`` (HITs not read again, see ``settled_units``), ``restored``,
        ``confirmed`` (sessions the platform now vouches for, see ``confirm_listed``), ``disowned`` (listed
        under another worker or HIT than the local session's), ``changed``,
        ``unchanged``, ``missing`` (local work the platform does not
        list, newly found: an earlier sync's expired or flagged work is ``missing_known``), ``unmatched``,
        ``conflicts``,
        ``ignored``, ``hits_published``, ``grants_synced``, ``grants_pending`` and ``budget_stopped``
        (plus ``publish_error`` when new HITs could not be published).

    A batch the platform no longer knows (its HITs or study are gone) is marked needing attention
    (``BatchPlatformState.attention_reason``, reported in the counts) instead of failing row by row; the mark
    is cleared by the next sync that reads the platform.

    Raises:
        TransientSyncError: the platform could not be reached or throttled us (retry with backoff).
        SyncError: the platform refused otherwise (the next run retries).
    """
    batch.refresh_from_db()
    counts: dict[str, Any] = dict.fromkeys(
        (
            "restored",
            "changed",
            "unchanged",
            "missing",
            "unmatched",
            "conflicts",
            "ignored",
            "expired",
            "missing_flagged",
            "missing_known",
            "confirmed",
            "disowned",
        ),
        0,
    )
    counts["batch"] = batch.pk
    if half_published(batch):
        try:
            counts["publish_resumed"] = len(publish(batch).units)
        except LifecycleError as exc:
            counts["publish_resumed"] = 0
            counts["publish_error"] = str(exc)
            logger.warning("%s", exc)
            return counts
        batch.refresh_from_db()
    try:
        counts["hits_published"] = publish_pending_hits(batch)["published"]
    except LifecycleError as exc:
        counts["hits_published"] = 0
        counts["publish_error"] = str(exc)
        logger.warning("%s", exc)
    counts.update(retry_pending_grants(batch))
    batch.refresh_from_db()
    published = published_of(batch)
    if published is not None and traits_for(batch.provider).external:
        unit = "HITs" if traits_for(batch.provider).unit_per_hit else "submissions"
        with batch_job(batch.pk, "sync", unit) as tracker:
            try:
                _read_platform(batch, published, counts, tracker)
            except errors.NotFoundError as exc:
                counts[NEEDS_ATTENTION] = f"{batch.provider} no longer knows this batch: {exc}"
                _mark_attention(batch, counts[NEEDS_ATTENTION])
                logger.warning("Batch(%s) needs attention: %s", batch.pk, exc)
                tracker.result = {NEEDS_ATTENTION: counts[NEEDS_ATTENTION]}
                return counts
            except (errors.RateLimitedError, errors.TransientError) as exc:
                raise TransientSyncError(
                    f"Batch({batch.pk}) sync with {batch.provider} stopped after {counts.get('steps', 0)} "
                    f"step(s); the next run goes on from there: {exc}"
                ) from exc
            except errors.ProviderError as exc:
                raise SyncError(f"Batch({batch.pk}) sync with {batch.provider}: {exc}") from exc
        if BatchPlatformState.of(batch.pk).attention_reason:
            _mark_attention(batch, None)
    for hit in HIT.objects.filter(batch=batch, status=HIT.Status.OPEN):
        hit.complete_if_done()
    counts["budget_stopped"] = enforce_budget(batch)
    logger.info("Batch(%s) synced: %s", batch.pk, counts)
    return counts


def _read_platform(batch: Batch, published: PublishedBatch, counts: dict[str, Any], tracker: Tracker) -> None:
    """Read the batch's submissions step by step, applying each step and storing where the pass got to.

    A run that stops (kill, a platform that keeps failing) leaves the cursor of the next step in
    ``BatchPlatformState.sync_cursor``; the next run goes on from it (``resumed``). Every step is
    compared with the local statuses as they were when the run began and applied at once, so a step
    read twice (killed after applying, before its cursor was stored) finds its work already here.
    """
    provider = provider_for(batch)
    settled = settled_units(batch)
    counts["units_skipped"] = len(settled)
    rows = list(
        Assignment.objects.filter(hit__batch=batch)
        .exclude(platform_ref="")
        .exclude(hit__platform_ref__in=settled)
        .select_related("hit__batch")
    )
    by_ref = {a.platform_ref: a for a in rows}
    run = SyncPass.begin(batch.pk, study_wide=not traits_for(batch.provider).unit_per_hit)
    counts["steps"] = 0
    done = _read_steps(batch, provider, published, run, settled, by_ref, counts, tracker)
    tracker.result = {"read": done, **run.summary()}
    if run.study_wide:
        decided = (Assignment.Status.APPROVED, Assignment.Status.REJECTED)
        _settle_missing(
            batch,
            [a for ref, a in by_ref.items() if ref not in run.seen and (run.full or a.status not in decided)],
            counts,
        )
    run.finish()
    counts.update(run.summary())


def _read_steps(
    batch: Batch,
    provider: CrowdProvider,
    published: PublishedBatch,
    run: SyncPass,
    settled: set[str],
    by_ref: dict[str, Assignment],
    counts: dict[str, Any],
    tracker: Tracker,
) -> int:
    """Read, apply and record each step of the pass; return how many HITs / submissions were read."""
    local = {ref: NEUTRAL_STATUS[a.status] for ref, a in by_ref.items()}
    done = 0
    for page in provider.submission_pages(published, run.cursor, frozenset(settled)):
        if page.first:
            run.restart()
        for sub in page.submissions:
            known = local.get(sub.platform_assignment_id)
            if known is None:
                _restore(batch, sub, counts)
            elif not confirm_listed(by_ref[sub.platform_assignment_id], sub, counts):
                continue
            elif known != sub.status:
                _apply(by_ref[sub.platform_assignment_id], sub, counts)
            else:
                counts["unchanged"] += 1
        if page.units is not None:
            listed = {s.platform_assignment_id for s in page.submissions}
            units = set(page.units)
            _settle_missing(
                batch,
                [a for ref, a in by_ref.items() if a.hit.platform_ref in units and ref not in listed],
                counts,
            )
        ids = [s.platform_assignment_id for s in page.submissions]
        local_now = {
            ref: NEUTRAL_STATUS[status]
            for ref, status in Assignment.objects.filter(hit__batch=batch, platform_ref__in=ids).values_list(
                "platform_ref", "status"
            )
        }
        run.step_done(page, still_changing=still_changing(page, local_now))
        counts["steps"] = run.steps
        done += len(page.submissions) if page.units is None else len(page.units)
        tracker.report(done, None if page.left is None else done + page.left)
    return done


def _settle_missing(batch: Batch, missing: list[Assignment], counts: dict[str, Any]) -> None:
    """Count local work the platform did not list (new, or settled by an earlier sync); settle it."""
    known = [a for a in missing if _missing_resolved(a)]
    counts["missing"] += len(missing) - len(known)
    counts["missing_known"] += len(known)
    _resolve_missing(batch, [a for a in missing if not _missing_resolved(a)], counts)


def _mark_attention(batch: Batch, reason: Optional[str]) -> None:
    """Set (or clear, with None) the batch's needs-attention mark in its platform state."""
    BatchPlatformState.change(
        batch.pk, attention_reason=reason or "", attention_at=timezone.now() if reason else None
    )


def half_published(batch: Batch) -> bool:
    """True for a platform draft whose publish started and never finished (failed or killed)."""
    return (
        batch.status == Batch.Status.DRAFT
        and traits_for(batch.provider).external
        and BatchPlatformState.of(batch.pk).publish_started is not None
    )


def batches_to_sync() -> list[int]:
    """Ids of the batches the periodic job syncs, in order.

    Those published on a platform and not cancelled, the drafts whose publish started and never
    finished (the sync finishes it), and the draft stage-2 batches whose stage-1 parent is on the
    platform (their first publish may have crashed).
    """
    live = Batch.objects.filter(status__in=SYNCABLE).exclude(platform_ref="").values_list("pk", flat=True)
    started = (
        Batch.objects.filter(status=Batch.Status.DRAFT, platform_state__publish_started__isnull=False)
        .exclude(provider__in=hosted_platforms())
        .values_list("pk", flat=True)
    )
    drafts = (
        Batch.objects.filter(status=Batch.Status.DRAFT, parent__isnull=False)
        .exclude(provider__in=hosted_platforms())
        .select_related("parent")
    )
    return sorted({*live, *started, *(b.pk for b in drafts if follows_parent(b))})


def batch_for_platform_ref(provider: str, resource_id: str, study_id: str = "") -> Optional[Batch]:
    """Find the batch a webhook talks about: by submission (assignment) id or by study id."""
    assignment = (
        Assignment.objects.filter(platform_ref=resource_id, hit__batch__provider=provider)
        .select_related("hit__batch")
        .first()
    )
    if assignment is not None:
        return assignment.hit.batch
    for ref in (study_id, resource_id):
        if ref:
            batch = Batch.objects.filter(provider=provider, platform_ref=ref).first()
            if batch is not None:
                return batch
    return None
