"""The admission rule: who may work on what, applied in one place for every way into a HIT.

Every entry path calls this module: the local invite and ``/work/`` next-HIT
(:func:`admit_local`), MTurk and Prolific arrivals and MTurk previews (:func:`admit_arrival`), and the
signed-link pages (task, autosave, submit, return: :func:`admit_link`). The claim mechanics
(:mod:`worker.assigning`) call :func:`check_can_work` and :func:`hit_refusal` inside
the HIT's row lock, so the rule holds under concurrent arrivals too.

The rule (docs/admission.md):

1. A batch admits only arrivals of its own platform. Local batches: signed-in local workers invited to
   that batch (an invite without a batch opens every non-expert local batch; expert batches need an
   expert invite). MTurk batches: MTurk arrivals whose ``hitId`` is one of the batch's HITs. Prolific
   batches: arrivals whose ``STUDY_ID`` is the batch's study.
2. The platform's per-session secret is the credential (MTurk's ``assignmentId``, Prolific's
   ``SESSION_ID``): a local assignment is bound to one platform assignment id, and a different id for
   the same worker never opens it. On MTurk each ``assignmentId`` is its own session and draft: a new
   id (a worker who returned the HIT and accepted it again, or an id someone made up) gets a session of
   its own and never rebinds, returns or reads another one.
3. Batch status, blocks, required qualifications (screening), the per-worker and per-document caps,
   free slots, expert-only batches and "never validate your own question" hold on every path. Slots,
   caps and HIT completion count only sessions the platform vouches for (``Assignment.vouched``): an
   MTurk session counts once MTurk confirmed it as submitted work of that worker on that HIT; before
   that it counts for its worker's cap only on their arrivals from the same client address.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from annotation.hits import handler_for
from annotation.models import HIT, Assignment, Batch, QAPair
from annotation.sql_reads import SqlRead, column, quote
from crowd.models import Invite, Worker
from crowd.providers.arrival import Arrival, ArrivalError
from crowd.providers.factory import config_from
from crowd.providers.traits import parse_arrival, traits_for

logger = logging.getLogger(__name__)


class Refused(Exception):
    """The worker may not have this work; the message is shown to them, with ``status`` as HTTP status."""

    def __init__(self, message: str, status: int = 403) -> None:
        super().__init__(message)
        self.status = status


# --- rules over a batch and a worker ---------------------------------------------------------------


def _invite_read(expert: bool) -> SqlRead[Invite]:
    """One of the worker's invites that opens a batch (or its parent), written once per shape.

    As a queryset: ``Invite.objects.filter(worker=worker).filter(Q(batch=batch) | Q(batch__isnull=True)
    | Q(batch=batch.parent_id))`` (``.filter(is_expert=True)`` for an expert batch), first row only.
    Every local worker's "next HIT" asks it, and Django compiled the queryset each time (about 0.5 ms of
    CPU, more than running it); tests/test_claim_reads.py compares the two.
    """
    batch = f"{{self}}.{column(Invite, 'batch')}"
    where = f"{{self}}.{column(Invite, 'worker')} = %s AND ({batch} IN (%s, %s) OR {batch} IS NULL)"
    if expert:
        where += f" AND {{self}}.{column(Invite, 'is_expert')} = %s"
    return SqlRead(Invite, where=where, limit=1)


_INVITE = _invite_read(expert=False)
_EXPERT_INVITE = _invite_read(expert=True)


def invited_to(batch: Batch, worker: Worker) -> bool:
    """True when a local worker holds an invite that opens ``batch``.

    An invite names its batch (which also opens that batch's stage-2 batches, created from its approved
    work), or no batch (then it opens every non-expert local batch); an expert batch needs an expert
    invite and an expert worker.
    """
    named = (worker.pk, batch.pk, batch.parent_id if batch.parent_id is not None else batch.pk)
    if handler_for(batch.kind).expert_only:
        return worker.is_expert and bool(_EXPERT_INVITE.all(*named, True))
    return bool(_INVITE.all(*named))


def check_platform(batch: Batch, worker: Worker) -> None:
    """Raise :class:`Refused` unless ``worker`` comes from the platform ``batch`` is published on."""
    if worker.platform != batch.provider:
        raise Refused("This task is not offered on the platform you came from.", status=403)
    if not traits_for(batch.provider).external and not invited_to(batch, worker):
        raise Refused("You were not invited to this batch. Ask the researcher for an invite link.")
    if handler_for(batch.kind).expert_only and not worker.is_expert:
        raise Refused("This batch is open to invited experts only.")


def client_key(address: str) -> str:
    """A keyed digest of a client's network address, kept on the sessions it opens (never the address).

    Sessions opened from one address count together for their worker's cap before their platform
    vouches for them (:func:`check_can_work`); the digest is keyed with the secret key so the stored
    value does not give the address back. Empty for an unknown address.
    """
    if not address:
        return ""
    digest = hmac.new(settings.SECRET_KEY.encode(), f"client:{address}".encode(), hashlib.sha256)
    return digest.hexdigest()[:32]


def _unconfirmed_from(batch: Batch, worker: Worker, client: str, hit: Optional[HIT]) -> int:
    """The worker's sessions in ``batch`` opened from ``client`` that may still become work that counts.

    Not vouched for yet, and either open within their time limit or submitted and not found missing on
    the platform by sync (``missing_on_platform``): a worker holding several HITs at once from one
    browser has each of them counted for their cap before the platform confirms any. Their sessions on
    ``hit`` itself (the HIT they arrive on) are not counted: MTurk gives a worker one assignment of a
    HIT at a time, so a new id there follows a return on MTurk (return and accept again).
    """
    if not client:
        return 0
    now = timezone.now()
    open_now = Q(status=Assignment.Status.ACCEPTED) & (Q(expires_at__isnull=True) | Q(expires_at__gt=now))
    # (a negated key lookup would also drop rows without the key: SQL's NULL)
    found = Q(platform_meta__missing_on_platform__isnull=True) | Q(platform_meta__missing_on_platform=False)
    submitted = Q(status=Assignment.Status.SUBMITTED) & found
    sessions = Assignment.objects.filter(hit__batch=batch, worker=worker, vouched=False)
    if hit is not None:
        sessions = sessions.exclude(hit=hit)
    return sessions.filter(platform_meta__client=client).filter(open_now | submitted).count()


def check_can_work(
    batch: Batch, worker: Worker, resuming: bool = False, client: str = "", hit: Optional[HIT] = None
) -> None:
    """Raise :class:`Refused` when the worker may not take any (new) HIT of ``batch``.

    Checks the batch status (a paused batch still lets a worker resume what they hold), blocks, the
    required qualification (``options["required_qualification"]``, granted by a screening batch), the
    per-worker total cap (SyllabusQA) and the budget cap. The caps count work the platform vouches for
    (:meth:`AssignmentQuerySet.vouched`), plus the worker's unconfirmed sessions opened from the same
    client as this arrival (``client``, :func:`client_key`) on other HITs than ``hit``: sessions under
    made-up MTurk ids, which anyone knowing a worker id can open from elsewhere, never use up that
    worker's cap, while a worker who holds several HITs at once from one browser is counted for each
    (docs/admission.md).
    """
    open_statuses = (Batch.Status.PUBLISHED, Batch.Status.PAUSED) if resuming else (Batch.Status.PUBLISHED,)
    if batch.status not in open_statuses:
        raise Refused(
            f"This batch is {batch.get_status_display().lower()}; no work is handed out.", status=409
        )
    if worker.blocked:
        raise Refused("Your account cannot take HITs at the moment.")
    required = batch.options.get("required_qualification")
    if required and not worker.qualifications.filter(name=required, value__gte=1).exists():
        raise Refused("This batch is open to workers who passed its screening task.")
    if resuming:
        return
    per_hit = handler_for(batch.kind).pairs_per_assignment
    if batch.max_pairs_per_worker and per_hit:
        written = QAPair.objects.filter(
            assignment__worker=worker, assignment__hit__batch=batch, assignment__vouched=True
        ).count()
        held = (
            Assignment.objects.filter(hit__batch=batch, worker=worker, status=Assignment.Status.ACCEPTED)
            .vouched()
            .count()
        )
        held += _unconfirmed_from(batch, worker, client, hit)
        if written + (held + 1) * per_hit > batch.max_pairs_per_worker:
            raise Refused(
                "You have reached the maximum number of QA pairs for this batch. Thank you!", status=409
            )
    if batch.budget_cap_cents is not None:
        from crowd.services.budget import budget_allows_one_more

        if not budget_allows_one_more(batch):
            raise Refused("This batch has used its budget; no more work is handed out.", status=409)


def held_slots_sql(condition: str = "") -> str:
    """SQL for the number of slots the sessions of the HIT ``{self}`` hold (``%s``: the returned and
    expired statuses, then True): ``hit.assignments.live().vouched().count()``. ``condition`` adds SQL
    on the counted session ``h``."""
    assignments = quote(Assignment._meta.db_table)
    return (
        f'(SELECT COUNT(*) FROM {assignments} h WHERE h.{column(Assignment, "hit")} = {{self}}."id"'
        f" AND h.{column(Assignment, 'status')} NOT IN (%s, %s)"
        f" AND h.{column(Assignment, 'vouched')} = %s{condition})"
    )


def own_question_sql() -> str:
    """SQL that finds a row when the worker (``%s``) wrote the QA pair the HIT ``{self}`` validates:
    ``QAPair.objects.filter(pk=hit.qa_pair_id, assignment__worker=worker)``."""
    assignments = quote(Assignment._meta.db_table)
    return (
        f"SELECT 1 FROM {quote(QAPair._meta.db_table)} q INNER JOIN {assignments} qa"
        f' ON q.{column(QAPair, "assignment")} = qa."id"'
        f' WHERE q."id" = {{self}}.{column(HIT, "qa_pair")} AND qa.{column(Assignment, "worker")} = %s'
    )


def _slots_read() -> SqlRead[HIT]:
    """A HIT with the slots its sessions hold (``held_slots``, :func:`held_slots_sql`, as
    :meth:`HIT.live_assignment_count` counts them) and whether a worker wrote the QA pair it validates
    (``own_question``, :func:`own_question_sql`).

    Read under the HIT's row lock on every claim, in one statement written once instead of two querysets
    compiled on each claim (tests/test_claim_reads.py compares it with both).
    """
    extra = {"held_slots": (held_slots_sql(), int), "own_question": (f"EXISTS ({own_question_sql()})", bool)}
    return SqlRead(HIT, where='{self}."id" = %s', extra=extra)


_SLOTS = _slots_read()


def hit_refusal(batch: Batch, worker: Worker, hit: HIT) -> Optional[str]:
    """Why ``worker`` may not take a new assignment on ``hit`` (None when they may).

    The caller holds the HIT's row lock, so the slot count is exact. Slots are held by live sessions
    the platform vouches for; unconfirmed MTurk sessions hold none (MTurk's MaxAssignments limits the
    genuine ones), so made-up ids never leave a genuine worker "no free slot".
    """
    if hit.status != HIT.Status.OPEN:
        return "This HIT is closed."
    gone = (Assignment.Status.RETURNED.value, Assignment.Status.EXPIRED.value)
    slots = _SLOTS.get(*gone, True, worker.pk, hit.pk)
    if slots.held_slots >= hit.max_assignments:
        return "This HIT has no free slot left."
    if hit.qa_pair_id is not None and slots.own_question:
        return "You cannot validate a question you wrote."
    cap = batch.max_pairs_per_worker_per_document
    if cap and hit.document_id is not None:
        written = QAPair.objects.filter(
            assignment__worker=worker, assignment__vouched=True, document=hit.document_id
        ).count()
        if written + handler_for(batch.kind).pairs_per_assignment > cap:
            return "You have written the maximum number of QA pairs for this document."
    return None


# --- entry points ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Admission:
    """What an arrival opens: a read-only preview of ``hit``, or ``assignment``."""

    hit: Optional[HIT] = None
    assignment: Optional[Assignment] = None


def parse(params: Mapping[str, str]) -> Optional[Arrival]:
    """The platform arrival in ``params`` (None when there is none).

    Raises:
        Refused: 400, for incomplete or malformed parameters (the message names the parameter).
    """
    try:
        return parse_arrival(params, config_from(settings))
    except ArrivalError as exc:
        raise Refused(f"{exc}. Please open the HIT again from the platform.", status=400) from exc


def admit_arrival(batch: Batch, arrival: Arrival, address: str = "") -> Admission:
    """Admit a platform arrival to ``batch``: an MTurk preview, accept, or a Prolific session.

    Security behavior: the arrival must come from the batch's platform and name one of its HITs
    (MTurk) or its study (Prolific); the platform's session id (``assignmentId`` / ``SESSION_ID``) is
    the credential and a worker id alone opens nothing; slots, caps, qualifications, blocks and
    own-question exclusion are checked under the HIT's row lock, and the worker's caps again under the
    worker's row lock (concurrent arrivals of one worker never exceed them). What each platform vouches
    for: Prolific gives a participant one session per study, so a second ``SESSION_ID`` of the same
    participant is refused (409) whatever became of the first, and Prolific confirms a new session at
    arrival (:func:`confirm_with_platform`: ACTIVE, same participant and study; no answer -> 409, no
    place). MTurk cannot confirm an ``assignmentId`` before it is submitted, so each id is its own
    unconfirmed session (one row and draft per id, bound to the worker and HIT it came with; another
    worker or HIT with it -> 403): a new id never takes over, returns or reads the worker's session,
    unconfirmed sessions hold no slot (MTurk's MaxAssignments is the slot count, so made-up ids never
    leave a genuine worker "no free slot") and count for the worker's cap only on arrivals from the
    same client address (``address``, kept as a keyed digest): a worker holding several HITs at once
    is capped, and made-up ids opened elsewhere never use up their cap. Work under an id is confirmed
    with MTurk (same worker, same HIT) by sync or before it is approved or paid
    (``crowd.services.review``).

    Raises:
        Refused: with the message and status to show.
    """
    from worker import assigning

    if arrival.platform != batch.provider:
        raise Refused("This task is not offered on the platform you came from.", status=403)
    traits = traits_for(arrival.platform)
    if traits.unit_per_hit:
        hit = batch.hits.filter(platform_ref=arrival.hit_ref).first()
        if hit is None:
            raise Refused("This HIT is not part of this task.", status=404)
        if arrival.preview:
            return Admission(hit=hit)
        worker = Worker.objects.get_or_create_for(arrival.platform, arrival.worker_id)
        meta = dict(arrival.meta)
        if not traits.vouches_at_arrival and address:
            meta["client"] = client_key(address)
        assignment = assigning.claim_platform_assignment(batch, hit, worker, arrival.assignment_ref, meta)
        return Admission(assignment=assignment)
    if not batch.platform_ref or arrival.hit_ref != batch.platform_ref:
        raise Refused(f"This link belongs to another {traits.short_name} study.", status=403)
    worker = Worker.objects.get_or_create_for(arrival.platform, arrival.worker_id)
    bound = Assignment.objects.filter(hit__batch=batch, worker=worker, platform_ref=arrival.assignment_ref)
    if not bound.exists():
        confirm_with_platform(batch, arrival)
    assignment = assigning.claim_next(
        batch, worker, platform_ref=arrival.assignment_ref, meta=dict(arrival.meta)
    )
    return Admission(assignment=assignment)


def confirm_with_platform(batch: Batch, arrival: Arrival) -> None:
    """Refuse a new session its platform does not vouch for (:meth:`PlatformTraits.confirm_arrival`).

    Called before a session is given a place (a session already bound to its assignment resumes without
    a call). Prolific confirms a session with its API; MTurk cannot before submission (crowdqa asks it
    before approving or paying instead); local workers are signed in.

    Security behavior: a session the platform refuses -> 403 and no place; a platform that does not
    answer in time -> 409 "try again in a minute" and no place (fail safe), logged. See docs/admission.md.

    Raises:
        Refused: with the platform's status (403 or 409, never a 5xx) and message.
    """
    refusal = traits_for(arrival.platform).confirm_arrival(arrival, config_from(settings))
    if refusal is None:
        return
    logger.warning(
        "%s arrival refused (batch %s, session %s): %s",
        arrival.platform,
        batch.pk,
        arrival.assignment_ref,
        refusal.reason,
    )
    raise Refused(refusal.message, status=refusal.status)


def admit_local(batch: Batch, worker: Optional[Worker]) -> Assignment:
    """The signed-in local worker's current or next assignment in ``batch`` (invite, ``/work/``).

    Security behavior: only local batches, only workers invited to this batch (expert batches: expert
    invites), then the claim checks of :func:`check_can_work` and :func:`hit_refusal`.

    Raises:
        Refused: with the message to show.
    """
    from worker import assigning

    if worker is None:
        raise Refused("Sign in with your invite link to work.", status=403)
    check_platform(batch, worker)
    return assigning.claim_next(batch, worker)


def admits(batch: Batch, worker: Worker) -> bool:
    """True when ``batch`` admits ``worker`` at all (used to list the work a local worker sees)."""
    try:
        check_platform(batch, worker)
    except Refused:
        return False
    return True


def admit_link(assignment: Assignment) -> Assignment:
    """Check that the assignment a signed link names may still be worked on by its worker.

    The signed link is the credential of the task page, autosave, submit and return; the assignment's
    own status is checked by the view. Here the worker must still belong to the batch's platform and not
    be blocked.

    Security behavior: a blocked worker, or an assignment whose worker is not of the batch's platform
    (data made before this rule), cannot save, submit or see the task.

    Raises:
        Refused: with the message to show.
    """
    worker = assignment.worker
    if worker.platform != assignment.hit.batch.provider:
        raise Refused("This task is not offered on the platform you came from.", status=403)
    if worker.blocked and assignment.status == Assignment.Status.ACCEPTED:
        raise Refused("Your account cannot take HITs at the moment.", status=403)
    return assignment


def refusal_context(exc: Refused) -> dict[str, Any]:
    """Template context of the page that shows a refusal."""
    return {"title": "Not available", "text": str(exc)}
