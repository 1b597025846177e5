"""The project's rule for reading a flag from the environment (docs/reference/configuration.md).

Apart from :mod:`config.settings` so that what reads the environment without loading Django's settings
(``gunicorn.conf.py`` before the application loads, a crowd platform's traits) reads a flag as the
settings do.
"""

from __future__ import annotations

import os


def env_bool(name: str, default: bool) -> bool:
    """A boolean environment variable: "1", "true", "yes", "on" are true, unset or empty is ``default``."""
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")
