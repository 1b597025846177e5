"""The tutorial is served once per kind (public, cached, with an ETag) instead of inlined in every HIT
page; pages are gzipped and revalidate with their ETag."""

from __future__ import annotations

import gzip

import pytest
from django.template.loader import get_template

from annotation.hits import handler_for
from annotation.models import Batch
from annotation.services.batches import BatchSpec, create_batch
from crowd.models import Consent
from tests.factories import make_textbook, make_worker
from worker import hit_links
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db

PASSAGES = (
    "Mitochondria release energy from glucose during cellular respiration in most cells.",
    "Chloroplasts capture light energy and store it in the chemical bonds of glucose.",
    "Ribosomes build proteins by linking amino acids in the order given by messenger RNA.",
)


@pytest.fixture
def page_url() -> str:
    make_textbook("tb", PASSAGES)
    batch = create_batch(BatchSpec(kind="sciq_question", corpus="tb"))
    batch.publish()
    assignment = claim_next(batch, make_worker("a"))
    Consent.objects.create(worker=assignment.worker, batch=batch)
    return hit_links.url_for(assignment)


@pytest.mark.parametrize("kind", Batch.Kind.values)
def test_tutorial__each_kind_serves_its_examples_publicly_cached(client, kind: str) -> None:  # type: ignore[no-untyped-def]
    tutorial = handler_for(kind).tutorial()
    assert get_template(tutorial.examples_template)
    part = client.get(f"/hit/tutorial/{kind}/", {"part": "1"})
    assert part.status_code == 200
    assert "public" in part["Cache-Control"] and "max-age=" in part["Cache-Control"]
    body = part.content.decode()
    assert tutorial.intro in body and "<html" not in body
    assert "Worked examples" in body or "two worked examples each" in body
    page = client.get(f"/hit/tutorial/{kind}/").content.decode()
    assert "<html" in page and f"<h1>{tutorial.title}</h1>" in page


def test_tutorial__unknown_kind_is_404(client) -> None:  # type: ignore[no-untyped-def]
    for kind in ("generic", "nope", "SCIQ_QUESTION"):
        assert client.get(f"/hit/tutorial/{kind}/").status_code == 404


def test_tutorial__revalidates_with_its_etag(client) -> None:  # type: ignore[no-untyped-def]
    first = client.get("/hit/tutorial/sciq_question/", {"part": "1"})
    again = client.get("/hit/tutorial/sciq_question/", {"part": "1"}, HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304 and again.content == b""


def test_hit_page__links_the_tutorial_instead_of_inlining_it(client, page_url: str) -> None:  # type: ignore[no-untyped-def]
    tutorial = handler_for("sciq_question").tutorial()
    html = client.get(page_url).content.decode()
    assert 'data-src="/hit/tutorial/sciq_question/?part=1"' in html
    assert f'<h1 id="help-title">{tutorial.title}</h1>' in html and 'id="time-note"' in html
    assert tutorial.examples[0].why not in html  # the worked examples come with the fetched body only


def test_hit_page__gzipped_for_browsers_that_accept_it(client, page_url: str) -> None:  # type: ignore[no-untyped-def]
    plain = client.get(page_url)
    packed = client.get(page_url, HTTP_ACCEPT_ENCODING="gzip")
    assert packed["Content-Encoding"] == "gzip" and "Accept-Encoding" in packed["Vary"]
    assert len(packed.content) < len(plain.content) / 2
    assert gzip.decompress(packed.content).decode().count('id="hit-form"') == 1
