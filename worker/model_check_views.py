"""The syllabus HIT card's live model check: the batch's model answers the card's question as written.

The page asks once a card's question and answer are written (when the worker leaves the field, or with
the card's "Ask the model" button), never on every keystroke. A POST queues the job
(:mod:`evaluation.loop_tasks`) and answers at once with the card's key; the page then polls a GET with
that key until the check is stored or its wait (:data:`evaluation.services.model_checks.PAGE_WAIT_S`)
runs out, and shows "no model answer" then. A broker that is down answers ``unavailable`` at once.
Saving and submitting never depend on these requests.
"""

from __future__ import annotations

import logging
from typing import Any

from django.http import Http404, HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from annotation.hits.syllabus_qa import CARD_TYPES
from annotation.models import Assignment, ModelCheck
from annotation.textnorm import storable
from evaluation.services.model_checks import card_key, checked_answer, loop_settings, stored_check
from worker import admission, hit_links

logger = logging.getLogger(__name__)

#: Longest question and answer the model is asked about (a card's fields are a few sentences).
MAX_QUESTION_CHARS = 2000
MAX_ANSWER_CHARS = 5000


def _shown(check: ModelCheck, mode: str) -> dict[str, Any]:
    return {
        "status": "answered",
        "mode": mode,
        "card": check.position,
        "question_type": check.question_type,
        "system": check.system,
        "model_answer": check.model_answer,
        "abstained": check.abstained,
        "judge": check.judge,
        "verdict": check.verdict,
        "score": round(check.score, 3),
        "latency_ms": round(check.latency_ms, 1),
    }


def _card(raw: Any) -> int | None:
    text = str(raw or "")
    return int(text) if text.isdigit() and int(text) < len(CARD_TYPES) else None


@csrf_exempt
@require_http_methods(["GET", "POST"])
def model_check(request: HttpRequest, token: str) -> JsonResponse:
    """POST ``card``, ``question``, ``answer``: queue the model's check; GET ``card``, ``key``: its result.

    Security behavior: only an open assignment's signed link that the admission rule still admits
    (:func:`worker.admission.admit_link`) may ask or read, about its own HIT's syllabus and its own cards
    (the document and the assignment are never named by the request); a closed or overdue assignment gets
    409, a batch that asks no model 404, a card number that is not a card or an empty question 400. The
    text is cut to fixed limits and cleared of what no database stores (NUL, lone surrogates) before it
    is queued, and a result carries only the model's answer
    (syllabus text the worker can already read) and the verdict on the worker's own card.
    """
    assignment = hit_links.assignment_for(token)
    try:
        admission.admit_link(assignment)
    except admission.Refused as exc:
        return JsonResponse({"status": "refused", "error": str(exc)}, status=exc.status)
    loop = loop_settings(assignment.hit.batch)
    if loop is None or assignment.hit.document is None:
        raise Http404("This HIT asks no model")
    if assignment.is_overdue or assignment.status != Assignment.Status.ACCEPTED:
        return JsonResponse({"status": assignment.status}, status=409)
    data = request.POST if request.method == "POST" else request.GET
    card = _card(data.get("card"))
    if card is None:
        return JsonResponse({"status": "invalid", "error": "card must be a card number"}, status=400)
    if request.method == "GET":
        check = stored_check(assignment, card, str(data.get("key", ""))[:40])
        return JsonResponse(_shown(check, loop.mode) if check else {"status": "pending", "mode": loop.mode})
    question = storable(str(data.get("question", ""))[:MAX_QUESTION_CHARS]).strip()
    answer = storable(str(data.get("answer", ""))[:MAX_ANSWER_CHARS]).strip()
    if not question:
        return JsonResponse({"status": "invalid", "error": "write the question first"}, status=400)
    key = card_key(question, checked_answer(card, answer))
    try:
        from evaluation.loop_tasks import card_task

        card_task(loop.system, loop.judge).delay(assignment.pk, card, question, answer)
    except Exception:  # noqa: BLE001 - the model in the loop fails open: the page shows "no model answer"
        logger.exception("could not queue the model check of Assignment(%s) card %s", assignment.pk, card)
        return JsonResponse({"status": "unavailable", "mode": loop.mode})
    return JsonResponse({"status": "pending", "mode": loop.mode, "card": card, "key": key}, status=202)
