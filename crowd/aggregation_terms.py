"""The words of aggregation, apart from the methods: the method names and a SciQ validation's labels.

Forms, option checks and the gold grader in the web process use these words; the methods
(crowd.aggregation) need pandas and crowd-kit, which a web process should not load to draw a select box or
grade one answer.
"""

from __future__ import annotations

from collections.abc import Sequence

MAJORITY = "majority"
DAWID_SKENE = "dawid_skene"
MACE_METHOD = "mace"
METHODS: tuple[str, ...] = (MAJORITY, DAWID_SKENE, MACE_METHOD)
DEFAULT_METHOD = DAWID_SKENE

ACCEPT = "accept"
REJECT = "reject"
"""The two labels of a SciQ stage-2 validation: no flag raised (exam-worthy), or at least one flag."""


def validation_label(flags: Sequence[str]) -> str:
    """The label of one SciQ stage-2 validation: :data:`ACCEPT` when the validator raised no flag."""
    return REJECT if flags else ACCEPT
