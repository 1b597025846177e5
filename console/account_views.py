"""The Accounts page: the lab's researcher accounts, their roles, invitations and set-password links.

Security behavior: both views need Django's ``auth.change_user`` permission on an active account
(superusers hold it; the ``researchers`` group does not), checked before anything is read or changed:
an anonymous visitor is sent to the sign-in page, any other account gets the 403 page. Changes are POST
only with Django's CSRF token. An account id in a form must name one of the listed researcher accounts
(any other id, a worker's account included, is a 404), so a forged id reaches nothing else. The rules on
roles (no change to one's own account, the last active admin kept, admin granted only by a superuser)
live in :mod:`annotation.roles` and are enforced there under row locks, each change logged with who
made it. A set-password link is shown only in the answer to the POST that made it, never stored.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation.roles import (
    ROLES,
    AccountChangeRefused,
    accounts_for,
    invite,
    may_manage_accounts,
    password_link_path,
    researcher_accounts,
    set_active,
    set_password_path,
    set_role,
)


class InviteForm(forms.Form):
    """A new researcher: a user name, an optional e-mail address (kept, not written to) and a role."""

    username = forms.CharField(label="User name", max_length=150)
    email = forms.EmailField(label="E-mail (optional)", required=False, max_length=254)
    role = forms.ChoiceField(label="Role", choices=list(ROLES.items()), initial="researcher")


def _guard(request: HttpRequest) -> None:
    """Refuse a request whose account may not manage accounts (see the module's security behavior)."""
    if not may_manage_accounts(getattr(request, "user", None)):
        raise PermissionDenied(
            "Your account may not manage researcher accounts (permission auth.change_user)."
        )


def _page(request: HttpRequest, form: InviteForm, status: int = 200, **extra: Any) -> HttpResponse:
    context = {
        "accounts": accounts_for(request.user),
        "form": form,
        "roles": ROLES,
        "link_days": max(1, settings.PASSWORD_RESET_TIMEOUT // 86400),
        **extra,
    }
    return render(request, "annotation/accounts.html", context, status=status)


def account_list(request: HttpRequest) -> HttpResponse:
    """Every researcher account with its role and state; POST invites a researcher and shows the link.

    Security behavior: as the module says; a refused invitation (a taken name, admin asked for by a
    non-superuser) keeps what was typed and changes nothing.
    """
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    _guard(request)
    if request.method != "POST":
        return _page(request, InviteForm())
    form = InviteForm(request.POST)
    if not form.is_valid():
        return _page(request, form, status=400)
    try:
        user = invite(
            request.user, form.cleaned_data["username"], form.cleaned_data["email"], form.cleaned_data["role"]
        )
    except AccountChangeRefused as exc:
        form.add_error(None, str(exc))
        return _page(request, form, status=400)
    link = request.build_absolute_uri(set_password_path(user))
    return _page(request, InviteForm(), link=link, link_for=user)


@require_POST
def account_change(request: HttpRequest, pk: int) -> HttpResponse:
    """``action`` = ``role`` (with ``role``), ``deactivate``, ``activate`` or ``link`` (a new set-password
    link, for a researcher who never set a password or forgot it).

    Security behavior: as the module says; ``pk`` must be a listed researcher account.
    """
    if not request.user.is_authenticated:
        return redirect_to_login("/accounts/manage/")
    _guard(request)
    target = get_object_or_404(researcher_accounts(), pk=pk)
    action = request.POST.get("action", "")
    name = target.get_username()
    try:
        if action == "role":
            role = request.POST.get("role", "")
            changed = set_role(request.user, target, role)
            if changed:
                messages.success(request, f"{name} is now {role_label(role)}.")
            else:
                messages.info(request, f"{name} already had that role.")
        elif action in ("deactivate", "activate"):
            changed = set_active(request.user, target, action == "activate")
            state = (
                "active: they can sign in"
                if action == "activate"
                else "deactivated: they can no longer sign in"
            )
            messages.success(request, f"{name} is {state}.") if changed else messages.info(
                request, "Nothing changed."
            )
        elif action == "link":
            link = request.build_absolute_uri(password_link_path(request.user, target))
            return _page(request, InviteForm(), link=link, link_for=target)
        else:
            raise AccountChangeRefused("Choose one of the page's buttons.")
    except AccountChangeRefused as exc:
        messages.error(request, f"Nothing changed: {exc}")
    return redirect("annotation:accounts")


def role_label(role: str) -> str:
    """``an admin`` or ``a researcher``: the role as the page's messages say it."""
    return {"admin": "an admin", "researcher": "a researcher"}.get(role, role)
