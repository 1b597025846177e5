"""App configuration for crowdqa's `evaluation` app."""

from typing import Optional

from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evaluation"

    def ready(self) -> None:
        """Give exports the expert agreement a release's card quotes (exports does not import evaluation)."""
        from exports.agreement_sources import register_agreement_source

        register_agreement_source(_card_agreement)


def _card_agreement(name: str) -> tuple[dict[str, float], Optional[str]]:
    """:func:`evaluation.services.human.agreement_for`, imported when an export asks: that module brings
    the metrics' numeric stack, which a web process must not load at start-up."""
    from evaluation.services.human import agreement_for

    return agreement_for(name)
