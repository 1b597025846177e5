"""Researcher accounts and their roles, over the permission scheme of :mod:`annotation.permissions`.

A role is not a new permission scheme; it names the ways an account gets researcher rights:

* ``viewer``: a member of the ``viewers`` group only (every researcher page to read, no action: the
  permissions of :data:`annotation.permissions.VIEWER_PERMISSIONS`);
* ``researcher``: a member of the ``researchers`` group (every researcher action, as ``add_researcher``);
* ``admin``: a Django superuser (every permission, managing accounts included, as ``ensure_admin``).

An account with permissions given one by one in the Django admin reads as ``custom``; the accounts page
can move it to one of the roles. Setting ``viewer`` takes the account out of the researchers group and
drops its one-by-one permissions, so what it may do is exactly the group's.

Invitations create an account with an unusable password and hand back a set-password link built with
Django's own password-reset token (:data:`django.contrib.auth.tokens.default_token_generator`), opened at
Django's ``PasswordResetConfirmView``. The link works once (the token depends on the password hash) and
expires after ``PASSWORD_RESET_TIMEOUT``; nothing is e-mailed.

Security behavior: every change goes through :func:`set_role` or :func:`set_active`, which refuse (with
:class:`AccountChangeRefused`, a message for the page) a change to the acting person's own role or active
state, and any change that would leave no active admin; the admin count is read under a row lock so two
admins demoting each other at once cannot both succeed. Only a superuser may grant or take away
``admin`` or make a set-password link for an admin, so an account holding just ``auth.change_user``
cannot raise itself or anyone else to it, nor take over an admin's account.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.db import transaction
from django.db.models import Q, QuerySet
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from annotation.permissions import (
    ACCOUNTS_PERMISSION,
    RESEARCHERS_GROUP,
    VIEWERS_GROUP,
    ensure_researchers_group,
    ensure_viewers_group,
)

ROLES: dict[str, str] = {
    "viewer": "Viewer: sees every researcher page, changes nothing",
    "researcher": "Researcher: every researcher page and action",
    "admin": "Admin: a researcher who also manages accounts",
}
"""Roles the accounts page can set, with the words the page shows."""

logger = logging.getLogger(__name__)

USERNAME_PATTERN = re.compile(r"^[\w.@+-]{1,150}$")


class AccountChangeRefused(ValueError):
    """A change the page refuses, with the reason to show (never a server error)."""


@dataclass(frozen=True)
class Account:
    """One row of the accounts page."""

    user: Any
    role: str
    is_self: bool


def may_manage_accounts(user: Any) -> bool:
    """True when ``user`` may open the accounts page and change accounts."""
    return bool(user is not None and getattr(user, "is_active", False) and user.has_perm(ACCOUNTS_PERMISSION))


def role_of(user: Any) -> str:
    """``admin``, ``researcher``, ``viewer``, ``custom`` (other groups or permissions given one by one),
    or ``none``."""
    if user.is_superuser:
        return "admin"
    groups = {group.name for group in user.groups.all()}
    if RESEARCHERS_GROUP in groups:
        return "researcher"
    if groups == {VIEWERS_GROUP} and not user.user_permissions.exists():
        return "viewer"
    if user.user_permissions.exists() or groups:
        return "custom"
    return "none"


def researcher_accounts() -> QuerySet[Any]:
    """Accounts with any researcher rights (local crowd workers' accounts hold none and are left out)."""
    user_model = get_user_model()
    return (
        user_model.objects.filter(
            Q(is_superuser=True) | Q(groups__isnull=False) | Q(user_permissions__isnull=False)
        )
        .distinct()
        .prefetch_related("groups")
        .order_by("-is_active", "username")
    )


def accounts_for(actor: Any) -> list[Account]:
    """The accounts page's rows, the acting person's own marked."""
    return [Account(user, role_of(user), user.pk == actor.pk) for user in researcher_accounts()]


def _active_admins() -> QuerySet[Any]:
    return get_user_model().objects.filter(is_superuser=True, is_active=True)


def _check_may_change(actor: Any, target: Any) -> None:
    if target.pk == actor.pk:
        raise AccountChangeRefused(
            "You cannot change your own role or deactivate your own account: ask another admin."
        )


def _leaves_no_admin(target: Any) -> bool:
    """True when ``target`` is the only active admin (read under a row lock on the admins)."""
    admins = list(_active_admins().select_for_update().values_list("pk", flat=True))
    return admins == [target.pk]


def set_role(actor: Any, target: Any, role: str) -> bool:
    """Give ``target`` the ``role``; return False when it already had it.

    Raises:
        AccountChangeRefused: an unknown role, the actor's own account, admin rights granted or taken by
            someone who is not a superuser, or the last active admin demoted.
    """
    if role not in ROLES:
        raise AccountChangeRefused("Choose one of the roles listed.")
    _check_may_change(actor, target)
    with transaction.atomic():
        target = get_user_model().objects.select_for_update().get(pk=target.pk)
        current = role_of(target)
        if current == role:
            return False
        if (role == "admin" or current == "admin") and not actor.is_superuser:
            raise AccountChangeRefused("Only an admin (superuser) may grant or take away the admin role.")
        if current == "admin" and target.is_active and _leaves_no_admin(target):
            raise AccountChangeRefused(
                f"{target.get_username()} is the last active admin: make another admin first."
            )
        target.is_superuser = role == "admin"
        target.is_staff = role == "admin"
        target.save(update_fields=["is_superuser", "is_staff"])
        _set_groups(target, role)
    logger.info("account %s: role %s -> %s by %s", target.get_username(), current, role, actor.get_username())
    return True


def _set_groups(user: Any, role: str) -> None:
    """The groups of ``role``: viewers only (one-by-one permissions dropped), or researchers."""
    viewers, researchers = ensure_viewers_group(), ensure_researchers_group()
    if role == "viewer":
        user.groups.remove(researchers)
        user.user_permissions.clear()
        user.groups.add(viewers)
    else:
        user.groups.remove(viewers)
        user.groups.add(researchers)
    for attr in ("_perm_cache", "_group_perm_cache", "_user_perm_cache"):
        user.__dict__.pop(attr, None)


def set_active(actor: Any, target: Any, active: bool) -> bool:
    """Activate or deactivate ``target`` (a deactivated account cannot sign in); False when unchanged.

    Raises:
        AccountChangeRefused: the actor's own account, an admin changed by a non-superuser, or the last
            active admin deactivated.
    """
    _check_may_change(actor, target)
    with transaction.atomic():
        target = get_user_model().objects.select_for_update().get(pk=target.pk)
        if target.is_active == active:
            return False
        if target.is_superuser and not actor.is_superuser:
            raise AccountChangeRefused("Only an admin (superuser) may activate or deactivate an admin.")
        if not active and target.is_superuser and _leaves_no_admin(target):
            raise AccountChangeRefused(
                f"{target.get_username()} is the last active admin: make another admin first."
            )
        target.is_active = active
        target.save(update_fields=["is_active"])
    state = "activated" if active else "deactivated"
    logger.info("account %s %s by %s", target.get_username(), state, actor.get_username())
    return True


def invite(actor: Any, username: str, email: str, role: str) -> Any:
    """Create an account with ``role`` and no usable password; the person sets one through the link.

    Raises:
        AccountChangeRefused: a taken or malformed user name, an unknown role, or admin granted by a
            non-superuser.
    """
    username = username.strip()
    if not USERNAME_PATTERN.match(username):
        raise AccountChangeRefused(
            "A user name has 1 to 150 letters, digits and the characters @ . + - _ (no spaces)."
        )
    if role not in ROLES:
        raise AccountChangeRefused("Choose one of the roles listed.")
    if role == "admin" and not actor.is_superuser:
        raise AccountChangeRefused("Only an admin (superuser) may invite another admin.")
    user_model = get_user_model()
    with transaction.atomic():
        if user_model.objects.filter(username__iexact=username).exists():
            raise AccountChangeRefused(f"The user name {username} is taken: choose another.")
        user = user_model.objects.create_user(username, email=email.strip())
        user.set_unusable_password()
        user.is_superuser = user.is_staff = role == "admin"
        user.save()
        _set_groups(user, role)
    logger.info("account %s invited as %s by %s", username, role, actor.get_username())
    return user


def password_link_path(actor: Any, target: Any) -> str:
    """A new set-password link for an existing account (someone who lost the first or forgot a password).

    Raises:
        AccountChangeRefused: the actor's own account (they change it on the admin's password page), a
            deactivated account, or an admin's account asked for by a non-superuser (the link would hand
            over that account's rights).
    """
    if target.pk == actor.pk:
        raise AccountChangeRefused(
            "Change your own password on its page (/accounts/password/), not through a link."
        )
    if not target.is_active:
        raise AccountChangeRefused(
            f"Activate {target.get_username()} first: a deactivated account cannot sign in."
        )
    if target.is_superuser and not actor.is_superuser:
        raise AccountChangeRefused("Only an admin (superuser) may make a set-password link for an admin.")
    logger.info("account %s: set-password link made by %s", target.get_username(), actor.get_username())
    return set_password_path(target)


def set_password_path(user: Any) -> str:
    """The path of a one-use set-password link for ``user`` (Django's password-reset token)."""
    uidb64 = urlsafe_base64_encode(force_bytes(user.pk))
    token = default_token_generator.make_token(user)
    return reverse("password_reset_confirm", kwargs={"uidb64": uidb64, "token": token})
