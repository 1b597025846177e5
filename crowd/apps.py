"""App configuration for crowdqa's `crowd` app."""

from typing import Any

from django.apps import AppConfig


class CrowdConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "crowd"

    def ready(self) -> None:
        """Give batch creation the stage-2 HIT builder and the data layer the platforms (their names,
        labels and own launch settings): annotation does not import the apps above it. Register the
        platforms' system checks."""
        from annotation.services.batches import register_validation_hit_builder
        from crowd import checks  # noqa: F401  (registers crowdqa.W002)
        from crowd.providers.traits import register_platforms

        register_platforms()
        register_validation_hit_builder(_add_validation_hit)


def _add_validation_hit(batch: Any, pair: Any) -> Any:
    """:func:`crowd.services.validation_hits.add_validation_hit`, imported when a stage-2 batch is built:
    it brings the platforms' traits and the ranker's loader, which a web process need not load at start-up."""
    from crowd.services.validation_hits import add_validation_hit

    return add_validation_hit(batch, pair)
