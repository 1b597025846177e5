"""The names of the crowd platforms a batch runs on and a worker comes from; no Django here.

``Batch.provider`` and ``Worker.platform`` store these values, and the crowd providers
(``crowd.providers``) are registered under them. What a platform does (arrival parameters, completion,
payments, admission) is its provider's business: callers ask ``crowd.providers.platform_rules`` and
never compare these names.
"""

from __future__ import annotations

import enum


class Platform(enum.StrEnum):
    """A crowd platform; the value is what the database stores."""

    LOCAL = "local"
    MTURK = "mturk"
    PROLIFIC = "prolific"

    @property
    def label(self) -> str:
        """The name researchers read (form choices, ``get_provider_display``)."""
        return LABELS[self]

    @classmethod
    def choices(cls) -> list[tuple[str, str]]:
        """``(value, label)`` pairs for a model or form field."""
        return [(member.value, member.label) for member in cls]

    @classmethod
    def values(cls) -> list[str]:
        """Every stored value, in declaration order."""
        return [member.value for member in cls]


LABELS = {
    Platform.LOCAL: "Local crowd",
    Platform.MTURK: "Amazon Mechanical Turk",
    Platform.PROLIFIC: "Prolific",
}
