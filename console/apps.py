"""App configuration for crowdqa's `console` app: the researcher's face.

The researcher console's pages: home, corpora, documents, batches and their status, the New batch
form and launch, assignments and their review, bonuses, blocks and the review queue, and the template
tags of those pages. It sits on top of the domain apps and imports from them; no domain app imports it.
Its URL names keep the ``annotation`` namespace (``annotation:home``, ``annotation:batch``...), which
templates, redirects and tests use. It has no models.
"""

from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "console"
