"""``manage.py api_token NAME``: print the API token of account NAME (created on first use).

The token stands for the account: the API grants it exactly the account's researcher permissions.
``--rotate`` replaces it (the old one stops working at once).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = "Print the REST API token of an existing account (created on first use)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", help="The account's username.")
        parser.add_argument(
            "--rotate", action="store_true", help="Replace the account's token with a new one."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None or not user.is_active:
            raise CommandError(f"No active account named {options['username']!r}.")
        if options["rotate"]:
            Token.objects.filter(user=user).delete()
        token, _ = Token.objects.get_or_create(user=user)
        self.stdout.write(token.key)
