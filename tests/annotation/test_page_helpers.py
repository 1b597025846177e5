"""The HIT pages' static files and routes, worked out once per process (worker/page_helpers.py).

What the kept URLs must never do: differ from Django's ``static`` / ``reverse``, outlive a settings
change, or leak from one script prefix (``SCRIPT_NAME``) into another.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.template import TemplateDoesNotExist, engines
from django.templatetags.static import static
from django.test import override_settings
from django.urls import NoReverseMatch, reverse, set_script_prefix
from jinja2 import DebugUndefined

from annotation.services.batches import BatchSpec, create_batch
from crowd.models import Consent, Worker
from tests.factories import make_textbook
from worker import hit_links, page_helpers, task_templates
from worker.assigning import claim_next

STATIC = "{{ static('crowdqa/hit.css') }}"


def _render(source: str, **context: object) -> str:
    """``source`` rendered by the engine of the worker's HIT pages."""
    return engines[task_templates.ENGINE].from_string(source).render(context)


def test_cached_static_and_url__give_what_django_gives() -> None:
    assert _render(STATIC) == static("crowdqa/hit.css")
    assert _render("{{ cached_url('hits:tutorial', kind) }}", kind="sciq_question") == reverse(
        "hits:tutorial", args=["sciq_question"]
    )
    assert _render("{{ cached_url(name) }}", name="worker:home") == reverse("worker:home")


#: Every route of a signed link a task page or the consent page names.
TOKEN_ROUTES = (
    "hits:assignment",
    "hits:draft",
    "hits:active",
    "hits:return",
    "hits:locate-span",
    "hits:model-check",
    "hits:consent",
)


@pytest.mark.parametrize("token", ["12:AbC-d_9xYz", "p7:zz", "a b%c", "é/ü?#"])
def test_token_url__gives_what_reverse_gives_under_any_prefix(token: str) -> None:
    """A token is quoted as ``reverse`` quotes it, even one no signer makes (a slash stays quoted)."""
    for prefix in ("/", "/crowd/"):
        try:
            set_script_prefix(prefix)
            for name in TOKEN_ROUTES:
                expected = reverse(name, kwargs={"token": token}) if "/" not in token else None
                got = page_helpers.token_url(name, token)
                if expected is not None:
                    assert got == expected, (prefix, name)
                else:
                    assert got.startswith(prefix) and "%2F" in got
        finally:
            set_script_prefix("/")


def test_token_url__refuses_a_route_without_a_token() -> None:
    with pytest.raises(NoReverseMatch):
        page_helpers.token_url("worker:home", "12:abc")


def test_time_note__the_batch_limit_and_typical_minutes_as_plain_digits() -> None:
    """The consent page and a task page's Instructions print this note (one helper): digits, not
    ``1,200`` or a localized form, and markup, not escaped text."""
    batch = SimpleNamespace(time_limit_minutes=1200)
    tutorial = SimpleNamespace(consent=SimpleNamespace(typical_minutes=(3, 5)))
    note = _render("{{ time_note(tutorial, batch) }}", tutorial=tutorial, batch=batch)
    assert note.startswith('<p class="time-note" id="time-note"><strong>Time:</strong>')
    assert "usually takes 3 to 5 minutes. You have 1200 minutes from accepting it" in note


def test_cached_static__follows_a_settings_change() -> None:
    before = _render(STATIC)
    with override_settings(STATIC_URL="https://cdn.example.org/assets/"):
        assert _render(STATIC) == "https://cdn.example.org/assets/crowdqa/hit.css"
    assert _render(STATIC) == before


def test_cached_urls__are_kept_per_script_prefix() -> None:
    try:
        set_script_prefix("/crowd/")
        assert _render(STATIC) == static("crowdqa/hit.css")
        assert (
            _render("{{ cached_url('hits:tutorial', 'sciq_question') }}")
            == "/crowd/hit/tutorial/sciq_question/"
        )
    finally:
        set_script_prefix("/")
    assert _render("{{ cached_url('hits:tutorial', 'sciq_question') }}") == "/hit/tutorial/sciq_question/"
    assert _render(STATIC) == static("crowdqa/hit.css")


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


def test_task_pages__print_nothing_for_a_missing_value_even_in_debug() -> None:
    """As Django's templates do; the Jinja2 backend would pass ``DebugUndefined`` with ``DJANGO_DEBUG`` on."""
    env = task_templates.environment(undefined=DebugUndefined, autoescape=True)
    assert (
        env.from_string("[{{ missing }}][{{ missing.field.value }}][{{ {}|get('x') }}]").render() == "[][][]"
    )


@pytest.mark.parametrize(
    "name",
    [
        "hits/page_base.html",
        "hits/message.html",
        "hits/consent.html",
        "hits/tutorial.html",
        "hits/tutorial_page.html",
        "hits/hit_base.html",
        "mturk/submit.html",
    ],
)
def test_worker_hit_pages__one_engine_renders_them(name: str) -> None:
    """The pages around a HIT are Jinja2 templates only: a Django template of the same name would be the
    one ``render`` finds first, and the views pass ``using=ENGINE`` so they never look there."""
    assert engines[task_templates.ENGINE].get_template(name)
    with pytest.raises(TemplateDoesNotExist):
        engines["django"].get_template(name)
