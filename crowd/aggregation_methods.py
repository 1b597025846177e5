"""The names of the aggregation methods, apart from the methods themselves.

Forms and option checks in the web process offer these names; the methods (crowd.aggregation) need pandas
and crowd-kit, which a web process should not load to draw a select box.
"""

from __future__ import annotations

MAJORITY = "majority"
DAWID_SKENE = "dawid_skene"
MACE_METHOD = "mace"
METHODS: tuple[str, ...] = (MAJORITY, DAWID_SKENE, MACE_METHOD)
DEFAULT_METHOD = DAWID_SKENE
