"""What the platform clients retried in this process, for the summary long commands print.

Why: a launch of a thousand HITs under throttling retries hundreds of calls, silently (botocore for
MTurk, tenacity for Prolific). A researcher should see that it happened, and how much, without reading
logs: ``launch_batch``, ``sync_batches``, ``review_batch`` and ``resolve_payments`` print
``since(mark())`` when they finish.
"""

from __future__ import annotations

import threading
from collections import Counter

_lock = threading.Lock()
_retried: Counter[str] = Counter()


def record(platform: str, operation: str, retries: int) -> None:
    """Count ``retries`` more attempts of one call (``platform operation``)."""
    if retries <= 0:
        return
    with _lock:
        _retried[f"{platform} {operation}"] += retries


def mark() -> Counter[str]:
    """A copy of the counts now, to pass to ``since``."""
    with _lock:
        return Counter(_retried)


def since(before: Counter[str]) -> dict[str, int]:
    """The retries made since ``before`` was taken, per call, largest first."""
    with _lock:
        delta = Counter(_retried)
    delta.subtract(before)
    return {name: n for name, n in delta.most_common() if n > 0}


def describe(retried: dict[str, int]) -> str:
    """One line for the researcher: "retried 12 calls (mturk CreateHITWithHITType 10, ...)" or ""."""
    if not retried:
        return ""
    total = sum(retried.values())
    parts = ", ".join(f"{name} {n}" for name, n in list(retried.items())[:5])
    return f"retried {total} platform call(s) after throttling or transient faults ({parts})"
