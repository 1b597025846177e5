"""Crowd providers (MTurk, Prolific, a fake for tests) behind one interface; no Django imports.

The public API: ``get_provider(name, settings)``, the dataclasses and protocols of ``base``, and the
``errors`` hierarchy.
"""

from crowd.providers.base import (
    CrowdProvider,
    DedupStore,
    InMemoryDedupStore,
    InMemoryPaymentStore,
    PaymentRecord,
    PaymentResult,
    PaymentState,
    PaymentStatus,
    PaymentStore,
    PlatformSubmission,
    PublishedBatch,
    PublishedUnit,
    PublishRequest,
    PublishUnit,
    ReconcileReport,
    ReviewResult,
    SubmissionStatus,
)
from crowd.providers.factory import get_provider, register_provider

__all__ = [
    "CrowdProvider",
    "DedupStore",
    "InMemoryDedupStore",
    "InMemoryPaymentStore",
    "PaymentRecord",
    "PaymentResult",
    "PaymentState",
    "PaymentStatus",
    "PaymentStore",
    "PlatformSubmission",
    "PublishRequest",
    "PublishUnit",
    "PublishedBatch",
    "PublishedUnit",
    "ReconcileReport",
    "ReviewResult",
    "SubmissionStatus",
    "get_provider",
    "register_provider",
]
