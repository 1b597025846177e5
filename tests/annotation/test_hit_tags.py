"""The HIT pages' static files and routes, worked out once per process (worker/templatetags/hit_tags.py).

What the kept URLs must never do: differ from ``{% static %}`` / ``{% url %}``, outlive a settings
change, or leak from one script prefix (``SCRIPT_NAME``) into another.
"""

from __future__ import annotations

import pytest
from django.template import Context, Template
from django.templatetags.static import static
from django.test import override_settings
from django.urls import reverse, set_script_prefix

from annotation.services.batches import BatchSpec, create_batch
from crowd.models import Consent, Worker
from tests.factories import make_textbook
from worker import hit_links
from worker.assigning import claim_next


def _render(source: str, **context: object) -> str:
    return Template("{% load static hit_tags %}" + source).render(Context(context))


def test_cached_static_and_url__give_what_the_django_tags_give() -> None:
    assert _render("{% cached_static 'crowdqa/hit.css' %}") == _render("{% static 'crowdqa/hit.css' %}")
    assert _render("{% cached_url 'hits:tutorial' kind %}", kind="sciq_question") == _render(
        "{% url 'hits:tutorial' kind %}", kind="sciq_question"
    )
    assert _render("{% cached_url name %}", name="worker:home") == reverse("worker:home")


def test_cached_static__follows_a_settings_change() -> None:
    before = _render("{% cached_static 'crowdqa/hit.css' %}")
    with override_settings(STATIC_URL="https://cdn.example.org/assets/"):
        assert (
            _render("{% cached_static 'crowdqa/hit.css' %}")
            == "https://cdn.example.org/assets/crowdqa/hit.css"
        )
    assert _render("{% cached_static 'crowdqa/hit.css' %}") == before


def test_cached_urls__are_kept_per_script_prefix() -> None:
    try:
        set_script_prefix("/crowd/")
        assert _render("{% cached_static 'crowdqa/hit.css' %}") == static("crowdqa/hit.css")
        assert (
            _render("{% cached_url 'hits:tutorial' 'sciq_question' %}")
            == "/crowd/hit/tutorial/sciq_question/"
        )
    finally:
        set_script_prefix("/")
    assert _render("{% cached_url 'hits:tutorial' 'sciq_question' %}") == "/hit/tutorial/sciq_question/"
    assert _render("{% cached_static 'crowdqa/hit.css' %}") == static("crowdqa/hit.css")


@pytest.mark.django_db
def test_hit_page__served_under_a_script_prefix_links_its_tutorial_under_it(client) -> None:
    """crowdqa mounted under /crowd (SCRIPT_NAME, which the WSGI handler makes the script prefix) after a
    page at the root was served: the page's tutorial link carries the prefix, the root's does not, and
    its files are where ``{% static %}`` puts them."""
    make_textbook(
        "tb",
        (
            "Mitochondria release energy from glucose during cellular respiration in most cells.",
            "Chloroplasts capture light energy and store it in the chemical bonds of glucose.",
            "Ribosomes build proteins by linking amino acids in the order given by messenger RNA.",
        ),
    )
    batch = create_batch(BatchSpec(kind="sciq_question", corpus="tb", assignments=1))
    batch.publish()
    worker = Worker.objects.get_or_create_for("local", "w-prefix")
    assignment = claim_next(batch, worker)
    Consent.objects.create(worker=worker, batch=batch)
    url = hit_links.url_for(assignment)
    root = client.get(url).content.decode()
    try:
        set_script_prefix("/crowd/")  # the test client does not set it from SCRIPT_NAME
        mounted = client.get(url).content.decode()
        stylesheet, script = static("crowdqa/hit.css"), static("crowdqa/sciq.js")
    finally:
        set_script_prefix("/")
    assert 'data-src="/hit/tutorial/sciq_question/?part=1"' in root
    assert 'data-src="/crowd/hit/tutorial/sciq_question/?part=1"' in mounted
    assert f'href="{stylesheet}"' in mounted and f'src="{script}"' in mounted
