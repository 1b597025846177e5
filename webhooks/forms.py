"""The endpoint form of the console's Webhooks page (the API's serializer applies the same checks)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from webhooks.addresses import AddressRefused, check_url
from webhooks.models import Endpoint, EventType

SUBSCRIBABLE = [(value, label) for value, label in EventType.choices if value != EventType.PING]


def clean_endpoint_url(url: str) -> str:
    """Refuse a URL the delivery job would refuse (non-http(s), credentials, a private literal address).

    Raises:
        forms.ValidationError: with code ``address``.
    """
    try:
        check_url(url, allow_private=settings.WEBHOOK_ALLOW_PRIVATE, resolve=False)
    except AddressRefused as exc:
        raise forms.ValidationError(str(exc), code="address") from exc
    return url


class EndpointForm(forms.ModelForm):
    """Register or change an endpoint: its URL, a description and the events it receives."""

    url = forms.URLField(max_length=500, assume_scheme="https")
    events = forms.MultipleChoiceField(choices=SUBSCRIBABLE, widget=forms.CheckboxSelectMultiple)

    class Meta:
        model = Endpoint
        fields = ["url", "description", "events", "active"]

    def clean_url(self) -> str:
        return clean_endpoint_url(self.cleaned_data["url"])

    def clean_events(self) -> list[Any]:
        return sorted(set(self.cleaned_data["events"]))
