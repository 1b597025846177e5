"""Where a release's card gets its agreement figures from, without exports importing the apps above it.

The figures come from expert benchmark runs, which the evaluation app owns and which itself reads
releases; evaluation registers its reader here from its ``AppConfig.ready``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

AgreementSource = Callable[[str], tuple[dict[str, float], Optional[str]]]
"""Dataset name -> (metric -> agreement figure, a note on where they come from), or ``({}, None)``."""
_agreement_sources: list[AgreementSource] = []


def register_agreement_source(source: AgreementSource) -> None:
    """Let an app above exports supply the agreement figures a release's card quotes.

    Why: the figures come from expert benchmark runs, which the evaluation app owns and which itself
    reads releases; it registers its reader here from its ``AppConfig.ready`` so that exports never
    imports evaluation. Registering the same source twice keeps one.
    """
    if source not in _agreement_sources:
        _agreement_sources.append(source)


def card_agreement(name: str) -> tuple[dict[str, float], Optional[str]]:
    """The first registered source's agreement figures for dataset ``name``, or ``({}, None)``."""
    for source in _agreement_sources:
        figures, note = source(name)
        if figures:
            return figures, note
    return {}, None
