"""One-time login links for the local crowd (in-lab annotators, experts).

A researcher creates links (web page or ``manage.py invite_workers``) and sends them; opening one and
pressing "Start" creates a worker account and logs the person in. Only the token's hash is stored.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Optional

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from annotation.platforms import Platform
from crowd.models import Invite, Worker

logger = logging.getLogger(__name__)


class InviteError(Exception):
    """The link cannot be used (unknown, used or expired); the message is shown to the person."""


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("ascii", "replace")).hexdigest()


@dataclass(frozen=True)
class IssuedInvite:
    """An invite and the link to send (shown once: only its hash is stored)."""

    invite: Invite
    url: str


def invite_url(token: str, base_url: Optional[str] = None) -> str:
    """The absolute link of a token, on ``PUBLIC_BASE_URL`` unless another base is given."""
    base = (base_url or settings.PUBLIC_BASE_URL).rstrip("/")
    return f"{base}{reverse('worker:invite', kwargs={'token': token})}"


def create_invites(
    count: int,
    batch: Any = None,
    label: str = "",
    is_expert: bool = False,
    created_by: Any = None,
    valid_days: Optional[int] = 30,
    base_url: Optional[str] = None,
) -> list[IssuedInvite]:
    """Create ``count`` one-time links, optionally tied to a batch (the worker lands on it).

    Raises:
        ValueError: when ``count`` is not between 1 and 1000.
    """
    if not 1 <= count <= 1000:
        raise ValueError(f"count must be between 1 and 1000, got {count}")
    expires = timezone.now() + timedelta(days=valid_days) if valid_days else None
    issued = []
    with transaction.atomic():
        for _ in range(count):
            token = secrets.token_urlsafe(24)
            invite = Invite.objects.create(
                token_sha256=_hash(token),
                batch=batch,
                label=label,
                is_expert=is_expert,
                created_by=created_by,
                expires_at=expires,
            )
            issued.append(IssuedInvite(invite, invite_url(token, base_url)))
    logger.info("created %d invites for Batch(%s)", count, getattr(batch, "pk", None))
    return issued


def find_invite(token: str) -> Invite:
    """The usable invite of a token.

    Raises:
        InviteError: when the link is unknown, already used or expired.
    """
    invite = Invite.objects.filter(token_sha256=_hash(token)).select_related("batch").first()
    if invite is None:
        raise InviteError("This invite link is not valid. Ask the researcher for a new one.")
    if invite.used_at is not None:
        raise InviteError("This invite link has already been used. Sign in instead, or ask for a new link.")
    if invite.expires_at is not None and invite.expires_at <= timezone.now():
        raise InviteError("This invite link has expired. Ask the researcher for a new one.")
    return invite


def redeem(token: str) -> Worker:
    """Use an invite: create the worker and their login account (once, even if clicked twice at once).

    Raises:
        InviteError: as :func:`find_invite`.
    """
    with transaction.atomic():
        invite = find_invite(token)
        locked = Invite.objects.select_for_update().get(pk=invite.pk)
        if locked.used_at is not None:
            raise InviteError(
                "This invite link has already been used. Sign in instead, or ask for a new link."
            )
        platform_id = f"invite-{locked.pk}"
        user = get_user_model().objects.create_user(username=f"worker-{locked.pk}-{secrets.token_hex(3)}")
        user.set_unusable_password()
        user.save(update_fields=["password"])
        worker = Worker.objects.get_or_create_for(Platform.LOCAL, platform_id, is_expert=locked.is_expert)
        worker.user = user
        worker.save(update_fields=["user"])
        locked.worker = worker
        locked.used_at = timezone.now()
        locked.save(update_fields=["worker", "used_at"])
    logger.info("Invite(%s) redeemed by Worker(%s)", locked.pk, worker.pk)
    return worker
