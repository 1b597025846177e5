"""App configuration for crowdqa's `annotation` app; registers the project's system checks."""

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate

RESEARCHER_APPS = frozenset({"annotation", "crowd", "exports", "evaluation"})


def _researchers_group(sender: AppConfig, **kwargs: Any) -> None:
    """Keep the ``researchers`` and ``viewers`` groups complete after each migrate (permissions exist by
    then)."""
    if sender.label not in RESEARCHER_APPS:
        return
    from annotation.permissions import ensure_researchers_group, ensure_viewers_group

    ensure_researchers_group()
    ensure_viewers_group()


class AnnotationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "annotation"

    def ready(self) -> None:
        from annotation import checks  # noqa: F401  (registers crowdqa.* system checks)

        post_migrate.connect(_researchers_group, dispatch_uid="crowdqa-researchers-group")
