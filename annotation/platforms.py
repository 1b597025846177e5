"""The names of the crowd platforms a batch runs on and a worker comes from; no Django here.

``Batch.provider`` and ``Worker.platform`` store these names. This layer knows only the local crowd
(crowdqa itself, which invites, expert batches and demos create rows on); every other platform is
registered by the crowd app when it starts (``crowd.apps``, from each platform package's traits in
``crowd.providers``), with the label researchers read and the launch settings of its own that a batch may
keep in ``Batch.options``. So adding a platform touches its package only, and what a platform does
(arrival, completion, payments, admission) stays its provider's business: callers ask
``crowd.providers.traits`` and never compare these names.

The model fields take :meth:`Platform.choices` as a callable, so their choices follow the registered
platforms without a migration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Final


@dataclass(frozen=True)
class PlatformOption:
    """A launch setting of one platform's own, kept in ``Batch.options`` and handed to its provider.

    Attributes:
        annotation: the value's type, as a pydantic field annotation (``list[dict[str, Any]]``).
        expected: the value's shape in words (error messages).
        meaning: what the setting is for.
    """

    annotation: Any
    expected: str
    meaning: str


class Platform:
    """The registered crowd platforms, by stored name, in registration order (the local crowd first)."""

    LOCAL: Final = "local"
    _labels: ClassVar[dict[str, str]] = {LOCAL: "Local crowd"}
    _options: ClassVar[dict[str, dict[str, PlatformOption]]] = {}

    @classmethod
    def register(cls, name: str, label: str, options: dict[str, PlatformOption] | None = None) -> None:
        """Add (or update) a platform: its stored name, the label researchers read, its own launch settings.

        Raises:
            ValueError: another platform already declares one of ``options``' keys.
        """
        options = dict(options or {})
        for other, declared in cls._options.items():
            taken = sorted(set(declared) & set(options)) if other != name else []
            if taken:
                raise ValueError(
                    f"platform {name!r}: platform {other!r} already declares launch setting {taken[0]!r}"
                )
        cls._labels[name] = label
        cls._options[name] = options

    @classmethod
    def values(cls) -> list[str]:
        """Every registered stored name."""
        return list(cls._labels)

    @classmethod
    def choices(cls) -> list[tuple[str, str]]:
        """``(name, label)`` pairs for a model or form field (pass the method itself: it is read lazily)."""
        return list(cls._labels.items())

    @classmethod
    def label(cls, name: str) -> str:
        """The name researchers read; an unregistered name as it is stored."""
        return cls._labels.get(name, name)

    @classmethod
    def options(cls) -> dict[str, PlatformOption]:
        """Every registered platform's own launch settings, by ``Batch.options`` key."""
        return {key: option for declared in cls._options.values() for key, option in declared.items()}
