"""Django admin for workers, qualifications, the payment ledger (read-only) and batches' platform state."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from crowd.models import BatchPlatformState, Consent, Invite, Payment, Qualification, WebhookEvent, Worker


class QualificationInline(admin.TabularInline):
    model = Qualification
    extra = 0


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ("pseudonym", "platform", "platform_id", "is_expert", "blocked", "created")
    list_filter = ("platform", "is_expert", "blocked")
    search_fields = ("pseudonym", "platform_id")
    readonly_fields = ("pseudonym",)
    raw_id_fields = ("user",)
    inlines = [QualificationInline]


@admin.register(BatchPlatformState)
class BatchPlatformStateAdmin(admin.ModelAdmin):
    """The platform references are written by the life cycle; the attention mark and an unfinished
    publish's marks stay editable for a researcher who checked the platform."""

    list_display = ("batch", "publish_started", "publish_ref", "stopped_for_good", "attention_reason")
    list_filter = ("stopped_for_good",)
    readonly_fields = ("batch", "published", "stopped_for_good")
    raw_id_fields = ("batch",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Payment)
class PaymentAdmin(admin.ModelAdmin):
    """The ledger is written by the payment code only; the admin shows it."""

    list_display = ("id", "batch", "worker", "kind", "amount_cents", "status", "platform_ref", "created")
    list_filter = ("kind", "status", "batch")
    search_fields = ("idempotency_key", "platform_ref")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Invite)
class InviteAdmin(admin.ModelAdmin):
    """Invites are created from the batch page or ``invite_workers`` (the link is shown only then)."""

    list_display = ("id", "label", "batch", "is_expert", "created", "expires_at", "used_at", "worker")
    list_filter = ("is_expert", "batch")
    readonly_fields = ("token_sha256", "worker", "used_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Consent)
class ConsentAdmin(admin.ModelAdmin):
    list_display = ("worker", "batch", "given_at")
    list_filter = ("batch",)


@admin.register(WebhookEvent)
class WebhookEventAdmin(admin.ModelAdmin):
    list_display = ("provider", "event_id", "received_at")
    list_filter = ("provider",)
