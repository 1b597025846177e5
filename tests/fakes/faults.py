"""Seeded fault injection for the fake platform servers: throttling, 5xx, timeouts, resets, lost replies.

Why: real MTurk throttles (``ThrottlingException``), answers 503 and drops connections after applying a
call; Prolific answers 429 with ``Retry-After`` and 5xx. crowdqa's retries and idempotency are only
shown to work if the stand-ins the tests use fail the same ways, at a chosen rate per operation, and
the same way on every run of a test (a seeded ``random.Random``).

Kinds of fault (``KINDS``):

- ``throttle``: the call is refused before it takes effect (MTurk ``ThrottlingException``; Prolific 429
  with ``Retry-After``).
- ``server_error``: refused before it takes effect with a 5xx (MTurk 503 ``ServiceUnavailable``;
  Prolific 503).
- ``timeout``: the server stalls ``stall_seconds`` and closes the connection without answering; the
  call did not take effect.
- ``reset``: the connection is reset (TCP RST) without an answer; the call did not take effect.
- ``lost_reply``: the call TAKES EFFECT, then the connection is closed without an answer (the case
  idempotency tokens and write-ahead records exist for).

Usage::

    faults = Faults(seed=7)
    faults.set("*", throttle=0.10, server_error=0.02, lost_reply=0.01)   # every operation
    faults.set("SendBonus", lost_reply=0.5)                               # one operation
    faults.script("CreateHITWithHITType", ["throttle"] * 4, after=100)   # the 101st call, 4 times
    fake = FakeMTurk(faults=faults)

Operations are named as each fake names them: MTurk's ``X-Amz-Target`` operation (``CreateHITWithHITType``),
Prolific's handler name (``create_study``, ``pay_bonus``). ``injected`` counts what was injected.
"""

from __future__ import annotations

import random
import threading
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Optional

KINDS = ("throttle", "server_error", "timeout", "reset", "lost_reply")
BEFORE = frozenset({"throttle", "server_error", "timeout", "reset"})
"""Kinds injected before the call takes effect (``lost_reply`` is injected after it)."""


@dataclass
class Faults:
    """Which faults to inject, per operation and rate, reproducibly from ``seed``.

    Attributes:
        seed: the random generator's seed (the same seed and calls give the same faults).
        retry_after: the ``Retry-After`` header value (seconds) a throttled Prolific call carries.
        stall_seconds: how long a ``timeout`` stalls before closing the connection.
    """

    seed: int = 0
    retry_after: str = "0"
    stall_seconds: float = 0.2
    rates: dict[str, dict[str, float]] = field(default_factory=dict)
    injected: Counter[tuple[str, str]] = field(default_factory=Counter)
    calls: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)
        self._lock = threading.Lock()
        self._scripts: dict[str, deque[str]] = {}
        self._script_after: dict[str, int] = {}

    def set(self, operation: str, **rates: float) -> Faults:
        """Inject each kind at its rate (0..1) on ``operation`` (``"*"``: every operation without its own).

        Raises:
            ValueError: an unknown kind or a rate outside 0..1, or rates adding up to more than 1.
        """
        for kind, rate in rates.items():
            if kind not in KINDS:
                raise ValueError(f"unknown fault kind {kind!r}; expected one of {KINDS}")
            if not 0 <= rate <= 1:
                raise ValueError(f"rate of {kind} must be within 0..1, got {rate}")
        if sum(rates.values()) > 1:
            raise ValueError(f"rates on {operation} add up to more than 1: {rates}")
        self.rates[operation] = dict(rates)
        return self

    def script(self, operation: str, kinds: Iterable[str], after: int = 0) -> Faults:
        """Inject ``kinds`` in order on the calls of ``operation`` that follow its first ``after`` calls."""
        kinds = list(kinds)
        for kind in kinds:
            if kind not in KINDS:
                raise ValueError(f"unknown fault kind {kind!r}; expected one of {KINDS}")
        with self._lock:
            self._scripts[operation] = deque(kinds)
            self._script_after[operation] = self.calls[operation] + after
        return self

    def clear(self) -> None:
        """Inject nothing from now on (counts are kept)."""
        with self._lock:
            self.rates.clear()
            self._scripts.clear()

    def draw(self, operation: str) -> Optional[str]:
        """Decide the fault of one call of ``operation`` (None: answer normally) and count it."""
        with self._lock:
            self.calls[operation] += 1
            queue = self._scripts.get(operation)
            if queue and self.calls[operation] > self._script_after[operation]:
                kind: Optional[str] = queue.popleft()
            else:
                kind = None
                rates = self.rates.get(operation, self.rates.get("*", {}))
                roll = self._random.random()
                for name in KINDS:
                    rate = rates.get(name, 0.0)
                    if roll < rate:
                        kind = name
                        break
                    roll -= rate
            if kind is not None:
                self.injected[(operation, kind)] += 1
            return kind

    def total(self, kind: Optional[str] = None) -> int:
        """How many faults were injected (of one kind, or all)."""
        return sum(n for (_, k), n in self.injected.items() if kind is None or k == kind)

    def summary(self) -> dict[str, int]:
        """Injected faults per kind."""
        return {kind: self.total(kind) for kind in KINDS if self.total(kind)}
