"""MTurk qualification requirement builders (the dicts of ``QualificationRequirements``).

System qualification ids are the same in the sandbox and live. ``lacks_qualification_requirement``
(``DoesNotExist``) keeps out workers holding a qualification: those who already did a batch, or a soft
block that, unlike ``CreateWorkerBlock``, does not count against the worker's account.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

LOCALE_QUALIFICATION = "00000000000000000071"
APPROVAL_RATE_QUALIFICATION = "000000000000000000L0"
NUMBER_APPROVED_QUALIFICATION = "00000000000000000040"


def locale_requirement(
    countries: Sequence[str], actions_guarded: str = "DiscoverPreviewAndAccept"
) -> dict[str, Any]:
    """Require a worker locale in ``countries`` (ISO 3166 alpha-2)."""
    if not countries:
        raise ValueError("locale_requirement needs at least one country")
    return {
        "QualificationTypeId": LOCALE_QUALIFICATION,
        "Comparator": "In",
        "LocaleValues": [{"Country": c.upper()} for c in countries],
        "ActionsGuarded": actions_guarded,
    }


def approval_rate_requirement(
    min_percent: int, actions_guarded: str = "DiscoverPreviewAndAccept"
) -> dict[str, Any]:
    """Require an approval rate of at least ``min_percent`` (0-100)."""
    if not 0 <= min_percent <= 100:
        raise ValueError(f"approval rate must be 0-100, got {min_percent}")
    return {
        "QualificationTypeId": APPROVAL_RATE_QUALIFICATION,
        "Comparator": "GreaterThanOrEqualTo",
        "IntegerValues": [min_percent],
        "ActionsGuarded": actions_guarded,
    }


def number_approved_requirement(
    min_count: int, actions_guarded: str = "DiscoverPreviewAndAccept"
) -> dict[str, Any]:
    """Require at least ``min_count`` approved HITs."""
    return {
        "QualificationTypeId": NUMBER_APPROVED_QUALIFICATION,
        "Comparator": "GreaterThanOrEqualTo",
        "IntegerValues": [int(min_count)],
        "ActionsGuarded": actions_guarded,
    }


def has_qualification_requirement(
    qualification_type_id: str,
    min_value: Optional[int] = None,
    actions_guarded: str = "DiscoverPreviewAndAccept",
) -> dict[str, Any]:
    """Require a custom qualification (the screening qualification), optionally with a minimum score."""
    req: dict[str, Any] = {"QualificationTypeId": qualification_type_id, "ActionsGuarded": actions_guarded}
    if min_value is None:
        req["Comparator"] = "Exists"
    else:
        req["Comparator"] = "GreaterThanOrEqualTo"
        req["IntegerValues"] = [int(min_value)]
    return req


def lacks_qualification_requirement(
    qualification_type_id: str, actions_guarded: str = "DiscoverPreviewAndAccept"
) -> dict[str, Any]:
    """Keep out workers holding a qualification (did an earlier batch, soft-blocked): ``DoesNotExist``."""
    return {
        "QualificationTypeId": qualification_type_id,
        "Comparator": "DoesNotExist",
        "ActionsGuarded": actions_guarded,
    }
