"""App configuration for crowdqa's `evaluation` app."""

from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evaluation"

    def ready(self) -> None:
        """Give exports the expert agreement a release's card quotes (exports does not import evaluation)."""
        from evaluation.services.human import agreement_for
        from exports.services.exporting import register_agreement_source

        register_agreement_source(agreement_for)
