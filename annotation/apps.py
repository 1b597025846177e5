"""App configuration for crowdqa's `annotation` app; registers the project's system checks."""

from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "annotation"

    def ready(self) -> None:
        from annotation import checks  # noqa: F401  (registers crowdqa.* system checks)
