"""System checks with stable ids (``crowdqa.E001`` ...) for configuration mistakes.

Errors (``E``) make the configuration fail closed: ``manage.py check --deploy`` fails and the WSGI
application (gunicorn) refuses to start (config/wsgi.py runs :func:`startup_errors`). Warnings (``W``)
are shown by ``check --deploy``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register, run_checks

MIN_SALT_BYTES = 16


def _demo() -> bool:
    """Only the local demo (``CROWDQA_DEMO``) may run on the development key; DEBUG never decides it.

    DEBUG is a display setting: a server started with it on is just as reachable, and HIT links signed
    with the published key would open its real assignments.
    """
    return bool(getattr(settings, "CROWDQA_DEMO", False))


@register("crowdqa", deploy=True)
def check_secret_key(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """Refuse to serve on the published development key outside the demo, whatever DEBUG says.

    Signed HIT links are the credential of HIT pages: with a published key anyone could sign one.
    """
    if settings.SECRET_KEY != getattr(settings, "DEVELOPMENT_SECRET_KEY", None):
        return []
    if _demo():
        return [
            Warning(
                "DJANGO_SECRET_KEY is not set: the built-in development key is in use (demo).",
                hint="Never expose a server running on the development key to workers.",
                id="crowdqa.W001",
            )
        ]
    return [
        Error(
            "DJANGO_SECRET_KEY is not set: crowdqa will not serve on the published development key.",
            hint="Set DJANGO_SECRET_KEY to a long random value (python -c 'import secrets; "
            "print(secrets.token_urlsafe(50))'); for a local trial on this machine, run scripts/demo.sh.",
            id="crowdqa.E001",
        )
    ]


@register("crowdqa")
def check_pseudonym_salt(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """The pseudonym salt must be long enough to keep worker ids unrecoverable (and to be usable at all)."""
    salt = str(getattr(settings, "CROWDQA_PSEUDONYM_SALT", ""))
    if len(salt.encode("utf-8")) < MIN_SALT_BYTES:
        return [
            Error(
                f"CROWDQA_PSEUDONYM_SALT (or DJANGO_SECRET_KEY, its default) is shorter than "
                f"{MIN_SALT_BYTES} bytes: worker pseudonyms cannot be made safely.",
                hint="Set CROWDQA_PSEUDONYM_SALT (or DJANGO_SECRET_KEY) to a long random value.",
                id="crowdqa.E002",
            )
        ]
    return []


@register("crowdqa", deploy=True)
def check_pseudonym_salt_secret(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """Outside the demo the pseudonym salt must not be the published development key."""
    salt = str(getattr(settings, "CROWDQA_PSEUDONYM_SALT", ""))
    if salt == getattr(settings, "DEVELOPMENT_SECRET_KEY", None) and not _demo():
        return [
            Error(
                "The pseudonym salt is the published development key: anyone could recompute release "
                "pseudonyms from worker ids.",
                hint="Set DJANGO_SECRET_KEY or CROWDQA_PSEUDONYM_SALT to a long random value.",
                id="crowdqa.E003",
            )
        ]
    return []


def startup_errors() -> list[CheckMessage]:
    """The crowdqa errors that stop a server from starting (deployment checks included)."""
    messages = run_checks(tags=["crowdqa"], include_deployment_checks=True)
    return [m for m in messages if m.is_serious()]


@register("crowdqa")
def check_storage_url(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """A malformed ``CROWDQA_STORAGE_URL`` stops every process instead of writing to the local disk.

    On several hosts a file written to one host's disk is missing on the others (config/storage.py).
    """
    error = str(getattr(settings, "CROWDQA_STORAGE_ERROR", "") or "")
    if not error:
        return []
    return [
        Error(
            f"CROWDQA_STORAGE_URL is malformed: {error}.",
            hint="Set it to s3://BUCKET/PREFIX (AWS_ENDPOINT_URL_S3 for an S3-compatible store), or unset "
            "it to keep files on this machine's disk.",
            id="crowdqa.E030",
        )
    ]
