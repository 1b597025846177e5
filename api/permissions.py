"""The console's permissions (:mod:`annotation.permissions`) as DRF permission classes.

Security behavior: every endpoint needs an authenticated account (token or session; the public dashboard
switch opens nothing here) holding the researcher ``view`` permission to read; each action needs the
permission the console's button needs (``launch``, ``manage``, ``review``, ``pay``), so an account that may
only view (the ``viewers`` group) is refused (403) through the API exactly as on the pages. A change
(POST, PATCH, DELETE) that a view does not map to an action is refused to everyone.
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from annotation.permissions import can


class ResearcherAction(BasePermission):
    """Reads need ``view``; a view's ``action_permissions`` maps each DRF action to its researcher action."""

    message = "This account may not do that."

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        if not (user and user.is_authenticated and can(user, "view")):
            return False
        needed = getattr(view, "action_permissions", {}).get(getattr(view, "action", None))
        if needed is None:
            if request.method in SAFE_METHODS:
                return True
            method = request.method.lower()
            if method not in getattr(view, "http_method_names", ()) or not hasattr(view, method):
                return True  # no handler: DRF answers 405 Method Not Allowed after this check
            # A change the view handles but does not map to an action is refused, never let through
            # on ``view``.
            return False
        return can(user, needed)
