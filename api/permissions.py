"""The console's permissions (:mod:`annotation.permissions`) as DRF permission classes.

Security behavior: every endpoint needs an authenticated account (token or session; the public dashboard
switch opens nothing here) holding the researcher ``view`` permission to read; each action needs the
permission the console's button needs (``launch``, ``manage``, ``review``, ``pay``), so an account that may
only view is refused (403) through the API exactly as on the pages.
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
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
        return needed is None or can(user, needed)
