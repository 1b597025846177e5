"""Every provider runs the one contract (``tests/crowd/provider_contract.py``) against its stand-in.

MTurk talks boto3 to the fake MTurk server, Prolific talks HTTP to the fake Prolific server, the local crowd
reads and writes the test database, and the in-memory fake is itself. No test here reaches a live service.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Optional
from urllib.parse import parse_qsl, urlsplit

import pytest

from annotation.models import HIT, Assignment, Batch
from crowd.models import Worker
from crowd.providers.base import (
    InMemoryPaymentStore,
    PaymentState,
    PublishedBatch,
    PublishRequest,
    PublishUnit,
)
from crowd.providers.fake.provider import FakeProvider
from crowd.providers.local.provider import LocalProvider
from crowd.providers.mturk import api as mturk_api
from crowd.providers.mturk.provider import MTurkProvider
from crowd.providers.prolific.api import ProlificClient
from crowd.providers.prolific.provider import ProlificProvider
from tests.crowd.provider_contract import ProviderContract, ProviderHarness
from tests.factories import make_batch, make_worker
from tests.fakes.fake_mturk_server import FakeMTurkServer
from tests.fakes.fake_prolific_server import FakeProlificServer
from worker.assigning import claim_platform_assignment


def _query(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query))


class MTurkHarness(ProviderHarness):
    """MTurk through boto3 against the fake MTurk server (``AWS_ENDPOINT_URL_MTURK`` points at it)."""

    def __init__(self, server: FakeMTurkServer) -> None:
        self.server = server
        self.provider = MTurkProvider(mturk_api.make_client(max_attempts=1))

    def start(
        self, batch: PublishedBatch, unit_id: str, worker_id: str
    ) -> tuple[str, Optional[dict[str, str]]]:
        assignment_id = self.server.fake.accept(unit_id, worker_id)
        return assignment_id, _query(self.server.fake.worker_url(unit_id, assignment_id, worker_id))

    def finish(self, batch: PublishedBatch, assignment_id: str) -> None:
        self.server.fake.external_submit({"assignmentId": [assignment_id], "answer": ["42"]})

    def bonuses_paid(self, assignment_id: str, payments: InMemoryPaymentStore) -> list[int]:
        return [
            round(float(b["BonusAmount"]) * 100)
            for b in self.server.fake.bonuses
            if b["AssignmentId"] == assignment_id
        ]

    def is_blocked(self, worker_id: str) -> bool:
        return worker_id in self.server.fake.blocks


class ProlificHarness(ProviderHarness):
    """Prolific through its REST client against the fake Prolific server."""

    def __init__(self, server: FakeProlificServer) -> None:
        self.server = server
        self.block_group = server.fake.create_group({"name": "crowdqa blocked"})[1]["id"]
        client = ProlificClient(token=server.token, base_url=server.api_url, timeout=(2.0, 5.0))
        self.provider = ProlificProvider(client, workspace_id="ws1", block_group_id=self.block_group)

    def start(
        self, batch: PublishedBatch, unit_id: str, worker_id: str
    ) -> tuple[str, Optional[dict[str, str]]]:
        session = self.server.fake.start(unit_id, worker_id)
        return session, _query(self.server.fake.study_url_for(unit_id, worker_id, session))

    def finish(self, batch: PublishedBatch, assignment_id: str) -> None:
        self.server.fake.complete(assignment_id, batch.completion_code)

    def bonuses_paid(self, assignment_id: str, payments: InMemoryPaymentStore) -> list[int]:
        participant = self.server.fake.submissions[assignment_id]["participant_id"]
        return [p["cents"] for p in self.server.fake.payments if p["participant_id"] == participant]

    def is_blocked(self, worker_id: str) -> bool:
        return worker_id in self.server.fake.groups[self.block_group]["participants"]


class LocalHarness(ProviderHarness):
    """The local crowd: the batch's HITs are its units, a worker claims one through admission."""

    def __init__(self) -> None:
        self.provider = LocalProvider()
        self.batch: Optional[Batch] = None

    def request(self, units: int = 2, assignments: int = 2) -> PublishRequest:
        self.batch = make_batch(provider=LocalProvider.name, status=Batch.Status.PUBLISHED)
        hits = [
            HIT.objects.create(batch=self.batch, position=i, max_assignments=assignments)
            for i in range(units)
        ]
        return PublishRequest(
            batch_ref=str(self.batch.pk),
            title="Write questions about a syllabus",
            description="Read a syllabus and write question-answer pairs.",
            external_url="https://crowdqa.example.org/work/",
            reward_cents=150,
            assignments=assignments,
            units=tuple(PublishUnit(str(hit.pk)) for hit in hits),
        )

    def start(
        self, batch: PublishedBatch, unit_id: str, worker_id: str
    ) -> tuple[str, Optional[dict[str, str]]]:
        assert self.batch is not None
        self.batch.refresh_from_db()
        worker = make_worker(worker_id, platform=LocalProvider.name)
        hit = HIT.objects.get(pk=int(unit_id))
        return str(claim_platform_assignment(self.batch, hit, worker, platform_ref="").pk), None

    def finish(self, batch: PublishedBatch, assignment_id: str) -> None:
        Assignment.objects.get(pk=int(assignment_id)).submit({"answer": "42"})

    def settle(self, assignment_id: str, status: str) -> None:
        assignment = Assignment.objects.get(pk=int(assignment_id))
        if status == "approved":
            assignment.approve()
        else:
            assignment.reject("see the instructions")

    def bonuses_paid(self, assignment_id: str, payments: InMemoryPaymentStore) -> list[int]:
        return [r.amount_cents for r in payments.records() if r.state == PaymentState.PAID]

    def is_blocked(self, worker_id: str) -> bool:
        return Worker.objects.get(platform=LocalProvider.name, platform_id=worker_id).blocked


class FakeHarness(ProviderHarness):
    """The in-memory fake: a worker's work is submitted as soon as it starts."""

    def __init__(self) -> None:
        self.provider: FakeProvider = FakeProvider()

    def start(
        self, batch: PublishedBatch, unit_id: str, worker_id: str
    ) -> tuple[str, Optional[dict[str, str]]]:
        return self.provider.simulate_submission(unit_id, worker_id).platform_assignment_id, None

    def finish(self, batch: PublishedBatch, assignment_id: str) -> None:
        """The fake's submission is already in."""

    def bonuses_paid(self, assignment_id: str, payments: InMemoryPaymentStore) -> list[int]:
        return [cents for _, paid_for, cents in self.provider.paid if paid_for == assignment_id]

    def is_blocked(self, worker_id: str) -> bool:
        return worker_id in self.provider.blocked


class TestMTurkContract(ProviderContract):
    @pytest.fixture
    def harness(self, fake_mturk_server: FakeMTurkServer) -> MTurkHarness:
        return MTurkHarness(fake_mturk_server)


class TestProlificContract(ProviderContract):
    @pytest.fixture
    def harness(self, fake_prolific_server: FakeProlificServer) -> ProlificHarness:
        return ProlificHarness(fake_prolific_server)


@pytest.mark.django_db
class TestLocalContract(ProviderContract):
    @pytest.fixture
    def harness(self) -> Iterator[LocalHarness]:
        yield LocalHarness()


class TestFakeContract(ProviderContract):
    @pytest.fixture
    def harness(self) -> FakeHarness:
        return FakeHarness()
