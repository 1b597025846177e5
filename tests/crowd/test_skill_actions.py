"""The batch page's per-worker skill and its bulk actions by skill, on real SciQ questions validated by
simulated workers of known reliability."""

from __future__ import annotations

import pytest

from annotation.importers.mcq import read_sciq
from annotation.models import Assignment
from crowd.models import Payment, Worker
from crowd.simulation import ADVERSARIAL, CAREFUL, SPAMMER, make_crowd, sciq_items, simulate
from tests.crowd.stage2_collection import build_collection
from tests.factories import make_researcher

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection(shared_data):  # noqa: ANN001, ANN201
    questions = [(r.id, r.question, r.answer) for r in read_sciq(shared_data("sciq"), ("test",))[:120]]
    items = sciq_items(questions, bad_share=0.3, seed=4)
    crowd = make_crowd({CAREFUL: 5, SPAMMER: 2, ADVERSARIAL: 1}, seed=4)
    built = build_collection(items, simulate(items, crowd, k=3, seed=4, workload={SPAMMER: 2.0}))
    built.kinds = {built.workers[w.name].pseudonym: w.kind for w in crowd}  # type: ignore[attr-defined]
    return built


def test_batch_page__shows_skill_and_blocks_or_approves_by_it(client, collection) -> None:  # noqa: ANN001
    url = f"/batches/{collection.stage2.pk}/"
    action = f"/batches/{collection.stage2.pk}/by-skill/"
    # Anonymous: refused, nothing blocked.
    response = client.post(action, {"action": "block", "threshold": "0.6", "reason": "spam"})
    assert response.status_code in (302, 403) and not Worker.objects.filter(blocked=True).exists()
    client.force_login(make_researcher())
    page = client.get(url).content.decode()
    assert "Skill" in page and "Krippendorff" in page and "dawid_skene" in page
    for bad in ({"threshold": "abc"}, {"threshold": "2"}, {"threshold": "0.5"}, {"threshold": "nan"}):
        response = client.post(action, {"action": "block", "min_labels": "5", **bad}, follow=True)
        assert response.status_code == 200 and "Nothing was changed" in response.content.decode()
    assert not Worker.objects.filter(blocked=True).exists()

    client.post(action, {"action": "block", "threshold": "0.6", "min_labels": "10", "reason": "low skill"})
    blocked = set(Worker.objects.filter(blocked=True).values_list("pseudonym", flat=True))
    kinds = collection.kinds
    assert blocked == {p for p, k in kinds.items() if k in (SPAMMER, ADVERSARIAL)}

    response = client.post(action, {"action": "approve", "threshold": "0.8", "min_labels": "10"}, follow=True)
    assert "Approved" in response.content.decode()
    approved = Assignment.objects.filter(hit__batch=collection.stage2, status=Assignment.Status.APPROVED)
    assert approved.exists()
    assert {kinds[p] for p in approved.values_list("worker__pseudonym", flat=True)} == {CAREFUL}
    assert (
        Payment.objects.filter(assignment__in=approved, kind=Payment.Kind.REWARD).count() == approved.count()
    )
    left = Assignment.objects.filter(hit__batch=collection.stage2, status=Assignment.Status.SUBMITTED)
    assert {kinds[p] for p in left.values_list("worker__pseudonym", flat=True)} >= {SPAMMER, ADVERSARIAL}
