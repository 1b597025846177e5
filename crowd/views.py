"""Platform webhooks (a platform tells crowdqa that a submission or study changed) and the researcher action
that settles an unconfirmed bonus. Messages to a batch's workers are sent from the batch page
(``console.message_views``).

Security behavior: the webhook endpoint is public and CSRF-exempt (a platform cannot hold a CSRF token); a
request is processed only when its platform's check passes (``PlatformTraits.read_webhook``; Prolific: an
HMAC signature over timestamp + body with ``PROLIFIC_WEBHOOK_SECRET`` and a timestamp within the replay
window; 403 otherwise). Redelivered
events are dropped by their id (``WebhookEvent``). The view does no platform work itself: it queues a
sync of the batch and answers at once. The researcher actions are POST only, CSRF-protected, and each
needs its researcher permission (``annotation.permissions.researcher_action``: ``pay`` to settle a
payment), as every other researcher action.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from annotation.permissions import researcher_action
from crowd.models import Payment
from crowd.providers.errors import ProviderConfigError
from crowd.providers.factory import config_from
from crowd.providers.traits import traits_for
from crowd.providers.webhooks import WebhookError
from crowd.services.ledger import DbDedupStore
from crowd.services.sync import batch_for_platform_ref

logger = logging.getLogger(__name__)


def _queue_sync(batch_id: int) -> None:
    from crowd.tasks import sync_batch_task

    try:
        sync_batch_task.delay(batch_id)
    except Exception:  # noqa: BLE001 - a broker outage must not lose the event: the periodic sync catches up
        logger.exception("could not queue the sync of Batch(%s); the periodic sync will run it", batch_id)


@csrf_exempt
@require_POST
def platform_webhook(request: HttpRequest, platform: str) -> JsonResponse:
    """Verify, deduplicate and act on a webhook of the platform named in the URL (module security note).

    Security behavior: a platform that sends no webhooks (or no platform of that name) answers 404; the
    platform's own check (Prolific: the signature and a finite timestamp within the replay window) runs
    before the body is parsed; bodies over 64 KB, nested deeper than 20 levels or holding NUL are refused
    with 4xx; redeliveries are dropped; the event only queues a sync, which asks the platform itself.
    """
    try:
        traits = traits_for(platform)
    except ProviderConfigError:
        raise Http404("no such platform") from None
    try:
        event = traits.read_webhook(request.headers, request.body, config_from(settings))
    except WebhookError as exc:
        logger.warning("%s webhook refused (%s): %s", traits.short_name, exc.code, exc)
        status = 400 if exc.code == "bad_body" else 403
        return JsonResponse({"ok": False, "error": exc.code}, status=status)
    if event is None:
        raise Http404(f"{traits.short_name} sends no webhooks here")
    if not DbDedupStore(traits.name).add(event.event_id, dict(event.payload)):
        logger.info("%s webhook %s is a duplicate: dropped", traits.short_name, event.event_id)
        return JsonResponse({"ok": True, "duplicate": True})
    batch = batch_for_platform_ref(traits.name, event.resource_id, event.unit_ref)
    if batch is None:
        logger.warning(
            "%s webhook %s about %s matches no batch", traits.short_name, event.event_type, event.resource_id
        )
        return JsonResponse({"ok": True, "batch": None})
    _queue_sync(batch.pk)
    return JsonResponse({"ok": True, "batch": batch.pk})


@require_POST
@researcher_action("pay")
def payment_resolve(request: HttpRequest, pk: int) -> HttpResponse:
    """Settle a bonus sent without a confirmed answer: from the platform's record, or as a person saw it.

    ``seen`` = ``paid`` / ``not_paid`` when the researcher checked the platform's dashboard; absent to
    ask the platform's own record (MTurk).

    Security behavior: POST only with a CSRF token; needs the researcher ``pay`` permission (403
    otherwise). It never sends money: it only settles a ``sent`` bonus row as confirmed or failed, and
    a row in any other state is refused.
    """
    from crowd.services.review import ReviewError, resolve_payment

    payment = get_object_or_404(Payment, pk=pk)
    seen = request.POST.get("seen", "")
    paid = {"paid": True, "not_paid": False}.get(seen)
    try:
        status = resolve_payment(payment, paid)
        if status == Payment.Status.SENT:
            messages.warning(
                request,
                f"Bonus {payment.idempotency_key}: still unknown, the platform's record does not list it yet "
                "(it may still be paying); settle it again later.",
            )
        else:
            messages.success(request, f"Bonus {payment.idempotency_key}: {status}.")
    except ReviewError as exc:
        messages.error(request, str(exc))
    if payment.assignment_id:
        return redirect("annotation:assignment", pk=payment.assignment_id)
    return redirect("annotation:batch", pk=payment.batch_id)
