"""Signed links to assignments: the credential of a HIT page.

A HIT page runs inside MTurk's iframe, where browsers drop third-party cookies, so neither a session
nor a CSRF cookie can be relied on. The page is reached instead through a link that carries the
assignment id signed with the secret key (``django.core.signing.Signer``, no timestamp, so a worker
who arrives twice gets the same link): unguessable, given only to the
worker who holds the assignment, and useless once the assignment is submitted or expired.
"""

from __future__ import annotations

from django.core import signing
from django.http import Http404
from django.urls import reverse

from annotation import hit_passages, sql_reads
from annotation.models import HIT, Assignment
from annotation.sql_reads import SqlRead
from crowd.models import Consent

SALT = "crowdqa.hit-link"
PREVIEW_SALT = "crowdqa.hit-preview"


def token_for(assignment: Assignment) -> str:
    """The signed token naming ``assignment`` (the same token every time: a stable link)."""
    return signing.Signer(salt=SALT).sign(str(assignment.pk))


def _unsign(token: str, salt: str) -> int:
    """The id inside a token.

    Raises:
        Http404: for a forged or truncated token.
    """
    try:
        return int(signing.Signer(salt=salt).unsign(token))
    except (signing.BadSignature, ValueError) as exc:
        raise Http404("This HIT link is not valid.") from exc


def _link_read(lock: bool) -> SqlRead[Assignment]:
    """The assignment by id, with everything a HIT page needs, in one statement written once.

    As a queryset: ``Assignment.objects.select_related("hit__batch__corpus", "hit__document",
    "worker").annotate(has_consent=Exists(Consent of this worker for this batch)).filter(pk=pk)``, with
    ``select_for_update(of=("self",))`` when ``lock``; tests/test_sql_reads.py compares the two.
    """
    has_consent = (
        f'EXISTS (SELECT 1 FROM "{Consent._meta.db_table}" c'
        ' WHERE c."worker_id" = {self}."worker_id" AND c."batch_id" = {hit}."batch_id")'
    )
    return SqlRead(
        Assignment,
        related=("hit__batch__corpus", "hit__document", "worker"),
        extra={"has_consent": (has_consent, bool)},
        where='{self}."id" = %s',
        lock=lock,
    )


_READ = _link_read(lock=False)
_READ_LOCKED = _link_read(lock=True)


def assignment_for(token: str, lock: bool = False, passages: bool = False) -> Assignment:
    """The assignment a token names, with its HIT, batch, corpus, document and worker.

    One statement (one round trip with ``passages``): it also answers whether the worker has consented
    to the batch (``has_consent``), which every HIT page asks next. With ``lock`` (inside a transaction)
    the same statement takes the assignment's row lock (the assignment row only), so a caller that
    writes it needs no second read.
    With ``passages`` the HIT's passages are read in the same round trip and kept on the HIT
    (:mod:`annotation.hit_passages`): the task page and the submission of a passage HIT need them.
    Every request on a signed link (page, autosave, submit, span lookup, consent, return) reads
    through here, so its SQL is written once, at import (:class:`~annotation.sql_reads.SqlRead`).

    Raises:
        Http404: for a forged, truncated or unknown token (no hint about which).
    """
    pk = _unsign(token, SALT)
    read = _READ_LOCKED if lock else _READ
    if passages:
        found, offered = sql_reads.together((read, (pk,)), (hit_passages.BY_ASSIGNMENT, (pk,)))
    else:
        found, offered = read.all(pk), []
    if len(found) != 1:  # the key is the primary key: one row or none
        raise Http404("This HIT link is not valid.")
    assignment = found[0]
    if passages:
        hit_passages.keep(assignment.hit, offered)
    return assignment


def url_for(assignment: Assignment, name: str = "hits:assignment") -> str:
    """The path of an assignment page (or of one of its endpoints)."""
    return reverse(name, kwargs={"token": token_for(assignment)})


def preview_token_for(hit: HIT) -> str:
    """A token that shows one HIT's material read-only (MTurk previews, researcher previews).

    It grants no assignment: only the HIT's own document pages can be fetched with it.
    """
    return "p" + signing.Signer(salt=PREVIEW_SALT).sign(str(hit.pk))


def hit_for_preview(token: str) -> HIT:
    """The HIT a preview token names.

    Raises:
        Http404: for anything but a valid preview token.
    """
    if not token.startswith("p"):
        raise Http404("This preview link is not valid.")
    pk = _unsign(token[1:], PREVIEW_SALT)
    hit = HIT.objects.select_related("document").filter(pk=pk).first()
    if hit is None:
        raise Http404("This preview link is not valid.")
    return hit
