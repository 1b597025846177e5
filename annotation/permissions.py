"""Who may do what on the researcher pages: one helper for every researcher view and template.

Researchers are ordinary Django accounts. Each action is one Django model permission (the ones Django
creates for every model, so no migration is needed); the ``researchers`` group holds all of them, so a
new researcher is an account put in that group (``manage.py add_researcher NAME`` or the admin's Users
page). Superusers hold every permission. A user with only some permissions (say, a reviewer who may not
launch batches) sees only the buttons of what they may do.

Views use :func:`researcher_action` (function views) or :class:`ResearcherRequiredMixin` with its
``action`` attribute (class views); templates read ``can.<action>`` from :func:`researcher_context`, so a
button is shown exactly when the view behind it would allow it: no button answers 403.

Security behavior: reading researcher pages needs the ``view`` permission (or
``CROWDQA_PUBLIC_DASHBOARD``, a demo-only switch that opens the pages read-only to anyone). Every change
needs its own permission, even with the public dashboard on; a refused change by an anonymous visitor is
sent to the sign-in page (and back), by a signed-in user without the permission is answered 403 with
a page that names what the account may not do and where to go (:mod:`config.error_views`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.mixins import AccessMixin
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.utils.functional import SimpleLazyObject

RESEARCHERS_GROUP = "researchers"

ACTIONS: dict[str, str] = {
    "view": "annotation.view_batch",
    "launch": "annotation.add_batch",
    "manage": "annotation.change_batch",
    "invite": "crowd.add_invite",
    "review": "annotation.change_assignment",
    "pay": "crowd.add_payment",
    "block": "crowd.change_worker",
    "notify": "crowd.view_worker",
    "export": "exports.add_release",
    "benchmark": "evaluation.add_benchmarkrun",
    "import": "annotation.add_corpus",
}
"""Researcher actions and the Django permission ("app_label.codename") each one needs."""

ACTION_LABELS: dict[str, str] = {
    "view": "see the researcher pages",
    "launch": "create and publish batches",
    "manage": "pause, resume or close batches",
    "invite": "invite workers",
    "review": "review submitted work",
    "pay": "pay bonuses",
    "block": "block workers",
    "notify": "message workers",
    "export": "build releases",
    "benchmark": "run benchmarks",
    "import": "bring data in (upload files into corpora)",
}
"""What each action lets a researcher do, in the words a refusal page uses."""

ACCOUNTS_PERMISSION = "auth.change_user"
"""Opens the accounts page (:mod:`annotation.roles`): superusers hold it, the researchers group does not."""

GROUP_EXTRA_PERMISSIONS = (
    "annotation.view_corpus",
    "annotation.view_document",
    "annotation.view_assignment",
    "annotation.view_job",
    "exports.view_release",
    "evaluation.view_benchmarkrun",
)
"""Read permissions the researchers group gets besides :data:`ACTIONS` (for the admin's read pages)."""


def can(user: Any, action: str) -> bool:
    """True when ``user`` may perform researcher ``action`` (a key of :data:`ACTIONS`).

    Raises:
        KeyError: an unknown action (a programming error, never a user's input).
    """
    permission = ACTIONS[action]
    if user is None or not getattr(user, "is_active", False):
        return False
    return bool(user.has_perm(permission))


def can_view(request: HttpRequest) -> bool:
    """True when the request may read researcher pages.

    A request refused before the authentication middleware ran (an oversized or unreadable body) has no
    ``user``; it counts as anonymous, so its error page renders instead of failing.
    """
    user = getattr(request, "user", None)
    return bool(getattr(settings, "CROWDQA_PUBLIC_DASHBOARD", False) or can(user, "view"))


def refuse(request: HttpRequest, action: str) -> HttpResponse:
    """The answer to a refused request: sign in first (anonymous), else 403 naming the permission.

    A refused POST (a session that ended while the page was open) comes back, after signing in, to the
    page the form was on, never to the action's URL.
    """
    if not request.user.is_authenticated:
        target = request.get_full_path()
        if request.method != "GET":
            referer = urlsplit(request.headers.get("Referer", ""))
            same_host = not referer.netloc or referer.netloc == request.get_host()
            target = (referer.path or "/") if same_host and referer.path.startswith("/") else "/"
            if referer.query and same_host:
                target += f"?{referer.query}"
        return redirect_to_login(target)
    raise PermissionDenied(
        f"Your account may not {ACTION_LABELS.get(action, action)} (permission {ACTIONS[action]})."
    )


def allowed(request: HttpRequest, action: str) -> bool:
    """True when the request may do ``action`` (``view`` honours the public dashboard)."""
    return can_view(request) if action == "view" else can(request.user, action)


def researcher_action(action: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Decorate a function view so that it runs only for users who may do ``action``."""
    ACTIONS[action]  # noqa: B018 - fail at import time for an unknown action

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not allowed(request, action):
                return refuse(request, action)
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


class ResearcherRequiredMixin(AccessMixin):
    """Class views: run only for users who may do ``action`` (default ``view``)."""

    action = "view"

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not allowed(request, self.action):
            return refuse(request, self.action)
        return super().dispatch(request, *args, **kwargs)


def researcher_context(request: HttpRequest) -> dict[str, Any]:
    """Template context processor: ``can`` maps each action to whether this request may do it.

    The map is worked out only when a template reads it (``SimpleLazyObject``): the worker's HIT pages,
    rendered on every view and submission, never do, so they skip the user and permission checks.
    """
    return {"can": SimpleLazyObject(lambda: _flags(request))}


def _flags(request: HttpRequest) -> dict[str, bool]:
    user = getattr(request, "user", None)
    flags = {action: can(user, action) for action in ACTIONS}
    flags["view"] = can_view(request)
    flags["accounts"] = bool(
        user is not None and getattr(user, "is_active", False) and user.has_perm(ACCOUNTS_PERMISSION)
    )
    return flags


def ensure_researchers_group() -> Any:
    """Create or complete the ``researchers`` group with every researcher permission; return it."""
    return _group_with(RESEARCHERS_GROUP, [*ACTIONS.values(), *GROUP_EXTRA_PERMISSIONS])


VIEWERS_GROUP = "viewers"
VIEWER_PERMISSIONS = (ACTIONS["view"], *GROUP_EXTRA_PERMISSIONS)
"""The ``viewers`` group: every researcher page to read, no action (no publish, review, pay, block,
message, release, benchmark or import), on the pages and through the API alike."""


def _group_with(name: str, wanted: tuple[str, ...] | list[str]) -> Any:
    from django.contrib.auth.models import Group, Permission

    group, _ = Group.objects.get_or_create(name=name)
    found = []
    for dotted in wanted:
        app_label, codename = dotted.split(".", 1)
        permission = Permission.objects.filter(content_type__app_label=app_label, codename=codename).first()
        if permission is not None:
            found.append(permission)
    group.permissions.add(*found)
    return group


def ensure_viewers_group() -> Any:
    """Create or complete the ``viewers`` group; return it. Only read permissions are ever added, and
    any other permission found on it is removed, so the group cannot drift into acting."""
    group = _group_with(VIEWERS_GROUP, VIEWER_PERMISSIONS)
    keep = {dotted.split(".", 1)[1] for dotted in VIEWER_PERMISSIONS}
    extra = [p for p in group.permissions.all() if p.codename not in keep]
    if extra:
        group.permissions.remove(*extra)
    return group


def make_researcher(user: Any) -> Any:
    """Put ``user`` in the researchers group (created on first use); return the user."""
    user.groups.add(ensure_researchers_group())
    # has_perm caches permissions on the instance: drop the cache so the new group counts at once.
    for attr in ("_perm_cache", "_group_perm_cache", "_user_perm_cache"):
        user.__dict__.pop(attr, None)
    return user
