"""Routes of the crowd app (included at ``crowd/``): platform webhooks, worker messages, payment settling."""

from django.urls import path

from crowd import views

app_name = "crowd"

urlpatterns = [
    path("webhooks/<str:platform>/", views.platform_webhook, name="platform-webhook"),
    path("batches/<int:pk>/notify/", views.batch_notify, name="batch-notify"),
    path("payments/<int:pk>/resolve/", views.payment_resolve, name="payment-resolve"),
]
